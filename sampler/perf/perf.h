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
 * Errors: negative errno. -EACCES/-EPERM when the kernel refuses (e.g.
 * perf_event_paranoid), -ESRCH when the process is gone.
 */
#ifndef PROFFS_PERF_H
#define PROFFS_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind.h"

struct perf_rec;

struct perf_sample {
	uint32_t pid, tid;
	uint64_t time;		/* perf clock, ns */
	uint64_t period;	/* ns of cpu-clock this sample stands for */
	struct unwind_regs regs;
	const void *stack;	/* copy of the stack from regs.r[UREG_RSP] */
	size_t stack_len;
};

typedef void (*perf_sample_cb)(const struct perf_sample *s, void *arg);

/* Start sampling every thread of pid at hz per second of cpu time. */
int perf_open(pid_t pid, unsigned hz, struct perf_rec **out);

/* The same for several processes (one gone, or refused, is skipped:
 * -ESRCH when none is left). */
int perf_open_pids(const pid_t *pids, size_t n, unsigned hz,
		   struct perf_rec **out);

/*
 * Every process on the machine: one event per CPU (pid -1), the cost of
 * a sample the same as with one process, whatever the number of threads.
 * Needs CAP_PERFMON or root where perf_event_paranoid > 0: -EACCES or
 * -EPERM otherwise.
 */
int perf_open_system(unsigned hz, struct perf_rec **out);

/*
 * Wait up to timeout_ms for data, then hand every complete sample to cb.
 * Returns 0, or a negative errno on a fatal error.
 */
int perf_poll(struct perf_rec *r, int timeout_ms, perf_sample_cb cb,
	      void *arg);


/* Records the kernel dropped because a ring was full. */
uint64_t perf_lost(const struct perf_rec *r);

/* Stop sampling and free; NULL is a no-op. */
void perf_close(struct perf_rec *r);

/*
 * For events opened elsewhere (the uprobe fallback, heap_uprobe.h) that
 * want the same registers: the sample_regs_user mask perf_parse_sample()
 * expects, and the parser. sample_type may hold PERF_SAMPLE_IDENTIFIER,
 * IP, TID, TIME, ID, PERIOD, REGS_USER (with this mask) and STACK_USER,
 * nothing else; the body is a PERF_RECORD_SAMPLE's, after its header.
 * Fields the type lacks are zero; *id is the event's id (IDENTIFIER or
 * ID: an inherited event reports its parent's). s->stack points into
 * body. -EINVAL for a short record or another bit, -ENODATA for a sample
 * without user registers.
 */
uint64_t perf_user_regs_mask(void);
int perf_parse_sample(uint64_t sample_type, const void *body, size_t len,
		      struct perf_sample *s, uint64_t *id);

#endif
