// SPDX-License-Identifier: GPL-2.0-or-later
/* perf.c - cpu-clock events per (thread, cpu), one ring per cpu. */
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/log.h"
#include "sampler/perf/perf.h"
#include "sampler/perf/perf_ring.h"
#include "sampler/proc.h"

/*
 * perf's default. The kernel copies this much in the target's context at
 * every sample, up to the end of the stack or its first page never
 * touched, and that copy is most of what sampling costs the target: at
 * 999 Hz on one thread, 16 KiB slowed it by ~6% against perf's ~4%,
 * 8 KiB by ~4%; a 24 KiB deep stack cost ~1 us a sample per KiB copied
 * (docs/performance.md). 8 KiB still reached _start in 100% of python3's
 * samples and 99.9% of cc1's (100% with 16 KiB); deeper stacks are read
 * on from the live thread when a sample needs it (livestack.h).
 */
#define STACK_BYTES 8192
#define RING_PAGES_MAX 512
#define RESCANS 5		/* thread list re-reads while opening */

/* perf's x86 register indices, in the order a sample lists them. */
static const enum unwind_reg perf_reg_order[] = {
	UREG_RAX, UREG_RBX, UREG_RCX, UREG_RDX, UREG_RSI, UREG_RDI,
	UREG_RBP, UREG_RSP, UREG_RIP,
	UREG_R8, UREG_R9, UREG_R10, UREG_R11, UREG_R12, UREG_R13,
	UREG_R14, UREG_R15,
};
#define PERF_REGS_MASK (0x1ffull | (0xffull << 16))
#define NREGS (sizeof(perf_reg_order) / sizeof(perf_reg_order[0]))

struct perf_rec {
	int ncpu;
	size_t ring_pages;
	struct perf_ring *rings;	/* ncpu */
	int *fds;
	size_t nfds, capfds;
	struct pollfd *pfds;	/* one per ring with a buffer */
	int npfds;
	uint64_t lost;
	bool want_chain;	/* kernel callchains asked for */
	bool chain;		/* samples carry their kernel callchain */
	bool eager;		/* wake the reader at every sample */
	bool want_user;		/* user callchains asked for */
	bool user;		/* samples carry their user callchain */
};

/* What the kernel may give: kernel samples, their kernel callchain. */
struct reach {
	bool kernel, chain;
	bool user;		/* the user part of the callchain too */
};

static void init_attr(struct perf_event_attr *a, unsigned hz,
		      struct reach reach)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	/* A period, not a frequency: every sample is worth exactly 1/hz s
	 * of cpu time, which is what pprof's cpu/nanoseconds needs. */
	a->sample_period = clock_period_ns(hz);
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER |
			 PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = PERF_REGS_MASK;
	a->sample_stack_user = STACK_BYTES;
	a->inherit = 1;		/* per thread; a CPU's event ignores it */
	/* Time in system calls belongs to the user stack that made them, as
	 * in Go's profiles; only allowed when paranoia permits. Where it
	 * does, the kernel frames above it too: the kernel unwinds them at
	 * the sample (ORC), as for perf -g; the user part is ours. */
	a->exclude_kernel = !reach.kernel;
	if (reach.chain) {
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->exclude_callchain_user = 1;
		a->sample_max_stack = PERF_KERNEL_FRAMES;
	}
	/* The kernel walks the user's frame pointers at the sample: a few
	 * 16-byte copies a sample, for programs whose stacks switch where
	 * our own later read would come too late (Go's system stack). */
	if (reach.user) {
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->exclude_callchain_user = 0;
		a->exclude_callchain_kernel = !reach.chain;
		a->sample_max_stack = (reach.chain ? PERF_KERNEL_FRAMES : 0) +
				      PERF_USER_FRAMES;
	}
	a->exclude_hv = 1;
	a->watermark = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

