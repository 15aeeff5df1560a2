// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uprobe_rec.c - perf events on tracefs uprobe events, per (event,
 * thread, cpu), rings per cpu, a reader thread into time queues.
 *
 * Locks: lock guards the queues, the counts and the drain times; a
 * queued record stays in place until popped, so the consumer reads it
 * unlocked while the reader appends.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "sampler/grow.h"
#include "sampler/clock.h"
#include "sampler/perf/perf.h"
#include "sampler/perf/perf_ring.h"
#include "sampler/proc.h"
#include "sampler/perf/timeq.h"
#include "sampler/heap/uprobe/uprobe_rec.h"

#define POLL_MS 5
#define RING_PAGES_MAX 16384	/* 64 MiB a cpu: ~7,600 8 KiB stacks */
#define RING_BUDGET_PAGES 32768	/* 128 MiB of rings on a big machine */
#define QUEUED_MAX (256u << 20)	/* records waiting for the consumer */
#define RESCANS 5		/* thread list re-reads while opening */
#define MAX_EVENTS 8
#define READER_NICE -10

#define BASE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | \
		   PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER)

/* A record in the queues, parsed; 8-aligned. */
struct rec {
	uint32_t tid;
	uint16_t event;
	uint16_t pad;
	uint64_t stack_len;
	struct unwind_regs regs;
	uint8_t stack[];
};

struct id_event {
	uint64_t id;
	int event;
};

struct uprobe_rec {
	pid_t pid;
	int ncpu;
	struct uprobe_rec_event ev[MAX_EVENTS];
	int nev;
	bool plain_inherit;	/* a kernel without inherit_thread */
	size_t ring_pages;
	struct perf_ring *rings;	/* ncpu */
	struct pollfd *pfds;
	int npfds;
	int *fds;
	size_t nfds, capfds;
	struct id_event *ids;	/* sorted by id once opened */
	size_t nids, capids;
	pid_t *tids;		/* threads given events of their own */
	size_t ntids, captids;

	pthread_mutex_t lock;
	pthread_t reader;
	bool reading, stopped;
	_Atomic bool quit;
	struct timeq *q;	/* a source per cpu */
	uint64_t read_ns;	/* when the last drain began */
	uint64_t safe_ns;	/* records stamped up to it are queued */
	uint64_t records, lost;
	int head_src;		/* of the record peeked */
};

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	return grow_array(v, cap, need, elem, 64);
}

static uint64_t sample_type(const struct uprobe_rec_event *e)
{
	return BASE_TYPE | (e->stack_bytes ? PERF_SAMPLE_STACK_USER : 0);
}

/* ---- opening ---- */

static void init_attr(const struct uprobe_rec *r, int e,
		      struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = r->ev[e].tp_id;
	a->sample_period = 1;
	a->sample_type = sample_type(&r->ev[e]);
	a->sample_regs_user = perf_user_regs_mask();
	a->sample_stack_user = r->ev[e].stack_bytes;
	/* New threads inherit the events from their creator; child
	 * processes do not (they are not the target), and an exec ends
	 * them (its objects are other files). */
	a->inherit = 1;
	a->inherit_thread = !r->plain_inherit;
	a->remove_on_exec = !r->plain_inherit;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->watermark = 1;
	a->wakeup_watermark = r->ring_pages * sysconf(_SC_PAGESIZE) / 4;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

/* The first event of a cpu: its ring. Not even the smallest ring could
 * be mapped: -ENOMEM. Not -EPERM, which heap_uprobe.c reports as lacking
 * root, which it has checked already (heap_uprobe_allowed()). */
static int map_ring(struct uprobe_rec *r, struct perf_ring *g, int fd)
{
	int ret = perf_ring_map(fd, &r->ring_pages, g);

	return ret == -ENOBUFS ? -ENOMEM : ret;
}

static int open_one(struct uprobe_rec *r, int e, pid_t tid, int cpu)
{
	struct perf_event_attr attr;
	struct perf_ring *g = &r->rings[cpu];
	uint64_t id;
	int fd;

	init_attr(r, e, &attr);
	fd = perf_ring_event_open(&attr, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd == -EINVAL && !r->plain_inherit && !r->nfds) {
		r->plain_inherit = true;	/* before 5.13 */
		return open_one(r, e, tid, cpu);
	}
	if (fd < 0)
		return fd;
	if (grow((void **)&r->fds, &r->capfds, r->nfds + 1, sizeof(int)) ||
	    grow((void **)&r->ids, &r->capids, r->nids + 1,
		 sizeof(*r->ids))) {
		close(fd);
		return -ENOMEM;
	}
	r->fds[r->nfds++] = fd;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id))
		return -errno;
	r->ids[r->nids++] = (struct id_event){ .id = id, .event = e };
	if (g->fd < 0)
		return map_ring(r, g, fd);
	return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, g->fd) ? -errno : 0;
}

