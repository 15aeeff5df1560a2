// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-heap-pair.c - pairing of allocator entries and returns
 * (sampler/heap/heap_pair.h): each function's size and block, realloc's two
 * halves, nesting (realloc(NULL) jumping to malloc, memalign calling
 * it), records the kernel dropped on either side, threads apart, stale
 * entries of another stack, posix_memalign's pointer read back.
 *
 * Events are made up: registers with the arguments and a stack pointer,
 * a stack whose first word is the return address.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sampler/heap/heap_pair.h"


#define TRAMP 0x7fffffffe000ull	/* where the kernel's trampoline is */
#define RET_A 0x401234ull	/* return addresses in "the program" */
#define RET_B 0x405678ull
#define S 0x7ffd0000ull		/* a stack pointer at an entry */

/* What the pairing handed on, in order. */
struct out {
	char what;		/* 'a' alloc, 'f' free */
	uint64_t addr, size, ret;	/* ret: the alloc's stack[0] */
	uint32_t tid;
	size_t stack_len;
};

static struct out outs[256];
static int nouts;
static uint64_t memory_at_pp = 0x9000;	/* *pp for posix_memalign */
static bool read_fails;

static void on_alloc(void *arg, const struct heap_pair_call *c,
		     uint64_t addr, uint64_t size)
{
	uint64_t ret = 0;

	(void)arg;
	if (c->stack_len >= sizeof(ret))
		memcpy(&ret, c->stack, sizeof(ret));
	outs[nouts++] = (struct out){ 'a', addr, size, ret, c->tid,
				      c->stack_len };
}

static void on_free(void *arg, uint64_t addr)
{
	(void)arg;
	outs[nouts++] = (struct out){ .what = 'f', .addr = addr };
}

static int read_ptr(void *arg, uint64_t where, uint64_t *val)
{
	(void)arg;
	if (read_fails || where != 0x5000)
		return -14;
	*val = memory_at_pp;
	return 0;
}

static bool trampoline(void *arg, uint64_t addr)
{
	(void)arg;
	return addr >= TRAMP && addr < TRAMP + 4096;
}

static const struct heap_pair_ops ops = {
	.alloc = on_alloc, .free = on_free, .read_ptr = read_ptr,
	.trampoline = trampoline,
};

static struct heap_pair *fresh(void)
{
	struct heap_pair *p;

	nouts = 0;
	read_fails = false;
	MUST(heap_pair_new(&ops, NULL, &p));
	return p;
}

static void enter(struct heap_pair *p, uint32_t tid, enum heap_fn fn,
		  uint64_t sp, uint64_t ret, uint64_t a0, uint64_t a1,
		  uint64_t a2)
{
	struct unwind_regs regs = { { 0 } };
	uint64_t stack[4] = { ret, 1, 2, 3 };

	regs.r[UREG_RSP] = sp;
	regs.r[UREG_RDI] = a0;
	regs.r[UREG_RSI] = a1;
	regs.r[UREG_RDX] = a2;
	MUST(heap_pair_entry(p, tid, fn, &regs, stack,
			     fn == HEAP_FN_FREE ? 0 : sizeof(stack)));
}

static void leave(struct heap_pair *p, uint32_t tid, uint64_t entry_sp,
		  uint64_t rax)
{
	heap_pair_return(p, tid, entry_sp + 8, rax);
}

/* The invariant of every test: each alloc carries its own entry's whole
 * stack copy, so it can be unwound. */
static void assert_sane_outs(void)
{
	for (int i = 0; i < nouts; i++)
		if (outs[i].what == 'a')
			CHECK(outs[i].stack_len == 32 && outs[i].ret &&
			      !trampoline(NULL, outs[i].ret),
			      "alloc %d: stack %zu ret %#llx", i,
			      outs[i].stack_len,
			      (unsigned long long)outs[i].ret);
}

static bool is(int i, char what, uint64_t addr, uint64_t size)
{
	return i < nouts && outs[i].what == what && outs[i].addr == addr &&
	       (what == 'f' || outs[i].size == size);
}

