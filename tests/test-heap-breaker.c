// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-heap-breaker.c - the uprobe fallback's breaker
 * (sampler/heap/heap_breaker.h): the burst allowance, the sustained rate it
 * lets through and the one it stops, credit that does not pile up,
 * counts that go backwards, intervals of any length.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "sampler/heap/heap_breaker.h"


#define HIT HEAP_BREAKER_HIT_NS
#define BURST_HITS (HEAP_BREAKER_BURST_NS / HEAP_BREAKER_HIT_NS)
#define MS 1000000ull

/* Never more than the burst in hand, never tripped back. */
static void assert_sane_breaker(const struct heap_breaker *b, bool was)
{
	CHECK(b->tokens_ns <= (double)HEAP_BREAKER_BURST_NS, "%f",
	      b->tokens_ns);
	CHECK(!was || b->tripped, "untripped");
}

/*
 * A target that runs `steps` intervals, each `other_ns` of its own work
 * and `hits` probe hits (whose cost its CPU clock counts too). Returns
 * the step it tripped at, or -1.
 */
static long run(struct heap_breaker *b, uint64_t *cpu, uint64_t *hits,
		long steps, uint64_t other_ns, uint64_t step_hits)
{
	for (long i = 0; i < steps; i++) {
		bool was = b->tripped;

		*cpu += other_ns + step_hits * HIT;
		*hits += step_hits;
		if (heap_breaker_update(b, *cpu, *hits)) {
			assert_sane_breaker(b, was);
			return i;
		}
		assert_sane_breaker(b, was);
	}
	return -1;
}

static void test_burst(void)
{
	struct heap_breaker b;
	uint64_t cpu = 5 * MS, hits = 7;

	/* One burst just within the allowance, on an otherwise idle
	 * process: counted whole. */
	heap_breaker_init(&b, cpu, hits);
	CHECK(run(&b, &cpu, &hits, 1, 0, BURST_HITS) == -1, "burst tripped");
	/* One hit more, nothing earned meanwhile: tripped, and stays. */
	CHECK(run(&b, &cpu, &hits, 1, 0, 1) == 0, "not tripped");
	CHECK(heap_breaker_update(&b, cpu + 1000 * MS, hits), "untripped");
}

static void test_sustained(void)
{
	struct heap_breaker b;
	uint64_t cpu = 0, hits = 0;
	/* Probe time 4% of the work: 100 ms of work, 4 ms of hits. */
	uint64_t under = 4 * MS / HIT, over = 8 * MS / HIT;
	long at;

	heap_breaker_init(&b, cpu, hits);
	CHECK(run(&b, &cpu, &hits, 10000, 100 * MS, under) == -1,
	      "4%% tripped it");
	/* 8%: the deficit, 3 ms an interval, empties the burst in about
	 * 100 / 3 intervals. */
	heap_breaker_init(&b, cpu, hits);
	at = run(&b, &cpu, &hits, 10000, 100 * MS, over);
	CHECK(at >= 25 && at <= 40, "tripped at %ld", at);
	/* A malloc-heavy loop: all of its time in the probes. */
	heap_breaker_init(&b, cpu, hits);
	at = run(&b, &cpu, &hits, 10000, 0, 10 * MS / HIT);
	CHECK(at == 10, "tripped at %ld", at);
}

static void test_no_hoarding(void)
{
	struct heap_breaker b;
	uint64_t cpu = 0, hits = 0;

	/* An hour of work without an allocation earns no more than the
	 * burst: 150 ms of probes at once still trips. */
	heap_breaker_init(&b, cpu, hits);
	CHECK(run(&b, &cpu, &hits, 1, 3600000 * MS, 0) == -1, "idle tripped");
	CHECK(run(&b, &cpu, &hits, 1, 0, 150 * MS / HIT) == 0,
	      "a hoard let 150 ms through");
}

static void test_backwards_and_intervals(void)
{
	struct heap_breaker a, b;
	uint64_t cpu = 1000 * MS, hits = 100;

	/* Counts that go down (a process gone: its clock reads 0) change
	 * nothing. */
	heap_breaker_init(&a, cpu, hits);
	CHECK(!heap_breaker_update(&a, 0, 0), "tripped on going back");
	CHECK(!heap_breaker_update(&a, cpu, hits), "tripped");
	CHECK(a.tokens_ns == (double)HEAP_BREAKER_BURST_NS, "%f", a.tokens_ns);
	/* A steady 6%: the same totals fed in one interval or in five
	 * hundred give the same bucket (the burst half spent). */
	heap_breaker_init(&a, 0, 0);
	heap_breaker_init(&b, 0, 0);
	cpu = hits = 0;
	CHECK(run(&a, &cpu, &hits, 500, 10 * MS, 50) == -1, "many small");
	CHECK(!heap_breaker_update(&b, cpu, hits), "one large");
	CHECK(fabs(a.tokens_ns - b.tokens_ns) < 1e3, "%f vs %f", a.tokens_ns,
	      b.tokens_ns);
	CHECK(a.tokens_ns > 40 * MS && a.tokens_ns < 60 * MS, "%f",
	      a.tokens_ns);
}

int main(void)
{
	test_burst();
	test_sustained();
	test_no_hoarding();
	test_backwards_and_intervals();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-heap-breaker: all checks passed\n");
	return 0;
}
