// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-agent-fast.c - the malloc and free hooks' fast paths
 * (sampler/heap/agent/fast.c): what goes on to the allocator and what to the
 * slow paths, the budget left, and fast_direct(), which must leave an
 * exit indirect when the allocator is out of a direct jump's reach and
 * make it direct when it is within; and the counts of calls they keep in
 * the budget (malloc up, free down, its first free sent to
 * ph_free_first by the borrow out of 0, free(NULL) to the slow path by
 * its filter byte, which live.c keeps set).
 *
 * The "allocator" is two functions here (within reach: this program's
 * own code) and two written into a page mapped 8 GiB away (out of it);
 * the slow paths and what fast.c reads from agent.c (the budget, the
 * live filter) are stand-ins here.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "sampler/heap/agent/agent_i.h"

__thread struct ph_budget ph_tls;
_Atomic uint8_t live_filter[1u << LIVE_FILTER_BITS];
extern uint8_t ph_malloc_exit[], ph_free_exit[];

static int near_mallocs, near_frees, slow_mallocs, slow_frees, first_frees;
static void *freed;
static char blocks[64];

static __attribute__((noinline)) void *near_malloc(size_t n)
{
	near_mallocs++;
	return blocks + n % 8;
}

static __attribute__((noinline)) void near_free(void *p)
{
	near_frees++;
	freed = p;
}

void *ph_malloc_slow(size_t n)
{
	slow_mallocs++;
	return blocks + 32 + n % 8;
}

void ph_free_slow(void *p)
{
	slow_frees++;
	freed = p;
}

void ph_free_first(void *p)
{
	first_frees++;
	freed = p;
}

/*
 * far_malloc returns n + 1 (lea 1(%rdi),%rax; ret); far_free stores p
 * where far_freed points (movabs $far_freed,%rax; mov %rdi,(%rax); ret).
 */
static void *far_freed;
static void *(*far_malloc)(size_t);
static void (*far_free)(void *);

static bool map_far(void)
{
	static const uint8_t m[] = { 0x48, 0x8d, 0x47, 0x01, 0xc3 };
	uint8_t f[14] = { 0x48, 0xb8 };
	uintptr_t code = (uintptr_t)ph_h_malloc & ~(uintptr_t)0xfff;
	uint64_t at = (uintptr_t)&far_freed;
	uint8_t *page = MAP_FAILED;

	for (int k = 8; k < 64 && page == MAP_FAILED; k += 8) {
		uintptr_t hint = code + ((uintptr_t)k << 30);

		page = mmap((void *)hint, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS |
			    MAP_FIXED_NOREPLACE, -1, 0);
		if (page == MAP_FAILED)	/* maybe above the top: below */
			page = mmap((void *)(code - ((uintptr_t)k << 30)),
				    4096, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS |
				    MAP_FIXED_NOREPLACE, -1, 0);
	}
	if (page == MAP_FAILED)
		return false;
	memcpy(f + 2, &at, 8);
	memcpy(f + 10, "\x48\x89\x38\xc3", 4);
	memcpy(page, m, sizeof(m));
	memcpy(page + 64, f, sizeof(f));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC))
		return false;
	far_malloc = (void *(*)(size_t))page;
	far_free = (void (*)(void *))(page + 64);
	return true;
}

static bool exit_is_direct(const uint8_t *site)
{
	return site[0] == 0xe9;
}

/* Out of reach: the exits stay indirect and go where they point. */
static void test_far(void)
{
	CHECK(fast_direct((void *)far_malloc, (void *)far_free) == 0,
	      "direct jumps 8 GiB away");
	CHECK(!exit_is_direct(ph_malloc_exit) && !exit_is_direct(ph_free_exit),
	      "an exit changed");
	ph_tls.left = 1000;
	ph_tls.frees = (uint64_t)-1;	/* a thread that freed before */
	CHECK(ph_h_malloc(100) == (void *)101, "malloc did not go far");
	CHECK(ph_tls.left == 900, "left %llu", (unsigned long long)ph_tls.left);
	ph_h_free((void *)0x12340);
	CHECK(far_freed == (void *)0x12340, "free did not go far: %p",
	      far_freed);
}

