// SPDX-License-Identifier: GPL-2.0-or-later
/* heap_budget.c - zero the agent's per-thread sampling budgets when the
 * rate drops (why: heap_budget.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/heap_ring.h"
#include "heap_budget.h"
#include "log.h"
#include "proc.h"

#define LOOKS 3			/* a zeroed budget is looked at again */
#define LOOK_GAP_NS 1000000l	/* a thread's three instructions are long
				 * past by then, unless it was preempted
				 * between them */

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

static bool alive(const pid_t *tids, size_t n, uint32_t tid)
{
	pid_t key = (pid_t)tid;

	return bsearch(&key, tids, n, sizeof(*tids), cmp_tid) != NULL;
}

/*
 * One look at entry e's budget: true while it still needs looking at (it
 * was zeroed now, or holds an old budget). A budget drawn under gen, or
 * memory that is no longer that thread's budget, needs nothing.
 */
static bool look(pid_t pid, const struct ph_thread *e, uint32_t gen,
		 struct heap_budget_stats *st)
{
	uint64_t addr = atomic_load(&e->budget), zero = 0;
	struct ph_budget b;

	if (proc_mem_read(pid, addr, &b, sizeof(b)) || b.self != addr ||
	    b.tid != atomic_load(&e->tid) || b.gen == gen)
		return false;
	if (!b.left)
		return false;
	if (proc_mem_write(pid, addr + offsetof(struct ph_budget, left), &zero,
		 sizeof(zero)))
		return false;
	st->zeroed++;
	return true;
}

/* Free the entries of ended threads; keep the others' indices in todo. */
static size_t sort_out(pid_t pid, uint64_t threads, struct ph_thread *list,
		       const pid_t *tids, size_t ntids, unsigned *todo,
		       struct heap_budget_stats *st)
{
	size_t n = 0;

	for (unsigned i = 0; i < PH_THREADS; i++) {
		uint32_t tid = atomic_load(&list[i].tid), none = 0;

		if (!tid)
			continue;
		st->listed++;
		if (!alive(tids, ntids, tid)) {
			/* Only the daemon frees an entry, and only the
			 * agent takes a free one: no race on tid. */
			if (!proc_mem_write(pid, threads + i * sizeof(*list) +
				  offsetof(struct ph_thread, tid), &none,
				  sizeof(none)))
				st->gone++;
			continue;
		}
		if (atomic_load(&list[i].budget))
			todo[n++] = i;
	}
	return n;
}

/* The agent lists its threads by gettid(): in a pid namespace, numbers of
 * that namespace. Renumber ours the same way (a thread gone meanwhile
 * keeps its number: it matches nothing). */
static void ns_tids(pid_t pid, pid_t *tids, size_t n)
{
	pid_t ns;

	if (proc_ns_tid(pid, pid, &ns) || ns == pid)
		return;
	for (size_t i = 0; i < n; i++)
		if (!proc_ns_tid(pid, tids[i], &ns))
			tids[i] = ns;
}

int heap_budgets_reset(pid_t pid, uint64_t threads, uint32_t gen,
		       struct heap_budget_stats *st)
{
	struct timespec gap = { 0, LOOK_GAP_NS };
	struct ph_thread *list = NULL;
	unsigned *todo = NULL;
	pid_t *tids = NULL;
	size_t ntids = 0, n;
	int ret;

	memset(st, 0, sizeof(*st));
	list = malloc(PH_THREADS * sizeof(*list));
	todo = malloc(PH_THREADS * sizeof(*todo));
	ret = list && todo ? 0 : -ENOMEM;
	if (!ret)
		ret = proc_mem_read(pid, threads, list, PH_THREADS * sizeof(*list));
	/* The list first, the threads second: a thread listed after the
	 * list was read saw the new rate_gen itself. */
	if (!ret)
		ret = proc_tasks(pid, &tids, &ntids);
	if (ret)
		goto out;
	ns_tids(pid, tids, ntids);
	qsort(tids, ntids, sizeof(*tids), cmp_tid);
	n = sort_out(pid, threads, list, tids, ntids, todo, st);
	for (unsigned k = 0; k < LOOKS && n; k++) {
		size_t left = 0;

		if (k)
			nanosleep(&gap, NULL);
		for (size_t j = 0; j < n; j++)
			if (look(pid, &list[todo[j]], gen, st))
				todo[left++] = todo[j];
		n = left;
	}
out:
	free(tids);
	free(todo);
	free(list);
	return ret == -ENOENT ? -ESRCH : ret;
}
