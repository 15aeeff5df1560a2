/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * octhreads.h - the target's threads over an off-CPU window, by tid:
 * each with its open /proc files, its schedstat at the first and the
 * last look, the time its samples stand for on and off the CPU, its
 * label strings, and the stack it was last seen off the CPU in (kept
 * while it does not run, so a thread asleep for the whole window costs
 * a read of schedstat and stat a tick).
 *
 * Records are allocated one by one and never move: pointers stay valid
 * until octhreads_free(), which closes every file. One session, one
 * thread. Errors: -ENOMEM.
 */
#ifndef PROFFS_OCTHREADS_H
#define PROFFS_OCTHREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/offcpu/taskstat.h"
#include "sampler/offcpu/waitclass.h"

#define OC_MAX_KFRAMES 48

struct oc_stack {
	uint64_t hash;
	uint32_t nlocs;
	uint64_t *locs;		/* leaf first */
	uint64_t sleeps;	/* looks that found a new sleep here */
	uint64_t off_ns;	/* what its looks asleep stood for */
	uint64_t runq_ns;	/* what its looks woken stood for */
	uint64_t woken_ns;	/* at the end, its share of wake-up waits */
	enum wait_class class;
};

/*
 * offcpu=sched (ocsched.c): a place a thread left the CPU at, by its user
 * stack as it left, and what the intervals off the CPU from there add
 * up to in the window.
 */
#define OC_SYSNO_UNKNOWN (-2L)

struct oc_place {
	uint64_t hash;
	uint32_t npcs, nkpcs;
	uint64_t *pcs;		/* user frames, leaf first */
	uint64_t *kpcs;		/* kernel return addresses, innermost
				 * first (in pcs' allocation) */
	bool in_call;		/* in a system call as it left */
	long sysno;		/* or OC_SYSNO_UNKNOWN, or -1 */
	uint64_t pc, arg1;	/* the call's user pc, second argument */
	uint64_t sleeps;	/* sleeps from here in the window */
	uint64_t waits;		/* of them, those that ended in it */
	uint64_t off_ns;	/* their time in the window */
	uint64_t preempts, preempt_ns;	/* preempted here */
};

struct oc_thread {
	pid_t tid;
	bool gone;			/* exited: its files are closed */
	struct task_files files;
	struct task_sched first, last;	/* schedstat at those looks */
	struct task_switches sw_first, sw_last;	/* read at both ends */
	bool have_sw;			/* both read */
	/* Wake-up waits measured whole: run-queue time over intervals
	 * from a look that found the thread off the CPU to one after its
	 * first arrival on a CPU since (run_delay grows at an arrival). */
	uint64_t wake_ns, wakes;
	uint64_t first_ns, last_ns;	/* CLOCK_MONOTONIC of them */
	/* What its samples stand for: on a CPU (perf), runnable and
	 * asleep (looks). */
	uint64_t on_ns, runq_ns, off_ns;
	int64_t tid_str, name_str;	/* label strings in the profile */
	size_t copy_size;		/* stack bytes to copy */
	/* The stack of the last look, when it found the thread off the
	 * CPU: still its stack while the thread has not run. */
	bool have_stack;
	char state;			/* its state letter asleep there */
	enum wait_class class;
	uint32_t cur;			/* index in stacks */
	/* Every stack it was found off the CPU in: what its looks there
	 * stood for, for ocshare.c. */
	struct oc_stack *stacks;
	uint32_t nstacks, capstacks;
	/* The kernel frames of the last place it slept in. */
	bool have_place;
	struct task_place place;
	uint32_t nklocs;
	uint64_t klocs[OC_MAX_KFRAMES];
	/* offcpu=sched: the places it left the CPU at; whether it is off
	 * the CPU, since when and from where (the token of its switch out:
	 * place and stack, ocsched.c); its last sleep's; its time off the
	 * CPU in the window; whether the first look found it off the CPU,
	 * in stacks[cur], until its first switch in. */
	struct oc_place *places;
	uint32_t nplaces, capplaces;
	bool switched;			/* a switch of it was seen */
	bool out, out_preempted, slept;
	bool wait_counted;	/* the wait of last_sleep, as it ended */
	uint64_t out_token, last_sleep;
	uint64_t out_ns;
	uint64_t sched_off_ns;
	bool first_off;
	uint64_t start_off_ns;		/* off from the window's start */
	bool start_waited;		/* that sleep ended in the window */
};

struct oc_threads;

int octhreads_new(struct oc_threads **out);
void octhreads_free(struct oc_threads *t);

/* The record of tid, or NULL. */
struct oc_thread *octhreads_find(struct oc_threads *t, pid_t tid);
/* A new zeroed record for tid (files closed, not yet looked at). */
int octhreads_add(struct oc_threads *t, pid_t tid, struct oc_thread **out);

size_t octhreads_count(const struct oc_threads *t);
struct oc_thread *octhreads_at(struct oc_threads *t, size_t i);

/* Make locs[0..n) th's current stack, found or added in its table. */
int octhread_set_stack(struct oc_thread *th, const uint64_t *locs,
		       uint32_t n);
/* Make the place want describes (its frames, in_call, pc, sysno; the
 * rest ignored) one of th's places, found or added with copies of its
 * frames; *index is its index. */
int octhread_place(struct oc_thread *th, const struct oc_place *want,
		   uint32_t *index);

/* th's entry for locs[0..n), or NULL. */
struct oc_stack *octhread_find_stack(const struct oc_thread *th,
				     const uint64_t *locs, uint32_t n);

#endif