/* Within reach: direct exits, and the same decisions as before. */
static void test_near(void)
{
	uintptr_t p = (uintptr_t)blocks + 16;

	CHECK(fast_direct((void *)near_malloc, (void *)near_free) == 2,
	      "not direct within reach");
	CHECK(exit_is_direct(ph_malloc_exit) && exit_is_direct(ph_free_exit),
	      "exits not rewritten");
	ph_tls.left = 1000;
	ph_tls.frees = (uint64_t)-1;
	CHECK(ph_h_malloc(100) == blocks + 4 && near_mallocs == 1,
	      "malloc: %d calls", near_mallocs);
	CHECK(ph_tls.left == 900, "left %llu", (unsigned long long)ph_tls.left);
	/* the budget runs out at size >= left: the slow path, untouched */
	CHECK(ph_h_malloc(900) == blocks + 32 + 4 && slow_mallocs == 1,
	      "size == left: %d slow", slow_mallocs);
	CHECK(ph_h_malloc(5000) && slow_mallocs == 2, "%d slow", slow_mallocs);
	CHECK(ph_tls.left == 900 && near_mallocs == 1, "left %llu, %d calls",
	      (unsigned long long)ph_tls.left, near_mallocs);
	/* free: the filter byte of p decides, and nothing else */
	ph_h_free((void *)p);
	CHECK(near_frees == 1 && slow_frees == 0 && freed == (void *)p,
	      "%d near, %d slow", near_frees, slow_frees);
	live_filter[live_bucket(p)] = 1;
	ph_h_free((void *)p);
	CHECK(near_frees == 1 && slow_frees == 1, "%d near, %d slow",
	      near_frees, slow_frees);
	ph_h_free((void *)(p + 16));	/* the next granule's byte is 0 */
	CHECK(near_frees == 2 && slow_frees == 1, "%d near, %d slow",
	      near_frees, slow_frees);
	live_filter[live_bucket(p)] = 0;
	/* Once direct, an exit stays so: no second rewrite. */
	CHECK(fast_direct((void *)far_malloc, (void *)far_free) == 0,
	      "rewritten twice");
}

/*
 * The counts: one up per malloc that takes the fast path (the slow path
 * counts for itself), one down per free of a block; free(NULL) goes to
 * the slow path (which counts nothing for it) by its bucket's filter
 * byte, as live_reset() leaves it; a free that finds the count at 0 (the
 * thread's first, or its counts folded) goes to ph_free_first, counted.
 */
static void test_counts(void)
{
	uintptr_t p = (uintptr_t)blocks + 48;
	int near0, slow0;

	/* The exits go to the near pair again, direct or not (valgrind
	 * may run a translation of the indirect jump made before). */
	fast_direct((void *)near_malloc, (void *)near_free);
	near0 = near_frees;
	memset(&ph_tls, 0, sizeof(ph_tls));
	ph_tls.left = 1000;
	for (int i = 0; i < 5; i++)
		ph_h_malloc(10);
	CHECK(ph_tls.mallocs == 5 && ph_tls.left == 950, "mallocs %llu",
	      (unsigned long long)ph_tls.mallocs);
	ph_h_malloc(2000);	/* the slow path's to count */
	CHECK(ph_tls.mallocs == 5 && ph_tls.left == 950,
	      "slow: mallocs %llu, left %llu", (unsigned long long)ph_tls.mallocs,
	      (unsigned long long)ph_tls.left);
	ph_h_malloc(950);	/* size == left: slow, left as it was */
	CHECK(ph_tls.mallocs == 5 && ph_tls.left == 950, "left %llu",
	      (unsigned long long)ph_tls.left);
	live_filter[live_bucket(0)] = 1;
	slow0 = slow_frees;
	ph_h_free(NULL);
	CHECK(ph_tls.frees == 0 && first_frees == 0 &&
	      slow_frees == slow0 + 1 && near_frees == near0 && freed == NULL,
	      "free(NULL): frees %lld, %d first, %d slow",
	      (long long)ph_tls.frees, first_frees, slow_frees - slow0);
	ph_h_free((void *)p);
	CHECK(first_frees == 1 && freed == (void *)p &&
	      ph_tls.frees == (uint64_t)-1 && near_frees == near0,
	      "first free: %d first, frees %lld", first_frees,
	      (long long)ph_tls.frees);
	for (int i = 0; i < 3; i++)
		ph_h_free((void *)p);
	CHECK(first_frees == 1 && near_frees == near0 + 3 &&
	      ph_tls.frees == (uint64_t)-4, "frees %lld, %d first",
	      (long long)ph_tls.frees, first_frees);
	ph_h_free(NULL);
	CHECK(ph_tls.frees == (uint64_t)-4 && near_frees == near0 + 3 &&
	      slow_frees == slow0 + 2, "free(NULL) counted");
	live_filter[live_bucket(0)] = 0;
	/* folded: the count is kept at 0, every free goes the slow way */
	ph_tls.frees = 0;
	ph_h_free((void *)p);
	CHECK(first_frees == 2, "%d first", first_frees);
}

int main(void)
{
	if (!map_far())
		die("no page 8-56 GiB away from the code", -1);
	test_far();
	test_near();
	test_counts();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-agent-fast: all checks passed\n");
	return 0;
}
