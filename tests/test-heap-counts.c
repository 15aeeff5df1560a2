// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-heap-counts - heap_counts_read() on this very process: an agent's
 * shared header and list of threads, made up here, with budgets holding
 * counts. The sum is the folded counts plus the budgets of listed threads
 * that run and whose memory is still theirs; a fold in progress (odd
 * fold_seq) is waited out, and a read that never settles says so.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampler/heap/agent/heap_ring.h"
#include "check.h"
#include "sampler/heap/heap_counts.h"

static struct ph_thread list[PH_THREADS];
static struct ph_shared sh;
static struct ph_budget mine, helper, stranger, ended;
static pthread_barrier_t done;
static _Atomic uint32_t helper_tid;

static void enlist(unsigned i, uint32_t tid, struct ph_budget *b)
{
	atomic_store(&list[i].tid, tid);
	atomic_store(&list[i].budget, (uintptr_t)b);
}

/* frees counts down, as the agent's fast path keeps it */
static void budget(struct ph_budget *b, uint32_t tid, uint64_t mallocs,
		   uint64_t frees)
{
	memset(b, 0, sizeof(*b));
	b->self = (uintptr_t)b;
	b->tid = tid;
	b->mallocs = mallocs;
	b->frees = 0 - frees;
}

static uint32_t dead_tid(void)
{
	pid_t p = fork();

	if (!p)
		_exit(0);
	waitpid(p, NULL, 0);
	return (uint32_t)p;
}

/* A second running thread of this process, until the test is done. */
static void *park(void *arg)
{
	(void)arg;
	atomic_store(&helper_tid, (uint32_t)gettid());
	pthread_barrier_wait(&done);
	return NULL;
}

static void test_sum(void)
{
	uint32_t me = (uint32_t)gettid(), gone = dead_tid();
	struct heap_counts c;
	pthread_t th;

	pthread_barrier_init(&done, NULL, 2);
	pthread_create(&th, NULL, park, NULL);
	while (!atomic_load(&helper_tid))
		usleep(1000);
	sh.threads = (uintptr_t)list;
	atomic_store(&sh.folded_mallocs, 1000);	/* threads that ended */
	atomic_store(&sh.folded_frees, 900);
	budget(&mine, me, 70, 7);
	budget(&helper, atomic_load(&helper_tid), 500, 499);
	budget(&stranger, me + 1, 1u << 30, 1u << 30);	/* not me + 1's */
	budget(&ended, gone, 1u << 20, 0);	/* ended without its fold */
	enlist(3, me, &mine);
	enlist(4095, atomic_load(&helper_tid), &helper);
	enlist(7, me, &stranger);
	enlist(9, gone, &ended);
	enlist(11, me, NULL);			/* half listed */
	MUST(heap_counts_read(getpid(), &sh, &c));
	CHECK(c.mallocs == 1000 + 70 + 500 && c.frees == 900 + 7 + 499 &&
	      c.threads == 2 && !c.lossy, "mallocs %llu frees %llu, %u threads",
	      (unsigned long long)c.mallocs, (unsigned long long)c.frees,
	      c.threads);
	/* an ending thread folds: its counts move to the header */
	atomic_fetch_add(&sh.fold_seq, 1);
	atomic_fetch_add(&sh.folded_mallocs, 500);
	atomic_fetch_add(&sh.folded_frees, 499);
	helper.mallocs = helper.frees = 0;
	atomic_fetch_add(&sh.fold_seq, 1);
	atomic_store(&list[4095].tid, 0);
	atomic_store(&sh.count_flags, PH_COUNT_NO_EXIT_HOOK);
	MUST(heap_counts_read(getpid(), &sh, &c));
	CHECK(c.mallocs == 1570 && c.frees == 1406 && c.threads == 1 &&
	      c.lossy, "after a fold: mallocs %llu frees %llu, %u threads",
	      (unsigned long long)c.mallocs, (unsigned long long)c.frees,
	      c.threads);
	/* a fold that never ends (a thread stopped halfway in it) */
	atomic_fetch_add(&sh.fold_seq, 1);
	CHECK(heap_counts_read(getpid(), &sh, &c) == -EAGAIN,
	      "read during a fold");
	atomic_fetch_add(&sh.fold_seq, 1);
	pthread_barrier_wait(&done);
	pthread_join(th, NULL);
}

/* The header and list are the target's: a bad address is an error, a
 * process that is gone -ESRCH. */
static void test_bad(void)
{
	static struct ph_shared bad = { .threads = 16 };
	struct heap_counts c;

	CHECK(heap_counts_read(getpid(), &bad, &c) < 0, "list at 16");
	CHECK(heap_counts_read(dead_tid(), &sh, &c) == -ESRCH, "gone");
}

int main(void)
{
	test_sum();
	test_bad();
	return failures ? 1 : 0;
}
