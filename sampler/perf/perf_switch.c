// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * perf_switch.c - context-switch events per (thread, cpu): a sample and
 * a switch record at each switch out, a switch record at each switch
 * in, merged in time order.
 *
 * At a switch out the kernel writes the sample (the event
 * context-switches fires first) and then the PERF_RECORD_SWITCH, one
 * after the other into the ring of the cpu the thread leaves, so the
 * sample waits in that cpu's slot for the record that says whether the
 * thread was preempted.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/perf/perf.h"
#include "sampler/perf/perf_ring.h"
#include "sampler/perf/perf_switch.h"
#include "sampler/perf/timeq.h"

/* A sample's copy of the stack, as the cpu kind's: 8 KiB reached _start
 * in all but a few samples of the programs measured (perf.c). */
#define STACK_BYTES 8192
/*
 * Each switch out writes ~8.3 KiB (the stack, mostly): at 10,000 a
 * second a ring of 16 MiB holds 400 ms of them on two cpus, what the
 * daemon may be kept off its CPU on a machine loaded 15 times over (it
 * was, 80 ms at a time, and 8 MiB rings lost records). Within a budget
 * for all the cpus, as uprobe_rec.c's.
 */
#define RING_PAGES_MAX 4096	/* 16 MiB a cpu */
#define RING_BUDGET_PAGES 16384	/* 64 MiB of rings on a big machine */
#define QUEUED_MAX (64u << 20)	/* events waiting to come out in order */

#define SAMPLE_TYPE (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		     PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)

/* What sample_id_all puts after every other record, for SAMPLE_TYPE
 * (CALLCHAIN adds nothing to it). */
struct id_trailer {
	uint32_t pid, tid;
	uint64_t time;
};