static int add_fd(struct perf_rec *r, int fd)
{
	if (r->nfds == r->capfds) {
		size_t cap = r->capfds ? 2 * r->capfds : 64;
		int *v = realloc(r->fds, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->fds = v;
		r->capfds = cap;
	}
	r->fds[r->nfds++] = fd;
	return 0;
}

/* The first event of a cpu: its ring. When not even the smallest ring
 * fits the locked-memory limit (perf_event_mlock_kb, RLIMIT_MEMLOCK),
 * the kernel has refused, and perf_open() says so: -EPERM. */
static int map_ring(struct perf_rec *r, struct perf_ring *ring, int fd)
{
	int ret = perf_ring_map(fd, &r->ring_pages, ring);

	return ret == -ENOBUFS ? -EPERM : ret;
}

static int open_one(struct perf_rec *r, struct perf_event_attr *attr,
		    pid_t tid, int cpu)
{
	struct perf_ring *ring = &r->rings[cpu];
	int fd, ret;

	attr->wakeup_watermark = r->eager ? 1 :
				 r->ring_pages * sysconf(_SC_PAGESIZE) / 2;
	fd = perf_ring_event_open(attr, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return fd;
	ret = add_fd(r, fd);
	if (ret) {
		close(fd);
		return ret;
	}
	if (ring->fd < 0)
		return map_ring(r, ring, fd);
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring->fd))
		return -errno;
	return 0;
}

static int open_thread(struct perf_rec *r, struct perf_event_attr *attr,
		       pid_t tid)
{
	int opened = 0, ret = 0;

	for (int cpu = 0; cpu < r->ncpu; cpu++) {
		ret = open_one(r, attr, tid, cpu);
		if (ret == -ENODEV || ret == -EINVAL)
			continue;	/* offline cpu */
		if (ret)
			return ret;
		opened++;
	}
	return opened ? 0 : ret;
}

/*
 * Open with what the kernel allows, the most first: kernel samples with
 * their callchain (when asked), without it (a perf_event_max_stack below
 * ours: EOVERFLOW), user-only samples.
 */
static int open_first(struct perf_rec *r, unsigned hz, pid_t tid,
		      struct perf_event_attr *attr)
{
	static const struct reach tries[] = {
		{ .kernel = true, .chain = true },
		{ .kernel = true },
		{ .kernel = false },
	};
	int ret = -EPERM;

	for (size_t i = r->want_chain ? 0 : 1; i < sizeof(tries) / sizeof(tries[0]);
	     i++) {
		for (int user = r->want_user; user >= 0; user--) {
			struct reach want = tries[i];

			want.user = user;
			init_attr(attr, hz, want);
			ret = open_thread(r, attr, tid);
			if (ret != -EACCES && ret != -EPERM &&
			    ret != -EOVERFLOW &&
			    !(ret == -EINVAL && want.user)) {
				r->chain = !ret && want.chain;
				r->user = !ret && want.user;
				return ret;
			}
		}
	}
	return ret;
}

/* Every thread of pid; attr is set up by the first event opened
 * (*opened 0), and shared by the rest. */
static int open_process(struct perf_rec *r, unsigned hz, pid_t pid,
			struct perf_event_attr *attr, size_t *opened)
{
	pid_t *tids;
	size_t n, before = *opened;
	int ret;

	ret = proc_tasks(pid, &tids, &n);
	if (ret)
		return ret == -ENOENT ? -ESRCH : ret;
	ret = -ESRCH;
	for (size_t i = 0; i < n; i++) {
		ret = *opened ? open_thread(r, attr, tids[i])
			      : open_first(r, hz, tids[i], attr);
		if (ret == -ESRCH)	/* thread ended meanwhile */
			continue;
		if (ret)
			break;
		(*opened)++;
	}
	free(tids);
	if (*opened == before && !ret)
		ret = -ESRCH;
	return *opened > before && ret == -ESRCH ? 0 : ret;
}

static int make_pollfds(struct perf_rec *r)
{
	r->pfds = calloc(r->ncpu, sizeof(*r->pfds));
	if (!r->pfds)
		return -ENOMEM;
	for (int cpu = 0; cpu < r->ncpu; cpu++) {
		if (r->rings[cpu].fd < 0)
			continue;
		r->pfds[r->npfds].fd = r->rings[cpu].fd;
		r->pfds[r->npfds].events = POLLIN;
		r->npfds++;
	}
	return 0;
}

