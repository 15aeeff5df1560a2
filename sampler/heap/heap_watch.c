// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * heap_watch.c - was the target harmed by the agent just loaded or armed
 * in it? The signs and their rules are in heap_watch.h.
 *
 * The owner (heap.c's consumer thread, or a session, under the agent's
 * lock) polls; this file keeps a perf reader of the target's threads and
 * what it counted. Nothing here stops or touches the target.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "sampler/clock.h"
#include "sampler/heap/heap_watch.h"
#include "sampler/log.h"
#include "sampler/perf/perf.h"
#include "sampler/proc.h"

#define SPIN_MIN 50		/* samples before spinning is judged */
#define SPIN_SHARE 90		/* percent of them in the agent */
#define WATCH_HZ 100
#define WATCH_RING_PAGES 8

struct heap_watch {
	pid_t pid;
	uint64_t lo, hi;	/* the agent's code */
	uint64_t start_ns, end_ns;
	uint64_t records0;	/* the agent's records when counting began */
	struct perf_rec *perf;	/* NULL: perf refused */
	unsigned samples, in_agent;
	enum heap_watch_verdict verdict;
	char why[160];
};

bool heap_watch_crashed(int status)
{
	if (!WIFSIGNALED(status))
		return false;
	if (WCOREDUMP(status))
		return true;
	switch (WTERMSIG(status)) {
	case SIGSEGV: case SIGBUS: case SIGILL: case SIGFPE: case SIGABRT:
	case SIGSYS: case SIGTRAP:
		return true;
	}
	return false;
}

bool heap_watch_spinning(unsigned samples, unsigned in_agent,
			 uint64_t records_meanwhile)
{
	return samples >= SPIN_MIN && !records_meanwhile &&
	       (uint64_t)in_agent * 100 >= (uint64_t)samples * SPIN_SHARE;
}

int heap_watch_agent_span(pid_t pid, uint64_t *lo, uint64_t *hi)
{
	char path[64], line[512];
	unsigned long long s, e;
	FILE *f;

	*lo = UINT64_MAX;
	*hi = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f))
		if ((strstr(line, "/memfd:proffs-heap ") ||
		     strstr(line, "/libproffs-heap.so")) &&
		    sscanf(line, "%llx-%llx", &s, &e) == 2) {
			if (s < *lo)
				*lo = s;
			if (e > *hi)
				*hi = e;
		}
	fclose(f);
	return *hi ? 0 : -ENOENT;
}

static int open_perf(struct heap_watch *w)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = WATCH_HZ,
		.freq = 1,
		.sample_type = PERF_SAMPLE_IP,
		.inherit = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
		.wakeup_events = 1,
	};

	return perf_open_events(w->pid, &a, WATCH_RING_PAGES, &w->perf);
}

int heap_watch_start(pid_t pid, uint64_t records, struct heap_watch **out)
{
	struct heap_watch *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return -ENOMEM;
	w->pid = pid;
	w->records0 = records;
	w->start_ns = now_ns();
	w->end_ns = w->start_ns + HEAP_WATCH_MS * 1000000ull;
	ret = heap_watch_agent_span(pid, &w->lo, &w->hi);
	if (ret == -ESRCH) {
		free(w);
		return ret;
	}
	/* Without the agent's span or perf, only deaths are seen. */
	if (!ret && open_perf(w))
		w->perf = NULL;
	*out = w;
	return 0;
}

static void on_record(int cpu, const struct perf_event_header *h,
		      const void *body, size_t len, void *arg)
{
	struct heap_watch *w = arg;
	uint64_t ip;

	(void)cpu;
	if (h->type != PERF_RECORD_SAMPLE || len < sizeof(ip))
		return;
	memcpy(&ip, body, sizeof(ip));
	w->samples++;
	if (ip >= w->lo && ip < w->hi)
		w->in_agent++;
}

/*
 * The wait status of a zombie pid (its exit_code, the 52nd field of
 * /proc/PID/stat, there while the parent has not reaped it); -ESRCH when
 * it is gone, -EAGAIN when it is not a zombie.
 */
