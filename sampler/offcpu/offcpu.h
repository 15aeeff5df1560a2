/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * offcpu.h - where a process's threads spend their time off the CPU,
 * over a window: the wall, block and mutex kinds (SPEC §9; the rules
 * are in docs/offcpu.md).
 *
 *   wall   every thread for the whole window: samples/count and
 *          wall/nanoseconds; a stack off the CPU ends in a "[syscall]
 *          NAME" frame, under it its kernel frames "[k] name" where the
 *          daemon may see them (procfs: /proc/PID/task/TID/stack; sched:
 *          the kernel callchain at the switch out, with the scheduler's
 *          and lock functions left out as that file leaves them). The
 *          values of a thread add up to the time it lived in the window.
 *   block  time asleep on synchronization (waitclass.h), by the
 *          waiter's stack, until the waiter runs again: Go's
 *          contentions/count and delay/nanoseconds (default delay).
 *   mutex  the part of block spent waiting for a lock.
 *
 * Every sample has the labels thread, thread_name and state (running,
 * runnable, sleeping, disk, stopped).
 *
 * Measured without stopping any thread (OFFCPU_PROCFS): hz times a
 * second, each thread's schedstat, and for one that has run since the
 * last look and now sleeps, its syscall file, state and a copy of its
 * stack, checked for a consistent copy (taskstat.h) and unwound by the
 * CPU unwinder. Each thread's CPU, run-queue and off-CPU times over the
 * window are exact (schedstat); the samples share them out among its
 * stacks. For wall, the stacks on the CPU are perf cpu-clock samples at
 * hz, from one event per cpu where allowed, else as the cpu kind takes
 * them (or a "[running]" frame where perf is refused). The profile's
 * comments say how it was taken.
 *
 * Blocks for the window on the calling thread (raised to nice -10 like
 * the cpu kind's); -ECANCELED when *stop becomes true (checked every
 * 50 ms); a process that exits gives the partial profile with a comment.
 *
 * Ownership: on success *out is a new profile, freed with profile_free().
 * Errors: -ESRCH (no such process), -EACCES/-EPERM (the kernel refuses
 * its /proc files), -ENOMEM, -ECANCELED, -EINVAL (hz or window 0).
 */
#ifndef PROFFS_OFFCPU_H
#define PROFFS_OFFCPU_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct dso_cache;
struct kallsyms;
struct profile;

enum offcpu_kind {
	OFFCPU_WALL,
	OFFCPU_BLOCK,
	OFFCPU_MUTEX,
};

enum offcpu_method {
	OFFCPU_AUTO,	/* sched for block and mutex where allowed, else
			 * procfs (offcpu.c, choose_method()) */
	OFFCPU_PROCFS,	/* /proc and process_vm_readv only */
	OFFCPU_SCHED,	/* scheduler events: -EACCES/-EPERM if refused */
};

struct offcpu_opts {
	pid_t pid;
	enum offcpu_kind kind;
	enum offcpu_method method;
	uint32_t hz;		/* looks per second per thread */
	uint64_t window_ms;
	struct dso_cache *cache;	/* shared across sessions */
	/* Shared; NULL: no kernel frames (kernel=0, or a caller the kernel
	 * would not show them), in either method. */
	struct kallsyms *ksyms;
	uint32_t max_stacks;	/* 0: no bound (see cpu.h) */
	const _Atomic bool *stop;	/* may be NULL */
	/*
	 * Nonzero: a timeline (the trace kind's off-CPU intervals), wall
	 * only, from /proc, without perf: each look that finds a thread off
	 * the CPU is its own sample, with the numeric labels ts (the look's
	 * time, ns after this CLOCK_MONOTONIC time) and dur (ns since the
	 * thread's last look), its values the look's, not shared out; past
	 * max_stacks looks, the later ones are left out.
	 */
	uint64_t timeline_t0;
};

struct offcpu_stats {
	enum offcpu_method method;	/* the one used */
	unsigned threads;	/* seen during the window */
	uint64_t looks;		/* thread readings at the ticks */
	uint64_t snapshots;	/* stacks of sleeping threads copied */
	uint64_t reused;	/* looks at a thread asleep since the last */
	uint64_t raced;		/* copies thrown away: the thread ran */
	uint64_t incomplete;	/* stacks not unwound to the first frame */
	uint64_t switches;	/* sched: switches out of the threads */
	uint64_t preempted;	/* of them, preemptions */
	uint64_t calls_read;	/* sched: syscall files read */
	uint64_t switch_lost;	/* sched: records the kernel dropped */
	uint64_t cpu_samples;	/* perf samples (wall) */
	uint64_t lost;		/* perf records the kernel dropped */
	uint64_t elapsed_ns;
	uint64_t daemon_cpu_ns;	/* the sampling thread's CPU time */
};

int offcpu_profile(const struct offcpu_opts *o, struct profile **out,
		   struct offcpu_stats *st);

#endif
