/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_counts.h - the heap agent's exact counts of allocation and free
 * calls (Go's Mallocs and Frees), summed by the daemon from outside.
 *
 * The agent counts every call in the calling thread's budget, with plain
 * thread-local increments (agent/heap_ring.h, struct ph_budget), and
 * folds a thread's counts into the shared header when the thread ends
 * or cannot be listed. The sum is the folded counts plus the budgets of
 * the listed threads that run: a thread that ended gave its counts to the
 * header, and the memory of its budget may be another thread's by now.
 * A fold during the sum could count a thread twice or not at all, so the
 * sum is taken again when the header's fold_seq moved meanwhile.
 *
 * The counts are those of an instant only while no thread allocates; of
 * a busy process, each thread's count is that of the moment it is read.
 * Counts of threads that ended without running their thread-exit
 * destructors (a raw exit system call) are lost.
 */
#ifndef PROFFS_HEAP_COUNTS_H
#define PROFFS_HEAP_COUNTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ph_shared;

struct heap_counts {
	uint64_t mallocs;	/* allocation calls, ever */
	uint64_t frees;		/* frees of a block (not of NULL), ever */
	unsigned threads;	/* listed running threads summed */
	bool lossy;		/* the agent could not watch threads end: the
				 * counts of ended threads are missing */
};

/*
 * Sum the counts of pid's agent, whose shared header (the daemon's
 * mapping of it) is sh. 0; -EAGAIN when folds kept moving counts during
 * every try; -ESRCH when the process is gone; other read errors.
 */
int heap_counts_read(pid_t pid, const struct ph_shared *sh,
		     struct heap_counts *c);

#endif
