// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-heap-budget - heap_budgets_reset() on this very process: an agent's
 * list of threads and their budgets, made up here, and what the daemon may
 * and may not write into them.
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampler/heap/agent/heap_ring.h"
#include "check.h"
#include "sampler/heap/heap_budget.h"

#define GEN 7

static struct ph_thread list[PH_THREADS];
static struct ph_budget mine, current, stranger, zero;

static void enlist(unsigned i, uint32_t tid, struct ph_budget *b)
{
	atomic_store(&list[i].tid, tid);
	atomic_store(&list[i].budget, (uintptr_t)b);
}

static void budget(struct ph_budget *b, uint32_t tid, uint32_t gen,
		   uint64_t left)
{
	memset(b, 0, sizeof(*b));
	b->self = (uintptr_t)b;
	b->tid = tid;
	b->gen = gen;
	b->left = left;
}

/* A tid that is certainly not one of ours: a child that has exited. */
static uint32_t dead_tid(void)
{
	pid_t p = fork();

	if (!p)
		_exit(0);
	waitpid(p, NULL, 0);
	return (uint32_t)p;
}

static void test_reset(void)
{
	uint32_t me = (uint32_t)gettid(), gone = dead_tid();
	struct heap_budget_stats st;

	budget(&mine, me, GEN - 1, 300000);	/* old rate: zeroed */
	budget(&current, me, GEN, 4000);	/* drawn at the new one */
	budget(&stranger, me + 1, GEN - 1, 5000); /* not this tid's */
	budget(&zero, me, GEN - 1, 0);		/* nothing to do */
	enlist(10, me, &mine);
	enlist(11, me, &current);
	enlist(12, me, &stranger);
	enlist(13, me, &zero);
	enlist(14, gone, &mine);		/* ended: the agent's to free */
	enlist(15, me, NULL);			/* half listed */
	MUST(heap_budgets_reset(getpid(), (uintptr_t)list, GEN, &st));
	CHECK(mine.left == 0, "%lu", (unsigned long)mine.left);
	CHECK(current.left == 4000, "%lu", (unsigned long)current.left);
	CHECK(stranger.left == 5000, "%lu", (unsigned long)stranger.left);
	/* The agent may have given it to a new thread since: not ours. */
	CHECK(atomic_load(&list[14].tid) == gone, "entry of an ended thread "
	      "freed by the daemon");
	CHECK(atomic_load(&list[10].tid) == me, "a live entry freed");
	CHECK(st.listed == 6 && st.gone == 1 && st.zeroed == 1,
	      "listed %u gone %u zeroed %u", st.listed, st.gone, st.zeroed);
}

/* The list is the target's: an address that is not mapped is an error,
 * not a crash. */
static void test_bad_list(void)
{
	struct heap_budget_stats st;

	CHECK(heap_budgets_reset(getpid(), 16, GEN, &st) < 0, "list at 16");
	CHECK(heap_budgets_reset(dead_tid(), (uintptr_t)list, GEN, &st) ==
	      -ESRCH, "a process that is gone");
}

int main(void)
{
	test_reset();
	test_bad_list();
	return failures ? 1 : 0;
}
