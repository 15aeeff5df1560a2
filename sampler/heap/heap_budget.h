/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_budget.h - after the sampling rate of a heap agent drops, make
 * every thread of the target draw its sampling budget anew.
 *
 * The agent's hooks never read the rate (agent/heap_ring.h, struct
 * ph_budget): a thread goes on spending the budget it drew at the old,
 * higher rate. Without this a session asking rate=1 would miss up to half
 * a megabyte of each thread's allocations (and a quiet program's all of
 * them). The daemon zeroes those budgets in the target's memory with
 * process_vm_writev, where the agent's list of threads says they are.
 *
 * The target is untrusted: every address comes from it, so the daemon
 * only reads and writes the target's own memory, and writes nothing but a
 * budget whose bytes name that very address and a live thread.
 */
#ifndef PROFFS_HEAP_BUDGET_H
#define PROFFS_HEAP_BUDGET_H

#include <stdint.h>
#include <sys/types.h>

struct heap_budget_stats {
	unsigned listed;	/* threads in the agent's list */
	unsigned zeroed;	/* budgets zeroed */
	unsigned gone;		/* entries of threads that had ended (the
				 * agent frees them, at a thread's end) */
};

/*
 * Zero the budget of every listed thread of pid that drew it under a
 * rate_gen other than gen (the agent's list is at threads, from the
 * ring's header). Takes about 2 ms: a thread may be halfway through
 * spending its budget when it is zeroed, and write the old value back, so
 * the budgets are looked at again twice. 0, or a negative errno when the
 * list cannot be read (-ESRCH: the process is gone).
 */
int heap_budgets_reset(pid_t pid, uint64_t threads, uint32_t gen,
		       struct heap_budget_stats *st);

#endif
