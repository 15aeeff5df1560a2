// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-past - the model and renderers behind the past (SPEC §10):
 * profile_append() between profiles whose tables differ (the recorder's
 * whole-host reads, base= differences), the table of deltas (diff.h),
 * the differential flame graph (flame.h, diff) and the trace events of a
 * timeline (trace.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "render/diff.h"
#include "render/flame.h"
#include "sampler/model/profile.h"
#include "sampler/model/profile_merge.h"
#include "render/trace.h"

#define PERIOD 10000000ll

/*
 * A cpu profile of main -> a (na samples) and main -> b (nb), thread 7;
 * each sample with a ts label when timeline (one sample per period,
 * a's first, then b's). Functions added in `order` so that ids differ
 * between two such profiles.
 */
static struct profile *prof(int64_t na, int64_t nb, bool timeline,
			    bool reversed)
{
	struct profile *p;
	struct pf_line l = { 0 };
	uint64_t fa, fb, fm, la, lb, lm;
	struct pf_label lab[3];

	MUST(profile_new(&p));
	MUST(profile_add_sample_type(p, "samples", "count"));
	MUST(profile_add_sample_type(p, "cpu", "nanoseconds"));
	MUST(profile_set_period(p, "cpu", "nanoseconds", PERIOD));
	profile_header(p)->pid = 42;
	profile_header(p)->command = profile_intern(p, "app \"x\"");
	if (reversed)
		MUST(profile_add_function(p, "b", NULL, NULL, 0, &fb));
	MUST(profile_add_function(p, "main", NULL, NULL, 0, &fm));
	MUST(profile_add_function(p, "a", NULL, NULL, 0, &fa));
	if (!reversed)
		MUST(profile_add_function(p, "b", NULL, NULL, 0, &fb));
	l.function_id = fm;
	MUST(profile_add_location(p, 0, 0x10, &l, 1, &lm));
	l.function_id = fa;
	MUST(profile_add_location(p, 0, 0x20, &l, 1, &la));
	l.function_id = fb;
	MUST(profile_add_location(p, 0, 0x30, &l, 1, &lb));
	lab[0] = (struct pf_label){ profile_intern(p, "thread"),
				    profile_intern(p, "7"), 0, 0 };
	lab[1] = (struct pf_label){ profile_intern(p, "thread_name"),
				    profile_intern(p, "w"), 0, 0 };
	lab[2] = (struct pf_label){ .key = profile_intern(p, "ts") };
	for (int64_t i = 0; i < na + nb; i++) {
		uint64_t locs[2] = { i < na ? la : lb, lm };
		int64_t v[2] = { timeline ? 1 : (i < na ? na : nb), 0 };

		v[1] = v[0] * PERIOD;
		lab[2].num = (i + 1) * PERIOD;
		MUST(profile_add_sample(p, locs, 2, lab, timeline ? 3 : 2,
					v));
		if (!timeline)
			i = i < na ? na - 1 : na + nb;
	}
	return p;
}

static void test_append_and_deltas(void)
{
	static const char *const base[] = { "pprof::base", "true", NULL };
	struct profile *cur = prof(10, 30, false, false);
	struct profile *old = prof(30, 10, false, true);
	char *txt, *svg;
	size_t len;

	/* the base over twice the window: scaled by 1/2, negated */
	MUST(profile_append(cur, old, -1, 2, base));
	CHECK(profile_nsamples(cur) == 4, "%zu samples",
	      profile_nsamples(cur));
	CHECK(profile_total(cur, 0) == 40 - 20, "total %lld",
	      (long long)profile_total(cur, 0));
	CHECK(profile_append(cur, old, 1, 0, NULL) == -EINVAL, "den 0");
	MUST(diff_text_render(cur, -1, &txt, &len));
	/* a: 100 ms new, 150 ms base: -50 ms; b: 300 ms, 50 ms: +250 ms;
	 * b's is the larger change: first */
	CHECK(strstr(txt, "300ms        50ms      +250ms +500.0%      "
		      "+250ms  b\n"), "b's row:\n%s", txt);
	CHECK(strstr(txt, "100ms       150ms       -50ms  -33.3%       "
		      "-50ms  a\n"), "a's row:\n%s", txt);
	CHECK(strstr(txt, "+250ms") < strstr(txt, "-50ms"), "order:\n%s",
	      txt);
	free(txt);
	MUST(flame_render(cur, &(struct flame_opts){ .sample_index = -1,
						     .diff = true },
			  &svg, &len));
	/* b grew: red; a shrank: blue; both values in the tooltips */
	CHECK(strstr(svg, "data-d=\"250000000\"><title>b (new 300ms, base "
		      "50ms, delta +250ms, +500.0%)"), "b's frame");
	CHECK(strstr(svg, "data-d=\"-50000000\"><title>a (new 100ms, base "
		      "150ms, delta -50ms, -33.3%)"), "a's frame");
	CHECK(strstr(svg, "fill=\"#ff"), "no red frame");
	CHECK(strstr(svg, "ff\"/>"), "no blue frame");
	free(svg);
	profile_free(cur);
	profile_free(old);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *s = hay; (s = strstr(s, needle)); s++)
		n++;
	return n;
}

static void test_trace(void)
{
	struct profile *p = prof(3, 2, true, false);
	const char *meta, *first_b;
	char *json;
	size_t len;

	MUST(trace_render(p, &json, &len));
	meta = strstr(json, "\"thread_name\"");
	first_b = strstr(json, "\"ph\":\"B\"");
	CHECK(meta && first_b && meta < first_b, "metadata first:\n%s", json);
	CHECK(strstr(json, "\"name\":\"app \\\"x\\\"\""), "escaped:\n%s",
	      json);
	/* main stays open over all five samples; a (3) and b (2) merge */
	CHECK(count(json, "\"ph\":\"B\"") == 3 &&
	      count(json, "\"ph\":\"E\"") == 3, "slices:\n%s", json);
	CHECK(strstr(json, "\"ts\":0.000,\"name\":\"main\"") &&
	      strstr(json, "\"ts\":30000.000,\"name\":\"b\""),
	      "times:\n%s", json);
	free(json);
	profile_free(p);
	p = prof(3, 2, false, false);	/* no ts labels: no timeline */
	CHECK(trace_render(p, &json, &len) == -EINVAL, "not a timeline");
	profile_free(p);
}

int main(void)
{
	test_append_and_deltas();
	test_trace();
	if (failures) {
		fprintf(stderr, "test-past: %d failure(s)\n", failures);
		return 1;
	}
	printf("test-past: all passed\n");
	return 0;
}
