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

#include "taskstat.h"
#include "waitclass.h"

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
/* th's entry for locs[0..n), or NULL. */
struct oc_stack *octhread_find_stack(const struct oc_thread *th,
				     const uint64_t *locs, uint32_t n);

#endif