static int open_thread(struct uprobe_rec *r, pid_t tid)
{
	int opened = 0, ret = 0;

	for (int cpu = 0; cpu < r->ncpu; cpu++) {
		for (int e = 0; e < r->nev && !ret; e++)
			if (r->ev[e].tp_id)
				ret = open_one(r, e, tid, cpu);
		if (ret == -ENODEV || (ret == -EINVAL && opened)) {
			ret = 0;	/* an offline cpu */
			continue;
		}
		if (ret)
			return ret;
		opened++;
	}
	return opened ? 0 : -ENODEV;
}

static bool has_tid(const struct uprobe_rec *r, pid_t tid)
{
	for (size_t i = 0; i < r->ntids; i++)
		if (r->tids[i] == tid)
			return true;
	return false;
}

/* Events for every thread; again for threads a thread made before its
 * own events were there to be inherited. */
static int open_all(struct uprobe_rec *r)
{
	for (int round = 0; round < RESCANS; round++) {
		size_t n, added = 0;
		pid_t *tids;
		int ret;

		ret = proc_tasks(r->pid, &tids, &n);
		if (ret)
			return ret == -ENOENT ? -ESRCH : ret;
		for (size_t i = 0; i < n && !ret; i++) {
			if (has_tid(r, tids[i]))
				continue;
			ret = open_thread(r, tids[i]);
			if (ret == -ESRCH) {	/* it ended meanwhile */
				ret = 0;
				continue;
			}
			if (!ret)
				ret = grow((void **)&r->tids, &r->captids,
					   r->ntids + 1, sizeof(pid_t));
			if (!ret) {
				r->tids[r->ntids++] = tids[i];
				added++;
			}
		}
		free(tids);
		if (ret)
			return ret;
		if (!r->ntids)
			return -ESRCH;
		if (!added)
			break;
	}
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	const struct id_event *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* ---- reading ---- */

/* What take() needs besides the sample: the ring's cpu is its queue. */
struct take_ctx {
	struct uprobe_rec *r;
	int cpu;
};

/* A sample of a cpu's ring, parsed into its queue. Called with lock. */
static void take(const void *body, size_t len, void *arg)
{
	const struct take_ctx *c = arg;
	struct uprobe_rec *r = c->r;
	struct id_event key, *ie;
	struct perf_sample s;
	struct rec *rec;

	if (len < sizeof(key.id))
		return;
	memcpy(&key.id, body, sizeof(key.id));	/* IDENTIFIER: first */
	ie = bsearch(&key, r->ids, r->nids, sizeof(*r->ids), cmp_id);
	if (!ie || perf_parse_sample(sample_type(&r->ev[ie->event]), body,
				     len, &s, &key.id))
		return;
	if (s.pid != (uint32_t)r->pid)	/* a child, on an older kernel */
		return;
	r->records++;
	rec = timeq_reserve(r->q, c->cpu, s.time, sizeof(*rec) + s.stack_len);
	if (!rec) {
		r->lost++;
		return;
	}
	rec->tid = s.tid;
	rec->event = ie->event;
	rec->pad = 0;
	rec->stack_len = s.stack_len;
	rec->regs = s.regs;
	if (s.stack_len)	/* return probes carry no stack (NULL) */
		memcpy(rec->stack, s.stack, s.stack_len);
}

/* One drain of every ring. A record stamped before the previous drain
 * began was complete in its ring by the time this one read it. */
static void drain(struct uprobe_rec *r)
{
	uint64_t t = now_ns();

	pthread_mutex_lock(&r->lock);
	for (int cpu = 0; cpu < r->ncpu; cpu++) {
		struct take_ctx c = { .r = r, .cpu = cpu };

		if (r->rings[cpu].base)
			perf_ring_drain(&r->rings[cpu], take, &c, &r->lost);
	}
	r->safe_ns = r->read_ns;
	r->read_ns = t;
	pthread_mutex_unlock(&r->lock);
}

static void *reader_main(void *arg)
{
	struct uprobe_rec *r = arg;

	/* Ahead of the consumer, which may unwind a backlog on the cpu the
	 * reader needs while a burst fills the rings; when allowed. */
	setpriority(PRIO_PROCESS, syscall(SYS_gettid), READER_NICE);

	while (!atomic_load(&r->quit)) {
		poll(r->pfds, r->npfds, POLL_MS);
		drain(r);
	}
	return NULL;
}

/* ---- the interface ---- */

static int start(struct uprobe_rec *r)
{
	size_t pages = RING_BUDGET_PAGES / r->ncpu;
	int ret;

	r->ring_pages = PERF_RING_PAGES_MIN;
	while (r->ring_pages * 2 <= pages && r->ring_pages < RING_PAGES_MAX)
		r->ring_pages *= 2;
	r->rings = calloc(r->ncpu, sizeof(*r->rings));
	r->pfds = calloc(r->ncpu, sizeof(*r->pfds));
	if (!r->rings || !r->pfds)
		return -ENOMEM;
	for (int cpu = 0; cpu < r->ncpu; cpu++)
		perf_ring_init(&r->rings[cpu]);
	ret = timeq_new(r->ncpu, QUEUED_MAX, &r->q);
	if (!ret)
		ret = open_all(r);
	if (ret)
		return ret;
	for (int cpu = 0; cpu < r->ncpu; cpu++)
		if (r->rings[cpu].fd >= 0) {
			r->pfds[r->npfds].fd = r->rings[cpu].fd;
			r->pfds[r->npfds++].events = POLLIN;
		}
	qsort(r->ids, r->nids, sizeof(*r->ids), cmp_id);
	r->read_ns = r->safe_ns = now_ns();
	ret = -pthread_create(&r->reader, NULL, reader_main, r);
	r->reading = !ret;
	return ret;
}

int uprobe_rec_open(pid_t pid, const struct uprobe_rec_event *events,
		    int nevents, struct uprobe_rec **out)
{
	struct uprobe_rec *r;
	int ret;

	if (nevents <= 0 || nevents > MAX_EVENTS)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->pid = pid;
	r->ncpu = get_nprocs_conf();
	memcpy(r->ev, events, nevents * sizeof(*events));
	r->nev = nevents;
	pthread_mutex_init(&r->lock, NULL);
	ret = start(r);
	if (ret) {
		uprobe_rec_free(r);
		return ret;
	}
	*out = r;
	return 0;
}

bool uprobe_rec_peek(struct uprobe_rec *r, bool all,
		     struct uprobe_rec_sample *s)
{
	const struct rec *rec;

	pthread_mutex_lock(&r->lock);
	rec = timeq_oldest(r->q, all ? UINT64_MAX : r->safe_ns, &r->head_src);
	pthread_mutex_unlock(&r->lock);
	if (!rec)
		return false;
	*s = (struct uprobe_rec_sample){
		.event = rec->event, .tid = rec->tid, .regs = rec->regs,
		.stack = rec->stack, .stack_len = rec->stack_len,
	};
	return true;
}

void uprobe_rec_pop(struct uprobe_rec *r)
{
	pthread_mutex_lock(&r->lock);
	timeq_pop(r->q, r->head_src);
	pthread_mutex_unlock(&r->lock);
}

void uprobe_rec_counts(struct uprobe_rec *r, uint64_t *records,
		       uint64_t *lost)
{
	pthread_mutex_lock(&r->lock);
	*records = r->records;
	*lost = r->lost;
	pthread_mutex_unlock(&r->lock);
}

void uprobe_rec_size(const struct uprobe_rec *r, size_t *events,
		     size_t *threads)
{
	*events = r->nids;
	*threads = r->ntids;
}

void uprobe_rec_stop(struct uprobe_rec *r)
{
	if (r->stopped)
		return;
	r->stopped = true;
	if (r->reading) {
		atomic_store(&r->quit, true);
		pthread_join(r->reader, NULL);
		r->reading = false;
	}
	/* Disabled: every record written; read; then closed, which is what
	 * removes the breakpoints. */
	for (size_t i = 0; i < r->nfds; i++)
		ioctl(r->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	if (r->q && r->rings)
		drain(r);
	for (size_t i = 0; i < r->nfds; i++)
		close(r->fds[i]);
	r->nfds = 0;
	for (int cpu = 0; r->rings && cpu < r->ncpu; cpu++)
		perf_ring_unmap(&r->rings[cpu]);
}

void uprobe_rec_free(struct uprobe_rec *r)
{
	if (!r)
		return;
	uprobe_rec_stop(r);
	timeq_free(r->q);
	pthread_mutex_destroy(&r->lock);
	free(r->rings);
	free(r->pfds);
	free(r->fds);
	free(r->ids);
	free(r->tids);
	free(r);
}