static int rec_new(size_t pages, bool kernel_frames, struct perf_rec **out)
{
	struct perf_rec *r;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->want_chain = kernel_frames;
	r->ncpu = get_nprocs_conf();
	r->ring_pages = pages;
	r->rings = calloc(r->ncpu, sizeof(*r->rings));
	if (!r->rings) {
		free(r);
		return -ENOMEM;
	}
	for (int cpu = 0; cpu < r->ncpu; cpu++)
		perf_ring_init(&r->rings[cpu]);
	*out = r;
	return 0;
}

/* The end of an open: ret 0 hands r out ready to poll, else frees it. */
static int rec_ready(struct perf_rec *r, int ret, struct perf_rec **out)
{
	if (!ret)
		ret = make_pollfds(r);
	if (ret) {
		perf_close(r);
		return ret;
	}
	*out = r;
	return 0;
}

/* How a session wants its events opened. */
enum {
	OPEN_USER_CHAIN = 1u,	/* user frames by frame pointers too */
	OPEN_EAGER = 2u,	/* wake the reader at every sample */
};

static int open_pids(const pid_t *pids, size_t n, unsigned hz,
		     bool kernel_frames, unsigned how, struct perf_rec **out)
{
	struct perf_event_attr attr;
	struct perf_rec *r;
	size_t opened = 0;
	int ret;

	if (!hz)
		return -EINVAL;
	ret = rec_new(RING_PAGES_MAX, kernel_frames, &r);
	if (ret)
		return ret;
	r->want_user = how & OPEN_USER_CHAIN;
	r->eager = how & OPEN_EAGER;
	for (size_t i = 0; i < n; i++) {
		ret = open_process(r, hz, pids[i], &attr, &opened);
		/* Of several, one gone (or not ours) is no failure. */
		if (n > 1 && (ret == -ESRCH || ret == -EACCES ||
			      ret == -EPERM))
			ret = 0;
		if (ret)
			break;
	}
	if (!ret && !opened)
		ret = -ESRCH;
	return rec_ready(r, ret, out);
}

int perf_open(pid_t pid, unsigned hz, bool kernel_frames,
	      struct perf_rec **out)
{
	return open_pids(&pid, 1, hz, kernel_frames, 0, out);
}

const int *perf_fds(const struct perf_rec *r, size_t *n)
{
	*n = r->nfds;
	return r->fds;
}

int perf_open_fp(pid_t pid, unsigned hz, bool kernel_frames,
		 struct perf_rec **out)
{
	return open_pids(&pid, 1, hz, kernel_frames, OPEN_USER_CHAIN, out);
}

int perf_open_eager(pid_t pid, unsigned hz, bool kernel_frames,
		    struct perf_rec **out)
{
	return open_pids(&pid, 1, hz, kernel_frames, OPEN_EAGER, out);
}

int perf_open_pids(const pid_t *pids, size_t n, unsigned hz,
		   bool kernel_frames, struct perf_rec **out)
{
	return open_pids(pids, n, hz, kernel_frames, 0, out);
}

int perf_open_system(unsigned hz, bool kernel_frames, struct perf_rec **out)
{
	struct perf_event_attr attr;
	struct perf_rec *r;
	int ret;

	if (!hz)
		return -EINVAL;
	ret = rec_new(RING_PAGES_MAX, kernel_frames, &r);
	if (ret)
		return ret;
	ret = open_first(r, hz, -1, &attr);
	return rec_ready(r, ret, out);
}