/* PERF_RECORD_FORK and _EXIT, before their trailer. */
struct task_body {
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

/* A cpu's last switch-out sample, until its switch record. */
struct slot {
	bool full;
	struct perf_sample s;
	uint8_t stack[STACK_BYTES];
};

struct perf_switch {
	pid_t pid;
	struct perf_rec *rec;
	int ncpu;
	struct slot *slots;		/* ncpu */
	uint64_t *last_time;		/* ncpu: queued so far */
	struct timeq *q;		/* a source per cpu */
	uint64_t sample_type;		/* SAMPLE_TYPE, maybe CALLCHAIN */
	uint64_t read_ns, safe_ns;	/* see perf_switch_poll() */
	uint64_t outs, dropped;
	perf_switch_out_cb cb;		/* during a poll */
	void *cb_arg;
};

static void init_attr(struct perf_event_attr *a, bool inherit_thread,
		      bool chain)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a->sample_period = 1;	/* every switch out */
	a->sample_type = SAMPLE_TYPE;
	/* Where in the kernel it sleeps: unwound by the kernel (ORC) at
	 * the switch, as perf -g does; the user part is ours. */
	if (chain) {
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->exclude_callchain_user = 1;
		a->sample_max_stack = PERF_KERNEL_FRAMES;
	}
	a->sample_regs_user = perf_user_regs_mask();
	a->sample_stack_user = STACK_BYTES;
	a->context_switch = 1;
	a->task = 1;
	a->sample_id_all = 1;
	/* The threads made meanwhile inherit them; child processes do not
	 * (before 5.13 they do: their records are told apart by pid). */
	a->inherit = 1;
	a->inherit_thread = inherit_thread;
	a->remove_on_exec = inherit_thread;
	/* The event fires in the scheduler: a kernel-mode event. */
	a->exclude_kernel = 0;
	a->exclude_hv = 1;
	a->watermark = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

int perf_switch_probe(pid_t pid)
{
	struct perf_event_attr attr;
	int fd;

	init_attr(&attr, false, false);
	attr.inherit = 0;
	fd = perf_ring_event_open(&attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/*
 * The most the kernel allows, first: the callchain (refused where
 * perf_event_max_stack is below ours, EOVERFLOW), inherit_thread (EINVAL
 * before 5.13).
 */
static int open_events(struct perf_switch *w, bool chain, size_t pages)
{
	struct perf_event_attr attr;
	int ret = -EINVAL;

	for (int c = chain; c >= 0; c--) {
		for (int it = 1; it >= 0; it--) {
			init_attr(&attr, it, c);
			ret = perf_open_events(w->pid, &attr, pages, &w->rec);
			if (ret != -EINVAL)
				break;
		}
		if (ret != -EOVERFLOW && ret != -EINVAL)
			break;
	}
	w->sample_type = attr.sample_type;
	return ret;
}

int perf_switch_open(pid_t pid, bool kernel_frames, struct perf_switch **out)
{
	size_t pages = PERF_RING_PAGES_MIN, ncpu = get_nprocs_conf();
	struct perf_switch *w;
	int ret;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->pid = pid;
	while (pages * 2 <= RING_BUDGET_PAGES / ncpu && pages < RING_PAGES_MAX)
		pages *= 2;
	ret = open_events(w, kernel_frames, pages);
	if (!ret) {
		w->ncpu = perf_ncpu(w->rec);
		w->slots = calloc(w->ncpu, sizeof(*w->slots));
		w->last_time = calloc(w->ncpu, sizeof(*w->last_time));
		if (!w->slots || !w->last_time)
			ret = -ENOMEM;
	}
	if (!ret)
		ret = timeq_new(w->ncpu, QUEUED_MAX, &w->q);
	if (ret) {
		perf_switch_close(w);
		return ret;
	}
	w->read_ns = w->safe_ns = now_ns();
	*out = w;
	return 0;
}

bool perf_switch_kernel_frames(const struct perf_switch *w)
{
	return w->sample_type & PERF_SAMPLE_CALLCHAIN;
}

void perf_switch_close(struct perf_switch *w)
{
	if (!w)
		return;
	perf_close(w->rec);
	timeq_free(w->q);
	free(w->slots);
	free(w->last_time);
	free(w);
}

static void queue(struct perf_switch *w, int cpu,
		  const struct perf_switch_ev *ev)
{
	/* A cpu's records are written in time order; a clock that went
	 * back must not unsort its queue. */
	uint64_t t = ev->time > w->last_time[cpu] ? ev->time :
		     w->last_time[cpu];
	struct perf_switch_ev *e = timeq_reserve(w->q, cpu, t, sizeof(*e));

	if (!e) {
		w->dropped++;
		return;
	}
	*e = *ev;
	w->last_time[cpu] = t;
}

static void take_sample(struct perf_switch *w, int cpu, const void *body,
			size_t len)
{
	struct slot *sl = &w->slots[cpu];
	uint64_t id;

	sl->full = false;
	if (perf_parse_sample(w->sample_type, body, len, &sl->s, &id) ||
	    sl->s.pid != (uint32_t)w->pid)
		return;
	if (sl->s.stack_len > sizeof(sl->stack))
		sl->s.stack_len = sizeof(sl->stack);
	memcpy(sl->stack, sl->s.stack, sl->s.stack_len);
	sl->s.stack = sl->stack;
	sl->full = true;
}

static void take_switch(struct perf_switch *w, int cpu, uint16_t misc,
			const struct id_trailer *id)
{
	struct perf_switch_ev ev = { .tid = id->tid, .time = id->time };
	struct slot *sl = &w->slots[cpu];
	const struct perf_sample *s = NULL;

	if (!(misc & PERF_RECORD_MISC_SWITCH_OUT)) {
		ev.type = PSW_IN;
		queue(w, cpu, &ev);
		return;
	}
	ev.type = PSW_OUT;
	ev.preempted = misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
	if (sl->full && sl->s.tid == id->tid)
		s = &sl->s;
	sl->full = false;
	w->outs++;
	ev.token = w->cb(id->tid, ev.preempted, s, w->cb_arg);
	queue(w, cpu, &ev);
}

static void take_task(struct perf_switch *w, int cpu, uint32_t type,
		      const void *body, size_t len, const struct id_trailer *id)
{
	struct perf_switch_ev ev = { .time = id->time };
	struct task_body t;

	if (len < sizeof(t) + sizeof(*id))
		return;
	memcpy(&t, body, sizeof(t));
	if (t.pid != (uint32_t)w->pid)	/* a child process */
		return;
	ev.type = type == PERF_RECORD_FORK ? PSW_START : PSW_END;
	ev.tid = t.tid;
	queue(w, cpu, &ev);
}

static void take(int cpu, const struct perf_event_header *h, const void *body,
		 size_t len, void *arg)
{
	struct perf_switch *w = arg;
	struct id_trailer id;

	if (cpu < 0 || cpu >= w->ncpu)
		return;
	if (h->type == PERF_RECORD_SAMPLE) {
		take_sample(w, cpu, body, len);
		return;
	}
	if (len < sizeof(id))
		return;
	memcpy(&id, (const uint8_t *)body + len - sizeof(id), sizeof(id));
	if (h->type == PERF_RECORD_SWITCH && id.pid == (uint32_t)w->pid)
		take_switch(w, cpu, h->misc, &id);
	else if (h->type == PERF_RECORD_FORK || h->type == PERF_RECORD_EXIT)
		take_task(w, cpu, h->type, body, len, &id);
}

/* A record stamped before the previous drain began was complete in its
 * ring by the time this one read it. */
int perf_switch_poll(struct perf_switch *w, int timeout_ms,
		     perf_switch_out_cb cb, void *arg)
{
	uint64_t t;
	int ret;

	w->cb = cb;
	w->cb_arg = arg;
	t = now_ns();
	ret = perf_poll_records(w->rec, timeout_ms, take, w);
	w->safe_ns = w->read_ns;
	w->read_ns = t;
	return ret;
}

bool perf_switch_next(struct perf_switch *w, bool all,
		      struct perf_switch_ev *ev)
{
	const struct perf_switch_ev *e;
	int src;

	e = timeq_oldest(w->q, all ? UINT64_MAX : w->safe_ns, &src);
	if (!e)
		return false;
	*ev = *e;
	timeq_pop(w->q, src);
	return true;
}

void perf_switch_counts(const struct perf_switch *w, uint64_t *outs,
			uint64_t *lost)
{
	*outs = w->outs;
	*lost = perf_lost(w->rec) + w->dropped;
}
