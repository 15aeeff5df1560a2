// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-timeq.c - time-merged record queues (sampler/perf/timeq.h): the merge
 * order across sources, the cutoff, records in place while others are
 * appended, chunks consumed and reused, the memory bound.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sampler/perf/timeq.h"


struct payload {
	uint64_t time;
	uint32_t source, len;
	uint8_t fill[];		/* len bytes of (time & 0xff) */
};

static bool push(struct timeq *q, int src, uint64_t time, uint32_t len)
{
	struct payload *p = timeq_reserve(q, src, time, sizeof(*p) + len);

	if (!p)
		return false;
	p->time = time;
	p->source = src;
	p->len = len;
	memset(p->fill, (int)(time & 0xff), len);
	return true;
}

/* A payload handed out is whole: its bytes are the ones pushed. */
static void assert_sane_payload(const struct payload *p)
{
	for (uint32_t i = 0; i < p->len; i++)
		if (p->fill[i] != (uint8_t)(p->time & 0xff)) {
			CHECK(0, "time %llu byte %u",
			      (unsigned long long)p->time, i);
			return;
		}
}

static void test_merge_and_cutoff(void)
{
	static const uint64_t times[3][4] = {
		{ 10, 40, 70, 100 }, { 20, 30, 80, 90 }, { 5, 50, 60, 110 },
	};
	uint64_t last = 0;
	struct timeq *q;
	int n = 0, src;

	MUST(timeq_new(3, 1 << 20, &q));
	for (int s = 0; s < 3; s++)
		for (int i = 0; i < 4; i++)
			CHECK(push(q, s, times[s][i], 100), "push");
	/* Up to 60 only: 5 10 20 30 40 50 60. */
	for (struct payload *p; (p = timeq_oldest(q, 60, &src)); n++) {
		CHECK(p->time >= last && (int)p->source == src,
		      "%llu after %llu", (unsigned long long)p->time,
		      (unsigned long long)last);
		assert_sane_payload(p);
		last = p->time;
		timeq_pop(q, src);
	}
	CHECK(n == 7 && last == 60, "%d up to %llu", n,
	      (unsigned long long)last);
	/* A record appended now, older than what is left of other sources,
	 * comes before them (each source's own order is the caller's
	 * promise). */
	CHECK(push(q, 1, 95, 8), "push");
	CHECK(((struct payload *)timeq_oldest(q, UINT64_MAX, &src))->time == 70,
	      "70 first");
	for (struct payload *p; (p = timeq_oldest(q, UINT64_MAX, &src)); n++) {
		CHECK(p->time >= last, "%llu", (unsigned long long)p->time);
		last = p->time;
		timeq_pop(q, src);
	}
	CHECK(n == 13 && !timeq_bytes(q), "%d, %zu bytes left", n,
	      timeq_bytes(q));
	timeq_free(q);
	timeq_free(NULL);
}

static void test_chunks_and_bound(void)
{
	struct timeq *q;
	size_t pushed = 0;
	uint64_t t = 0, seen = 0;
	int src;

	/* 20 MiB through one source in records of 8 KiB: several chunks,
	 * each freed once read; reads interleaved with appends. */
	MUST(timeq_new(2, 64u << 20, &q));
	for (int round = 0; round < 10; round++) {
		for (int i = 0; i < 256; i++, pushed++)
			CHECK(push(q, round & 1, ++t, 8192), "push %zu",
			      pushed);
		for (int i = 0; i < 200; i++) {
			struct payload *p = timeq_oldest(q, UINT64_MAX, &src);

			CHECK(p && p->time == seen + 1, "%llu",
			      p ? (unsigned long long)p->time : 0ull);
			if (!p)
				break;
			assert_sane_payload(p);
			seen = p->time;
			timeq_pop(q, src);
		}
	}
	CHECK(timeq_bytes(q) < 5u << 20, "%zu held", timeq_bytes(q));
	while (timeq_oldest(q, UINT64_MAX, &src))
		timeq_pop(q, src);
	CHECK(!timeq_bytes(q), "%zu", timeq_bytes(q));
	/* The bound: past max_bytes, no room. */
	while (push(q, 0, ++t, 1 << 20))
		;
	CHECK(timeq_bytes(q) <= 64u << 20 && timeq_bytes(q) > 60u << 20, "%zu",
	      timeq_bytes(q));
	timeq_free(q);
}

int main(void)
{
	test_merge_and_cutoff();
	test_chunks_and_bound();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-timeq: all checks passed\n");
	return 0;
}
