/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * perf.h - cpu-clock sampling of one process with perf_event_open, user
 * registers and user stack copies in every sample.
 *
 * One event per (thread, cpu) with inherit set, so threads created during
 * the window are followed; every event of a cpu writes into that cpu's one
 * ring buffer (PERF_EVENT_IOC_SET_OUTPUT), as `perf record -p` does. An
 * inherit event opened with cpu = -1 cannot be mmapped on this kernel.
 *
 * Samples are handed to a callback as they are read, pointing into the
 * ring (or a bounce buffer when a record wraps): valid only during the
 * callback. Not thread-safe: one reader.
 *
 * Where the kernel allows kernel samples (root, CAP_PERFMON, or
 * perf_event_paranoid <= 1), time in system calls is sampled too, with
 * the user registers and stack of the call; and, when asked, the kernel
 * part of the callchain, which the kernel unwinds itself.
 *
 * Errors: negative errno. -EACCES/-EPERM when the kernel refuses (e.g.
 * perf_event_paranoid), -ESRCH when the process is gone.
 */
#ifndef PROFFS_PERF_H
#define PROFFS_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/unwind/unwind.h"

/* Kernel frames kept per sample, at most. */
#define PERF_KERNEL_FRAMES 64
/* User frames of a perf_open_fp() sample, at most (with the kernel's,
 * within perf_event_max_stack's default, 127). */
#define PERF_USER_FRAMES 63

struct perf_rec;

struct perf_sample {
	uint32_t pid, tid;
	uint64_t time;		/* perf clock, ns */
	uint64_t period;	/* ns of cpu-clock this sample stands for */
	struct unwind_regs regs;
	const void *stack;	/* copy of the stack from regs.r[UREG_RSP] */
	size_t stack_len;
	uint32_t nkernel;	/* kernel frames; 0: sampled in user mode */
	uint32_t nuser;		/* user frames (perf_open_fp()), or 0 */
	uint64_t kernel[PERF_KERNEL_FRAMES];	/* leaf (the pc) first, then
						 * return addresses */
	uint64_t user[PERF_USER_FRAMES];	/* the same, the kernel's walk
						 * of the user's frame
						 * pointers at the sample */
};

typedef void (*perf_sample_cb)(const struct perf_sample *s, void *arg);

/*
 * Start sampling every thread of pid at hz per second of cpu time; with
 * kernel_frames, with the kernel part of the callchain when the kernel
 * allows it (perf_kernel_frames() says whether it did).
 */
int perf_open(pid_t pid, unsigned hz, bool kernel_frames,
	      struct perf_rec **out);

/* The same, with perf_poll() woken by every sample rather than by a ring
 * half full: for samples that must be handled at once (a runtime's
 * frames, read from the live process). */
int perf_open_eager(pid_t pid, unsigned hz, bool kernel_frames,
		    struct perf_rec **out);

/*
 * perf_open(), and each sample with the user frames the kernel finds by
 * frame pointers at the sample, where it allows it (s->nuser is 0
 * otherwise): for a Go program, whose goroutine stack, seen from the
 * system stack, may have changed by the time the daemon reads it.
 */
int perf_open_fp(pid_t pid, unsigned hz, bool kernel_frames,
		 struct perf_rec **out);

/* The same for several processes (one gone, or refused, is skipped:
 * -ESRCH when none is left). */
int perf_open_pids(const pid_t *pids, size_t n, unsigned hz,
		   bool kernel_frames, struct perf_rec **out);

/*
 * Every process on the machine: one event per CPU (pid -1), the cost of
 * a sample the same as with one process, whatever the number of threads.
 * Needs CAP_PERFMON or root where perf_event_paranoid > 0: -EACCES or
 * -EPERM otherwise.
 */
int perf_open_system(unsigned hz, bool kernel_frames, struct perf_rec **out);

/* Whether samples carry their kernel frames. */
bool perf_kernel_frames(const struct perf_rec *r);

/*
 * Other events than cpu-clock (the off-CPU kinds' context switches): a
 * copy of *attr on every thread of pid, one per (thread, cpu), the
 * events of a cpu writing into its one ring of ring_pages data pages (a
 * power of two, halved while the locked-memory limit refuses); threads a
 * thread made before its events were there to be inherited are found by
 * reading the list again. attr says what is inherited and recorded.
 */
struct perf_event_attr;
struct perf_event_header;

int perf_open_events(pid_t pid, const struct perf_event_attr *attr,
		     size_t ring_pages, struct perf_rec **out);

/* Every record of the rings (samples, switches, forks...), with the cpu
 * whose ring it was in; body as perf_ring_drain_records() gives it. */
typedef void (*perf_record_cb)(int cpu, const struct perf_event_header *h,
			       const void *body, size_t len, void *arg);

int perf_poll_records(struct perf_rec *r, int timeout_ms, perf_record_cb cb,
		      void *arg);

/* The number of rings (cpus, online or not): the cpus perf_record_cb may
 * name are below it. */
int perf_ncpu(const struct perf_rec *r);

/*
 * Wait up to timeout_ms for data, then hand every complete sample to cb.
 * Returns 0, or a negative errno on a fatal error.
 */
int perf_poll(struct perf_rec *r, int timeout_ms, perf_sample_cb cb,
	      void *arg);

/*
 * Another fd perf_poll() waits on beside the rings, readable when its
 * owner wants the rings read at once (an eventfd another thread
 * writes); the caller reads it and closes it after perf_close().
 */
int perf_add_wake_fd(struct perf_rec *r, int fd);

/* The events opened (one per thread and cpu), to attach a program to
 * each (PERF_EVENT_IOC_SET_BPF); owned by r. */
const int *perf_fds(const struct perf_rec *r, size_t *n);

/* Records the kernel dropped because a ring was full. */
uint64_t perf_lost(const struct perf_rec *r);

/* Stop sampling and free; NULL is a no-op. */
void perf_close(struct perf_rec *r);

/*
 * For events opened elsewhere (the uprobe fallback, heap_uprobe.h) that
 * want the same registers: the sample_regs_user mask perf_parse_sample()
 * expects, and the parser. sample_type may hold PERF_SAMPLE_IDENTIFIER,
 * IP, TID, TIME, ID, PERIOD, CALLCHAIN (its kernel part, as with
 * exclude_callchain_user, into s->kernel), REGS_USER (with this mask)
 * and STACK_USER, nothing else; the body is a PERF_RECORD_SAMPLE's,
 * after its header. Fields the type lacks are zero; *id is the event's
 * id (IDENTIFIER or ID: an inherited event reports its parent's).
 * s->stack points into body. -EINVAL for a short record or another bit,
 * -ENODATA for a sample without user registers.
 */
uint64_t perf_user_regs_mask(void);
int perf_parse_sample(uint64_t sample_type, const void *body, size_t len,
		      struct perf_sample *s, uint64_t *id);

#endif
