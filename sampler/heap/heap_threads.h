/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_threads.h - the heap agent's list of threads (agent/heap_ring.h,
 * struct ph_thread) as the daemon reads it from the target: which threads
 * are listed, which of them still run, and their budgets.
 *
 * Both users of the list go through here: heap_budget.c, which zeroes the
 * budgets when the rate drops, and heap_counts.c, which sums the counts
 * of calls the budgets hold.
 *
 * The target is untrusted: the list and every budget come from its
 * memory, read with process_vm_readv (nothing is stopped); a budget is
 * taken for one only where its bytes name that very address and the
 * entry's thread (the memory of a thread that ended may be another's by
 * now).
 *
 * Errors: negative errno values; -ESRCH when the process is gone.
 */
#ifndef PROFFS_HEAP_THREADS_H
#define PROFFS_HEAP_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/heap/agent/heap_ring.h"

struct heap_threads {
	pid_t pid;
	struct ph_thread *list;	/* PH_THREADS entries, a copy */
	pid_t *tids;		/* the threads running now, sorted, as the
				 * agent numbers them (its pid namespace) */
	size_t ntids;
};

/*
 * Copy the list at threads (ph_shared.threads, in pid's memory), then the
 * threads that run: in that order, so that a thread listed after the copy
 * is missing from both, never listed and taken for ended. On success the
 * caller frees with heap_threads_free(); on failure *t needs no freeing.
 */
int heap_threads_read(pid_t pid, uint64_t threads, struct heap_threads *t);
void heap_threads_free(struct heap_threads *t);

/* Whether the thread the agent calls tid was running at the read. */
bool heap_threads_alive(const struct heap_threads *t, uint32_t tid);

/*
 * The budget of entry i, read now, into *b (its address in *addr): 0, or
 * -ENOENT when the entry is free or half made, or its memory is not (or
 * no longer) that thread's budget; other errors of the read.
 */
int heap_threads_budget(const struct heap_threads *t, unsigned i,
			struct ph_budget *b, uint64_t *addr);

#endif