static bool has_tid(const pid_t *tids, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/*
 * Events of attr for every thread of pid; again for the threads a thread
 * made before its own events were there to be inherited, until a reading
 * of the list finds none new.
 */
static int open_rescanning(struct perf_rec *r, pid_t pid,
			   struct perf_event_attr *attr)
{
	pid_t *done = NULL, *tids;
	size_t ndone = 0, n;
	int ret = 0;

	for (int round = 0; round < RESCANS && !ret; round++) {
		size_t before = ndone;
		pid_t *v;

		ret = proc_tasks(pid, &tids, &n);
		if (ret)
			break;
		v = realloc(done, (ndone + n) * sizeof(*v) + 1);
		if (!v) {
			free(tids);
			ret = -ENOMEM;
			break;
		}
		done = v;
		for (size_t i = 0; i < n && !ret; i++) {
			if (has_tid(done, ndone, tids[i]))
				continue;
			ret = open_thread(r, attr, tids[i]);
			if (!ret)
				done[ndone++] = tids[i];
			else if (ret == -ESRCH)	/* it ended meanwhile */
				ret = 0;
		}
		free(tids);
		if (ndone == before)
			break;
	}
	free(done);
	if (ret == -ENOENT || (!ret && !ndone))
		ret = -ESRCH;
	return ret;
}

int perf_open_events(pid_t pid, const struct perf_event_attr *attr,
		     size_t ring_pages, struct perf_rec **out)
{
	struct perf_event_attr a = *attr;
	struct perf_rec *r;
	int ret;

	ret = rec_new(ring_pages, false, &r);
	if (ret)
		return ret;
	ret = open_rescanning(r, pid, &a);
	return rec_ready(r, ret, out);
}

struct records_ctx {
	perf_record_cb cb;
	void *arg;
	int cpu;
};

static void read_record(const struct perf_event_header *h, const void *body,
			size_t len, void *arg)
{
	const struct records_ctx *c = arg;

	c->cb(c->cpu, h, body, len, c->arg);
}

int perf_poll_records(struct perf_rec *r, int timeout_ms, perf_record_cb cb,
		      void *arg)
{
	struct records_ctx c = { .cb = cb, .arg = arg };

	if (poll(r->pfds, r->npfds, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	for (c.cpu = 0; c.cpu < r->ncpu; c.cpu++)
		if (r->rings[c.cpu].fd >= 0)
			perf_ring_drain_records(&r->rings[c.cpu], read_record,
						&c, &r->lost);
	return 0;
}

int perf_add_wake_fd(struct perf_rec *r, int fd)
{
	struct pollfd *p = realloc(r->pfds, (r->npfds + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	r->pfds = p;
	r->pfds[r->npfds].fd = fd;
	r->pfds[r->npfds].events = POLLIN;
	r->pfds[r->npfds].revents = 0;
	r->npfds++;
	return 0;
}

int perf_ncpu(const struct perf_rec *r)
{
	return r->ncpu;
}

/* A PERF_SAMPLE_CALLCHAIN at *pp into s->kernel, and its user part
 * (after PERF_CONTEXT_USER) into s->user. */
static bool parse_chain(const uint8_t **pp, const uint8_t *end,
			struct perf_sample *s)
{
	const uint8_t *p = *pp;
	uint64_t nr, kip;
	bool user = false;

	if (end - p < (ptrdiff_t)sizeof(nr))
		return false;
	memcpy(&nr, p, sizeof(nr));
	p += sizeof(nr);
	if (nr > (uint64_t)(end - p) / sizeof(kip))
		return false;
	for (uint64_t i = 0; i < nr; i++, p += sizeof(kip)) {
		memcpy(&kip, p, sizeof(kip));
		/* PERF_CONTEXT_KERNEL and its kind are markers */
		if (kip >= (uint64_t)PERF_CONTEXT_MAX)
			user = kip == (uint64_t)PERF_CONTEXT_USER;
		else if (user && s->nuser < PERF_USER_FRAMES)
			s->user[s->nuser++] = kip;
		else if (!user && s->nkernel < PERF_KERNEL_FRAMES)
			s->kernel[s->nkernel++] = kip;
	}
	*pp = p;
	return true;
}

/* Parse a PERF_RECORD_SAMPLE body laid out by init_attr's sample_type. */
static bool parse_sample(const uint8_t *p, const uint8_t *end, bool chain,
			 struct perf_sample *s)
{
	uint64_t abi, size;

#define TAKE(dst) do { \
		if (p + sizeof(dst) > end) \
			return false; \
		memcpy(&(dst), p, sizeof(dst)); \
		p += sizeof(dst); \
	} while (0)
	uint64_t ip;

	TAKE(ip);
	TAKE(s->pid);
	TAKE(s->tid);
	TAKE(s->time);
	TAKE(s->period);
	s->nkernel = 0;
	s->nuser = 0;
	if (chain && !parse_chain(&p, end, s))
		return false;
	TAKE(abi);
	if (abi == PERF_SAMPLE_REGS_ABI_NONE)
		return false;	/* no user context (kernel thread) */
	for (size_t i = 0; i < NREGS; i++)
		TAKE(s->regs.r[perf_reg_order[i]]);
	TAKE(size);
	if (p + size > end)
		return false;
	s->stack = p;
	p += size;
	s->stack_len = 0;
	if (size) {
		uint64_t dyn;

		TAKE(dyn);
		s->stack_len = dyn < size ? dyn : size;
	}
#undef TAKE
	(void)ip;
	return true;
}

struct read_ctx {
	perf_sample_cb cb;
	void *arg;
	bool chain;
};

static void read_sample(const void *body, size_t len, void *arg)
{
	const struct read_ctx *c = arg;
	struct perf_sample s;

	if (parse_sample(body, (const uint8_t *)body + len, c->chain, &s))
		c->cb(&s, c->arg);
}

int perf_poll(struct perf_rec *r, int timeout_ms, perf_sample_cb cb,
	      void *arg)
{
	struct read_ctx c = { .cb = cb, .arg = arg,
			      .chain = r->chain || r->user };

	if (poll(r->pfds, r->npfds, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	for (int cpu = 0; cpu < r->ncpu; cpu++)
		if (r->rings[cpu].fd >= 0)
			perf_ring_drain(&r->rings[cpu], read_sample, &c,
					&r->lost);
	return 0;
}

bool perf_kernel_frames(const struct perf_rec *r)
{
	return r->chain;
}

uint64_t perf_lost(const struct perf_rec *r)
{
	return r->lost;
}

void perf_close(struct perf_rec *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nfds; i++)
		close(r->fds[i]);
	for (int cpu = 0; cpu < r->ncpu; cpu++)
		perf_ring_unmap(&r->rings[cpu]);
	free(r->rings);
	free(r->fds);
	free(r->pfds);
	free(r);
}

uint64_t perf_user_regs_mask(void)
{
	return PERF_REGS_MASK;
}

/* The kernel's order of the fields (perf_output_sample()); kept apart
 * from parse_sample(), which knows its one layout and is on the hot path
 * of cpu profiles. */
int perf_parse_sample(uint64_t sample_type, const void *body, size_t len,
		      struct perf_sample *s, uint64_t *id)
{
	const uint64_t known = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
			       PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_ID | PERF_SAMPLE_PERIOD |
			       PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
			       PERF_SAMPLE_STACK_USER;
	const uint8_t *p = body, *end = p + len;
	uint64_t skip, size;

	if (sample_type & ~known)
		return -EINVAL;
	memset(s, 0, offsetof(struct perf_sample, kernel));
	*id = 0;
#define TAKE(dst) do { \
		if (p + sizeof(dst) > end) \
			return -EINVAL; \
		memcpy(&(dst), p, sizeof(dst)); \
		p += sizeof(dst); \
	} while (0)
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		TAKE(*id);
	if (sample_type & PERF_SAMPLE_IP)
		TAKE(skip);
	if (sample_type & PERF_SAMPLE_TID) {
		TAKE(s->pid);
		TAKE(s->tid);
	}
	if (sample_type & PERF_SAMPLE_TIME)
		TAKE(s->time);
	if (sample_type & PERF_SAMPLE_ID)
		TAKE(*id);
	if (sample_type & PERF_SAMPLE_PERIOD)
		TAKE(s->period);
	if ((sample_type & PERF_SAMPLE_CALLCHAIN) && !parse_chain(&p, end, s))
		return -EINVAL;
	if (sample_type & PERF_SAMPLE_REGS_USER) {
		uint64_t abi;

		TAKE(abi);
		if (abi == PERF_SAMPLE_REGS_ABI_NONE)
			return -ENODATA;
		for (size_t i = 0; i < NREGS; i++)
			TAKE(s->regs.r[perf_reg_order[i]]);
	}
	if (sample_type & PERF_SAMPLE_STACK_USER) {
		TAKE(size);
		if (size > (size_t)(end - p))
			return -EINVAL;
		s->stack = p;
		p += size;
		if (size) {
			uint64_t dyn;

			TAKE(dyn);
			s->stack_len = dyn < size ? dyn : size;
		}
	}
#undef TAKE
	return 0;
}