static void test_sizes(void)
{
	struct heap_pair *p = fresh();
	struct heap_pair_stats st;

	enter(p, 1, HEAP_FN_MALLOC, S, RET_A, 48, 0, 0);
	leave(p, 1, S, 0x1000);
	enter(p, 1, HEAP_FN_CALLOC, S, RET_A, 25, 40, 0);
	leave(p, 1, S, 0x2000);
	enter(p, 1, HEAP_FN_ALIGNED_ALLOC, S, RET_A, 256, 1024, 0);
	leave(p, 1, S, 0x3000);
	enter(p, 1, HEAP_FN_MEMALIGN, S, RET_A, 64, 100, 0);
	leave(p, 1, S, 0x3100);
	enter(p, 1, HEAP_FN_VALLOC, S, RET_A, 10, 0, 0);
	leave(p, 1, S, 0x4000);
	enter(p, 1, HEAP_FN_PVALLOC, S, RET_A, 20, 0, 0);
	leave(p, 1, S, 0x5000);
	enter(p, 1, HEAP_FN_MALLOC, S, RET_A, 0, 0, 0);	/* malloc(0) */
	leave(p, 1, S, 0x6000);
	CHECK(nouts == 7, "%d", nouts);
	CHECK(is(0, 'a', 0x1000, 48), "malloc");
	CHECK(is(1, 'a', 0x2000, 1000), "calloc");
	CHECK(is(2, 'a', 0x3000, 1024), "aligned_alloc");
	CHECK(is(3, 'a', 0x3100, 100), "memalign");
	CHECK(is(4, 'a', 0x4000, 10), "valloc");
	CHECK(is(5, 'a', 0x5000, 20), "pvalloc");
	CHECK(is(6, 'a', 0x6000, 0), "malloc(0)");
	/* Failures allocate nothing: NULL, calloc's overflow. */
	enter(p, 1, HEAP_FN_MALLOC, S, RET_A, 1ull << 60, 0, 0);
	leave(p, 1, S, 0);
	enter(p, 1, HEAP_FN_CALLOC, S, RET_A, 1ull << 40, 1ull << 40, 0);
	leave(p, 1, S, 0);
	CHECK(nouts == 7, "%d", nouts);
	heap_pair_stats(p, &st);
	CHECK(st.calls == 9 && !st.nested && !st.unpaired && !st.dropped,
	      "calls %llu", (unsigned long long)st.calls);
	assert_sane_outs();
	heap_pair_free(p);
}

static void test_realloc_and_free(void)
{
	struct heap_pair *p = fresh();

	/* The old block goes at the entry: before the return, another
	 * thread may be given it. */
	enter(p, 1, HEAP_FN_REALLOC, S, RET_A, 0x1000, 2000, 0);
	CHECK(is(0, 'f', 0x1000, 0), "realloc frees at its entry");
	leave(p, 1, S, 0x2000);
	CHECK(is(1, 'a', 0x2000, 2000), "then allocates");
	enter(p, 1, HEAP_FN_FREE, S, 0, 0x2000, 0, 0);
	CHECK(is(2, 'f', 0x2000, 0), "free");
	CHECK(nouts == 3, "%d", nouts);
	assert_sane_outs();
	heap_pair_free(p);
}

static void test_nesting(void)
{
	struct heap_pair *p = fresh();
	struct heap_pair_stats st;

	/* glibc's realloc(NULL, n) jumps to malloc: same stack pointer,
	 * the return address already the trampoline; both returns come at
	 * the one ret, the jumped-to function's first. */
	enter(p, 1, HEAP_FN_REALLOC, S, RET_A, 0, 1000, 0);
	enter(p, 1, HEAP_FN_MALLOC, S, TRAMP, 1000, 0, 0);
	leave(p, 1, S, 0x1000);
	leave(p, 1, S, 0x1000);
	CHECK(nouts == 1 && is(0, 'a', 0x1000, 1000) && outs[0].ret == RET_A,
	      "tail call: %d outs", nouts);
	/* memalign calling malloc deeper on the stack; realloc(p, 0)
	 * calling free. */
	enter(p, 1, HEAP_FN_MEMALIGN, S, RET_B, 16, 64, 0);
	enter(p, 1, HEAP_FN_MALLOC, S - 0x40, RET_A, 64, 0, 0);
	leave(p, 1, S - 0x40, 0x2000);
	leave(p, 1, S, 0x2000);
	CHECK(nouts == 2 && is(1, 'a', 0x2000, 64) && outs[1].ret == RET_B,
	      "memalign: %d outs", nouts);
	enter(p, 1, HEAP_FN_REALLOC, S, RET_A, 0x2000, 0, 0);
	enter(p, 1, HEAP_FN_FREE, S - 0x30, 0, 0x2000, 0, 0);
	leave(p, 1, S, 0);
	CHECK(nouts == 3 && is(2, 'f', 0x2000, 0), "realloc(p, 0): %d outs",
	      nouts);
	heap_pair_stats(p, &st);
	CHECK(st.calls == 3 && st.nested == 3 && st.frees == 1 &&
	      !st.unpaired && !st.dropped, "calls %llu nested %llu",
	      (unsigned long long)st.calls, (unsigned long long)st.nested);
	assert_sane_outs();
	heap_pair_free(p);
}

