/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * perf_switch.h - every context switch of every thread of one process,
 * from the scheduler through perf: when each thread left a CPU (with its
 * user registers and a copy of the top of its user stack at that moment,
 * and whether it was preempted or went to sleep) and when it came back,
 * and when threads started and ended. For the off-CPU kinds' exact
 * method (offcpu.h, OFFCPU_SCHED).
 *
 * One perf event per (thread, cpu), inherited by the threads created
 * meanwhile (not by child processes), as perf.h opens them: the software
 * event context-switches sampled at every switch out (it fires in the
 * kernel, so it needs CAP_PERFMON, root, or perf_event_paranoid <= 1:
 * -EACCES or -EPERM otherwise), with context_switch records for both
 * directions (PERF_RECORD_SWITCH, whose misc says preempted) and task
 * records (PERF_RECORD_FORK, _EXIT). No thread is stopped; what it costs
 * the target is the kernel's copy of the stack at each switch out.
 *
 * perf_switch_poll() reads the rings (in the order of each cpu's ring)
 * and calls back at every switch out, as soon as it is read, with the
 * sample: the caller unwinds it while the thread may still sleep, and
 * gives back a token that comes with the switch in time order. Events
 * then come out of perf_switch_next() merged in time order across the
 * cpus, up to the moment every ring had been read after them.
 *
 * One reader, one thread. Errors: negative errno; -ESRCH when the
 * process is gone, -ENOMEM.
 */
#ifndef PROFFS_PERF_SWITCH_H
#define PROFFS_PERF_SWITCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct perf_sample;
struct perf_switch;

enum perf_switch_type {
	PSW_OUT,	/* the thread left the CPU */
	PSW_IN,		/* it came back on one */
	PSW_START,	/* a thread was created */
	PSW_END,	/* a thread ended */
};

struct perf_switch_ev {
	enum perf_switch_type type;
	uint32_t tid;
	uint64_t time;		/* CLOCK_MONOTONIC ns */
	bool preempted;		/* PSW_OUT: still runnable */
	uint64_t token;		/* PSW_OUT: what the callback gave */
};

/*
 * At a switch out of thread tid, as it is read: s has the thread's user
 * registers and stack as it left the CPU (NULL when the kernel lost the
 * sample but not the switch); returns the token its PSW_OUT event will
 * carry.
 */
typedef uint64_t (*perf_switch_out_cb)(uint32_t tid, bool preempted,
				       const struct perf_sample *s,
				       void *arg);

/* Whether the kernel lets the daemon open such events on pid: 0, or
 * the errno of perf_switch_open() (-EACCES, -EPERM, -ESRCH), quickly. */
int perf_switch_probe(pid_t pid);

/* With kernel_frames, each sample also carries the kernel part of the
 * callchain at the switch (s->kernel: where in the kernel the thread went
 * to sleep) when the kernel allows it; perf_switch_kernel_frames() says
 * whether it did. */
int perf_switch_open(pid_t pid, bool kernel_frames, struct perf_switch **out);

bool perf_switch_kernel_frames(const struct perf_switch *w);

/* Stop the events and free; NULL is a no-op. */
void perf_switch_close(struct perf_switch *w);

/* Wait up to timeout_ms for data, read every ring (calling cb at each
 * switch out) and queue what was read. */
int perf_switch_poll(struct perf_switch *w, int timeout_ms,
		     perf_switch_out_cb cb, void *arg);

/*
 * The oldest event queued, if every ring has been read since it was
 * written (all: any), taken out into *ev; false when there is none.
 */
bool perf_switch_next(struct perf_switch *w, bool all,
		      struct perf_switch_ev *ev);

/* Switches out read, and records the kernel lost (full rings) or that
 * found no room in the queues. */
void perf_switch_counts(const struct perf_switch *w, uint64_t *outs,
			uint64_t *lost);

#endif
