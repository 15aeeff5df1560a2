// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-heap-throttle.c - the heap agent's sampling throttle
 * (sampler/heap/heap_throttle.h): a process under the cap is left alone,
 * one over it is brought under it within a period and kept there without
 * see-sawing, the factor eases off when the process does, and never
 * passes its bound; counts and clocks that go back change nothing. A
 * session that names a rate, the default's value too, turns it off.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "sampler/heap/heap_throttle.h"

#define MS 1000000ull
#define STEP (10 * MS)	/* the consumer's poll, when idle */

/*
 * A process that would take base_per_s samples a second at the default
 * rate, so base_per_s / factor at the throttled one, fed for ms
 * milliseconds. Returns how many times the factor changed.
 */
static unsigned run(struct heap_throttle *t, uint64_t *now, double *count,
		    double base_per_s, uint64_t ms)
{
	unsigned changes = 0;

	for (uint64_t end = *now + ms * MS; *now < end;) {
		*now += STEP;
		*count += base_per_s / t->factor * STEP / 1e9;
		changes += heap_throttle_update(t, *now, (uint64_t)*count);
	}
	return changes;
}

static void test_under_the_cap(void)
{
	struct heap_throttle t = { 0 };
	uint64_t now = 5 * MS;
	double n = 0;

	heap_throttle_start(&t, now, 0);
	CHECK(run(&t, &now, &n, 1000, 10000) == 0, "a quiet process");
	CHECK(run(&t, &now, &n, HEAP_THROTTLE_PER_S, 10000) == 0,
	      "at the cap: %u", t.factor);
	CHECK(t.factor == 1 && t.raises == 0, "%u %llu", t.factor,
	      (unsigned long long)t.raises);
}

/* The bench's loop: 27,000 samples a second at 512 KiB. */
static void test_over_the_cap(void)
{
	struct heap_throttle t = { 0 };
	uint64_t now = 0;
	double n = 0, n0;

	heap_throttle_start(&t, now, 0);
	run(&t, &now, &n, 27000, HEAP_THROTTLE_PERIOD_NS / MS + 10);
	CHECK(t.factor == 8, "one period: %u", t.factor);
	n0 = n;
	CHECK(run(&t, &now, &n, 27000, 20000) == 0, "see-saw: %u", t.factor);
	CHECK((n - n0) / 20 <= HEAP_THROTTLE_PER_S, "%.0f a second",
	      (n - n0) / 20);
	CHECK(t.raises == 1, "%llu", (unsigned long long)t.raises);
	/* just over: the next power of two */
	heap_throttle_start(&t, now, (uint64_t)n);
	run(&t, &now, &n, HEAP_THROTTLE_PER_S * 1.2, 1000);
	CHECK(t.factor == 2, "%u", t.factor);
}

static void test_eases_off(void)
{
	struct heap_throttle t = { 0 };
	uint64_t now = 0, t0;
	double n = 0;

	heap_throttle_start(&t, now, 0);
	run(&t, &now, &n, 27000, 1000);
	CHECK(t.factor == 8, "%u", t.factor);
	/* a quarter of the cap or more at the coarser rate: kept */
	run(&t, &now, &n, 8 * HEAP_THROTTLE_PER_S / 3, 5000);
	CHECK(t.factor == 8, "eased while busy: %u", t.factor);
	t0 = now;
	while (t.factor > 1 && now - t0 < 60000 * MS)
		run(&t, &now, &n, 100, 10);
	CHECK(t.factor == 1, "%u", t.factor);
	/* a halving a calm second: three of them */
	CHECK(now - t0 >= 3 * HEAP_THROTTLE_CALM * HEAP_THROTTLE_PERIOD_NS &&
	      now - t0 <= 3 * (HEAP_THROTTLE_CALM + 1) *
			  HEAP_THROTTLE_PERIOD_NS,
	      "%llu ms", (unsigned long long)(now - t0) / MS);
	/* and back when the process is busy again */
	run(&t, &now, &n, 27000, 1000);
	CHECK(t.factor == 8 && t.raises == 2, "%u %llu", t.factor,
	      (unsigned long long)t.raises);
}

static void test_bounded(void)
{
	struct heap_throttle t = { 0 };
	uint64_t now = 0;
	double n = 0;

	heap_throttle_start(&t, now, 0);
	run(&t, &now, &n, 1e12, 5000);
	CHECK(t.factor == HEAP_THROTTLE_MAX, "%u", t.factor);
}

static void test_backwards(void)
{
	struct heap_throttle t = { 0 };

	heap_throttle_start(&t, 1000 * MS, 1000000);
	/* armed anew: the count starts over, and so does the period */
	CHECK(!heap_throttle_update(&t, 1500 * MS, 10), "count back");
	CHECK(t.samples0 == 10 && t.since_ns == 1500 * MS, "not restarted");
	CHECK(!heap_throttle_update(&t, 1400 * MS, 1000000), "clock back");
	CHECK(t.factor == 1, "%u", t.factor);
	/* and a period is needed before a verdict */
	CHECK(!heap_throttle_update(&t, 1400 * MS + HEAP_THROTTLE_PERIOD_NS -
					1, 1000000000), "early");
	CHECK(heap_throttle_update(&t, 1400 * MS + HEAP_THROTTLE_PERIOD_NS,
				   1000000000), "late");
}

/* Sessions' entries: 0 for the default, the rate for a named one; the
 * agent samples at the finest, throttled only when none is named. */
static void test_named_rates(void)
{
	uint64_t both[] = { 0, 1048576 }, fine[] = { 0, 262144 },
		 deflt[] = { 0, 0 }, named[] = { 524288 };
	bool n;

	CHECK(heap_throttle_session_rate(524288, false) == 0, "default");
	CHECK(heap_throttle_session_rate(524288, true) == 524288, "named");
	CHECK(heap_throttle_session_rate(1048576, false) == 1048576,
	      "another rate is named");
	CHECK(heap_throttle_session_rate(0, true) == 1, "0: every one");
	CHECK(heap_throttle_asked(NULL, 0, &n) == 524288 && !n, "none");
	CHECK(heap_throttle_asked(deflt, 2, &n) == 524288 && !n, "defaults");
	CHECK(heap_throttle_asked(named, 1, &n) == 524288 && n,
	      "the default's value, named");
	CHECK(heap_throttle_asked(both, 2, &n) == 524288 && n,
	      "a coarser one named: the default's, not throttled");
	CHECK(heap_throttle_asked(fine, 2, &n) == 262144 && n, "finer");
}

int main(void)
{
	test_named_rates();
	test_under_the_cap();
	test_over_the_cap();
	test_eases_off();
	test_bounded();
	test_backwards();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-heap-throttle: all checks passed\n");
	return 0;
}