static void test_dropped_records(void)
{
	struct heap_pair *p = fresh();
	struct heap_pair_stats st;

	/* A return lost: the next call from the same frame (same stack
	 * pointer, a real return address) replaces the stale entry. */
	enter(p, 1, HEAP_FN_MALLOC, S, RET_A, 10, 0, 0);
	enter(p, 1, HEAP_FN_MALLOC, S, RET_B, 20, 0, 0);
	leave(p, 1, S, 0x1000);
	CHECK(nouts == 1 && is(0, 'a', 0x1000, 20) && outs[0].ret == RET_B,
	      "lost return: %d outs", nouts);
	/* An entry lost: its return pairs with nothing. */
	leave(p, 1, S, 0x2000);
	CHECK(nouts == 1, "lost entry: %d outs", nouts);
	/* A return lost deeper: the outer call's return drops it. */
	enter(p, 1, HEAP_FN_REALLOC, S, RET_A, 0, 30, 0);
	enter(p, 1, HEAP_FN_MALLOC, S - 0x40, RET_B, 30, 0, 0);
	leave(p, 1, S, 0x3000);
	CHECK(nouts == 2 && is(1, 'a', 0x3000, 30) && outs[1].ret == RET_A,
	      "lost inner return: %d outs", nouts);
	/* A stale entry far above (another stack) does not hold a call on
	 * this one as nested. */
	enter(p, 1, HEAP_FN_MALLOC, S, RET_A, 40, 0, 0);
	enter(p, 1, HEAP_FN_MALLOC, S - 0x100000, RET_B, 50, 0, 0);
	leave(p, 1, S - 0x100000, 0x4000);
	CHECK(nouts == 3 && is(2, 'a', 0x4000, 50), "other stack: %d outs",
	      nouts);
	heap_pair_stats(p, &st);
	CHECK(st.unpaired == 1 && st.dropped == 3, "unpaired %llu dropped %llu",
	      (unsigned long long)st.unpaired,
	      (unsigned long long)st.dropped);
	assert_sane_outs();
	heap_pair_free(p);
}

static void test_threads(void)
{
	struct heap_pair *p = fresh();

	/* Same stack pointers, other threads: nothing shared. Many threads
	 * make the table grow. */
	for (uint32_t tid = 1; tid <= 200; tid++)
		enter(p, tid, HEAP_FN_MALLOC, S, RET_A, tid, 0, 0);
	for (uint32_t tid = 200; tid >= 1; tid--)
		leave(p, tid, S, 0x10000 + tid);
	CHECK(nouts == 200, "%d", nouts);
	for (int i = 0; i < nouts && i < 200; i++)
		CHECK(outs[i].tid == 200u - i && outs[i].size == 200u - i &&
		      outs[i].addr == 0x10000 + 200u - i, "thread %d", i);
	heap_pair_free(p);
}

static void test_posix_memalign(void)
{
	struct heap_pair *p = fresh();

	enter(p, 1, HEAP_FN_POSIX_MEMALIGN, S, RET_A, 0x5000, 64, 4096);
	leave(p, 1, S, 0);
	CHECK(is(0, 'a', 0x9000, 4096), "the block from *pp");
	enter(p, 1, HEAP_FN_POSIX_MEMALIGN, S, RET_A, 0x5000, 64, 4096);
	leave(p, 1, S, 12);	/* ENOMEM */
	CHECK(nouts == 1, "a failure allocates nothing: %d", nouts);
	read_fails = true;
	enter(p, 1, HEAP_FN_POSIX_MEMALIGN, S, RET_A, 0x5000, 64, 4096);
	leave(p, 1, S, 0);
	CHECK(is(1, 'a', 0, 4096), "counted without an address");
	assert_sane_outs();
	heap_pair_free(p);
}

static void test_runaway_nesting(void)
{
	struct heap_pair *p = fresh();
	struct heap_pair_stats st;

	for (int i = 0; i <= HEAP_PAIR_MAX_NEST; i++)
		enter(p, 1, HEAP_FN_MALLOC, S - 0x40 * i, RET_A, 8, 0, 0);
	for (int i = HEAP_PAIR_MAX_NEST; i >= 0; i--)
		leave(p, 1, S - 0x40 * i, 0x1000 + i);
	CHECK(nouts == 1 && is(0, 'a', 0x1000, 8), "%d outs", nouts);
	heap_pair_stats(p, &st);
	CHECK(st.unpaired == 1, "the one past the limit: %llu",
	      (unsigned long long)st.unpaired);
	heap_pair_free(p);
	heap_pair_free(NULL);
}

int main(void)
{
	CHECK(!strcmp(heap_fn_name(HEAP_FN_POSIX_MEMALIGN), "posix_memalign"),
	      "%s", heap_fn_name(HEAP_FN_POSIX_MEMALIGN));
	test_sizes();
	test_realloc_and_free();
	test_nesting();
	test_dropped_records();
	test_threads();
	test_posix_memalign();
	test_runaway_nesting();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-heap-pair: all checks passed\n");
	return 0;
}
