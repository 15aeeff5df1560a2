// SPDX-License-Identifier: GPL-2.0-or-later
/* heap_threads.c - the heap agent's list of threads, read from outside
 * (heap_threads.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/heap/heap_threads.h"
#include "sampler/proc.h"

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
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

int heap_threads_read(pid_t pid, uint64_t threads, struct heap_threads *t)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->list = malloc(PH_THREADS * sizeof(*t->list));
	if (!t->list)
		return -ENOMEM;
	ret = proc_mem_read(pid, threads, t->list,
			    PH_THREADS * sizeof(*t->list));
	if (!ret)
		ret = proc_tasks(pid, &t->tids, &t->ntids);
	if (ret) {
		heap_threads_free(t);
		return ret == -ENOENT ? -ESRCH : ret;
	}
	ns_tids(pid, t->tids, t->ntids);
	qsort(t->tids, t->ntids, sizeof(*t->tids), cmp_tid);
	return 0;
}

void heap_threads_free(struct heap_threads *t)
{
	free(t->list);
	free(t->tids);
	t->list = NULL;
	t->tids = NULL;
	t->ntids = 0;
}

bool heap_threads_alive(const struct heap_threads *t, uint32_t tid)
{
	pid_t key = (pid_t)tid;

	return tid && bsearch(&key, t->tids, t->ntids, sizeof(*t->tids),
			      cmp_tid) != NULL;
}

int heap_threads_budget(const struct heap_threads *t, unsigned i,
			struct ph_budget *b, uint64_t *addr)
{
	const struct ph_thread *e = &t->list[i];
	uint32_t tid = atomic_load(&e->tid);
	int ret;

	*addr = atomic_load(&e->budget);
	if (!tid || !*addr)
		return -ENOENT;
	ret = proc_mem_read(t->pid, *addr, b, sizeof(*b));
	if (ret)
		return ret;
	return b->self == *addr && b->tid == tid ? 0 : -ENOENT;
}
