// SPDX-License-Identifier: GPL-2.0-or-later
/* heap_budget.c - zero the agent's per-thread sampling budgets when the
 * rate drops (why: heap_budget.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampler/heap/heap_budget.h"
#include "sampler/heap/heap_threads.h"
#include "sampler/proc.h"

#define LOOKS 3			/* a zeroed budget is looked at again */
#define LOOK_GAP_NS 1000000l	/* a thread's three instructions are long
				 * past by then, unless it was preempted
				 * between them */

/*
 * One look at entry i's budget: true while it still needs looking at (it
 * was zeroed now, or holds an old budget). A budget drawn under gen, or
 * memory that is no longer that thread's budget, needs nothing.
 */
static bool look(const struct heap_threads *t, unsigned i, uint32_t gen,
		 struct heap_budget_stats *st)
{
	uint64_t addr, zero = 0;
	struct ph_budget b;

	if (heap_threads_budget(t, i, &b, &addr) || b.gen == gen || !b.left)
		return false;
	if (proc_mem_write(t->pid, addr + offsetof(struct ph_budget, left),
			   &zero, sizeof(zero)))
		return false;
	st->zeroed++;
	return true;
}

/*
 * The entries of running threads, in todo. An entry whose thread has
 * ended is the agent's to give back (at the thread's end): the daemon
 * never frees one, as the agent may have given it to a new thread since
 * the list was read.
 */
static size_t sort_out(const struct heap_threads *t, unsigned *todo,
		       struct heap_budget_stats *st)
{
	size_t n = 0;

	for (unsigned i = 0; i < PH_THREADS; i++) {
		uint32_t tid = atomic_load(&t->list[i].tid);

		if (!tid)
			continue;
		st->listed++;
		if (!heap_threads_alive(t, tid))
			st->gone++;
		else if (atomic_load(&t->list[i].budget))
			todo[n++] = i;
	}
	return n;
}

int heap_budgets_reset(pid_t pid, uint64_t threads, uint32_t gen,
		       struct heap_budget_stats *st)
{
	struct timespec gap = { 0, LOOK_GAP_NS };
	struct heap_threads t;
	unsigned *todo;
	size_t n;
	int ret;

	memset(st, 0, sizeof(*st));
	todo = malloc(PH_THREADS * sizeof(*todo));
	if (!todo)
		return -ENOMEM;
	/* The list first, the threads second: a thread listed after the
	 * list was read saw the new rate_gen itself. */
	ret = heap_threads_read(pid, threads, &t);
	if (ret)
		goto out;
	n = sort_out(&t, todo, st);
	for (unsigned k = 0; k < LOOKS && n; k++) {
		size_t left = 0;

		if (k)
			nanosleep(&gap, NULL);
		for (size_t j = 0; j < n; j++)
			if (look(&t, todo[j], gen, st))
				todo[left++] = todo[j];
		n = left;
	}
	heap_threads_free(&t);
out:
	free(todo);
	return ret;
}