static int zombie_status(pid_t pid, int *status)
{
	char buf[2048], *p, *save = NULL;
	size_t len;
	int field = 3, ret;

	ret = proc_read(pid, "stat", buf, sizeof(buf) - 1, &len);
	if (ret)
		return ret == -ENOENT ? -ESRCH : ret;
	buf[len] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -EINVAL;
	p = strtok_r(p + 2, " \n", &save);
	if (!p)
		return -EINVAL;
	if (*p != 'Z' && *p != 'X')
		return -EAGAIN;
	while ((p = strtok_r(NULL, " \n", &save)) && ++field < 52)
		;
	if (!p)
		return -EINVAL;	/* a kernel before 3.5 */
	*status = atoi(p);
	return 0;
}

static void set(struct heap_watch *w, enum heap_watch_verdict v)
{
	w->verdict = v;
	perf_close(w->perf);
	w->perf = NULL;
}

static void judge_exit(struct heap_watch *w)
{
	int status, ret = zombie_status(w->pid, &status);

	if (ret && ret != -ESRCH)
		return;		/* alive, or not to be read */
	if (ret) {
		snprintf(w->why, sizeof(w->why), "it exited (reaped before "
			 "its exit status could be read)");
		set(w, HEAP_WATCH_EXITED);
	} else if (heap_watch_crashed(status)) {
		snprintf(w->why, sizeof(w->why), "it died of SIG%s%s",
			 sigabbrev_np(WTERMSIG(status)) ?
			 sigabbrev_np(WTERMSIG(status)) : "?",
			 WCOREDUMP(status) ? " (core dumped)" : "");
		set(w, HEAP_WATCH_HARMED);
	} else if (WIFSIGNALED(status)) {
		snprintf(w->why, sizeof(w->why), "it was killed by SIG%s",
			 sigabbrev_np(WTERMSIG(status)) ?
			 sigabbrev_np(WTERMSIG(status)) : "?");
		set(w, HEAP_WATCH_EXITED);
	} else {
		snprintf(w->why, sizeof(w->why), "it exited with status %d",
			 WEXITSTATUS(status));
		set(w, HEAP_WATCH_EXITED);
	}
}

enum heap_watch_verdict heap_watch_poll(struct heap_watch *w,
					uint64_t records, char *why,
					size_t len)
{
	if (w->verdict == HEAP_WATCH_FINE) {
		judge_exit(w);
		if (w->verdict == HEAP_WATCH_FINE && w->perf)
			perf_poll_records(w->perf, 0, on_record, w);
		/* A record written: the agent works. Count anew from here
		 * (it could still go round in a loop later). */
		if (records != w->records0) {
			w->records0 = records;
			w->samples = w->in_agent = 0;
		}
		if (w->verdict == HEAP_WATCH_FINE &&
		    heap_watch_spinning(w->samples, w->in_agent, 0)) {
			snprintf(w->why, sizeof(w->why), "its threads spin in "
				 "the agent (%u of %u cpu samples there, no "
				 "record written)", w->in_agent, w->samples);
			set(w, HEAP_WATCH_HARMED);
		}
		if (w->verdict == HEAP_WATCH_FINE && now_ns() >= w->end_ns)
			set(w, HEAP_WATCH_OVER);
	}
	if (why && len)
		snprintf(why, len, "%s", w->why);
	return w->verdict;
}

void heap_watch_free(struct heap_watch *w)
{
	if (!w)
		return;
	perf_close(w->perf);
	free(w);
}

bool heap_watch_check(struct heap_watch **w, uint64_t records, char *harm,
		      size_t len)
{
	enum heap_watch_verdict v;
	double s = (now_ns() - (*w)->start_ns) / 1e9;
	char why[160];
	pid_t pid = (*w)->pid;

	v = heap_watch_poll(*w, records, why, sizeof(why));
	if (v == HEAP_WATCH_FINE)
		return false;
	heap_watch_free(*w);
	*w = NULL;
	if (v == HEAP_WATCH_EXITED)
		pr_notice("heap: pid %d: %s, %.2f s after the agent was "
			  "loaded", (int)pid, why, s);
	if (v != HEAP_WATCH_HARMED)
		return false;
	snprintf(harm, len, "%s, %.2f s after the agent was loaded", why, s);
	pr_err("heap: pid %d: harmed by the heap agent: %s", (int)pid, harm);
	return true;
}
