// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-heap-model.c - the heap model (sampler/heap/heap_model.h): Go's
 * weights, buckets per (stack, size), the live set and frees, snapshots
 * and deltas, the bucket bound, the live-set bound, reset; every profile
 * it makes is sane.
 *
 * Samples are "taken" in this very process: registers whose pc is one of
 * the site functions below and no stack, so each stack is that one frame,
 * symbolized from this test's own binary.
 */
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler/unwind/dso.h"
#include "check.h"
#include "sampler/heap/heap_model.h"
#include "sampler/unwind/maps.h"
#include "sampler/model/profile.h"
#include "sane-profile.h"
#include "sampler/unwind/unwind.h"

#define RATE 524288

__attribute__((noipa)) static void site_a(void)
{
	__asm__ volatile("");
}

__attribute__((noipa)) static void site_b(void)
{
	__asm__ volatile("");
}

static struct dso_cache *cache;
static struct proc_maps *maps;

static int alloc(struct heap_model *m, void (*site)(void), uint64_t addr,
		 uint64_t size, uint64_t rate, bool tracked)
{
	struct unwind_regs regs = { 0 };
	struct heap_alloc_sample s = {
		.regs = &regs, .addr = addr, .size = size, .rate = rate,
		.tracked = tracked,
	};

	regs.r[UREG_RIP] = (uint64_t)(uintptr_t)site;
	return heap_model_alloc(m, &s);
}

/* The profile of the model (from -> to, or everything), checked sane. */
static struct profile *make(struct heap_model *m, struct heap_snap *from,
			    bool allocs)
{
	struct heap_profile_info info = { .allocs = allocs, .period = RATE };
	struct heap_snap *to;
	struct profile *p;

	MUST(heap_model_snapshot(m, &to));
	MUST(heap_model_profile(m, from, to, &info, &p));
	heap_snap_free(to);
	CHECK(assert_sane_profile(p, "heap model"), "see above");
	return p;
}

/* Values of the sample whose leaf function is name, with size label. */
static bool values(const struct profile *p, const char *name, int64_t size,
		   int64_t v[4])
{
	for (size_t i = 0; i < profile_nsamples(p); i++) {
		const struct pf_sample *s = profile_sample(p, i);
		const struct pf_location *l = profile_location(p,
							       s->loc_ids[0]);
		const struct pf_function *f = l && l->nlines ?
			profile_function(p, l->lines[0].function_id) : NULL;
		int64_t label = s->nlabels ? s->labels[0].num : 0;

		if (f && !strcmp(profile_str(p, f->name), name) &&
		    label == size) {
			memcpy(v, s->values, 4 * sizeof(*v));
			return true;
		}
	}
	return false;
}

static void dump(const struct profile *p)
{
	for (size_t i = 0; i < profile_nsamples(p); i++) {
		const struct pf_sample *s = profile_sample(p, i);

		fprintf(stderr, "sample %zu:", i);
		for (uint32_t k = 0; k < s->nlocs; k++) {
			const struct pf_location *l =
				profile_location(p, s->loc_ids[k]);
			const struct pf_function *f = l->nlines ?
				profile_function(p, l->lines[0].function_id) :
				NULL;

			fprintf(stderr, " %s", f ? profile_str(p, f->name) :
				"?");
		}
		fprintf(stderr, " label %lld\n", s->nlabels ?
			(long long)s->labels[0].num : -1ll);
	}
}

#define EXPECT(p, name, size, a, b, c, d)				\
	do {								\
		int64_t v_[4] = { -1, -1, -1, -1 };			\
		CHECK(values((p), (name), (size), v_), "%s/%d missing",	\
		      (name), (int)(size));				\
		CHECK(v_[0] == (a) && v_[1] == (b) && v_[2] == (c) &&	\
		      v_[3] == (d), "%s/%d: %lld %lld %lld %lld",	\
		      (name), (int)(size), (long long)v_[0],		\
		      (long long)v_[1], (long long)v_[2], (long long)v_[3]); \
	} while (0)

static void test_types_and_default(struct heap_model *m)
{
	static const char *const want[4] = {
		"alloc_objects", "alloc_space", "inuse_objects",
		"inuse_space",
	};
	struct profile *heap = make(m, NULL, false), *allocs = make(m, NULL,
								   true);
	const struct pf_header *h = profile_header_const(heap);

	CHECK(profile_nsample_types(heap) == 4, "4 types");
	for (int i = 0; i < 4; i++)
		CHECK(!strcmp(profile_str(heap, profile_sample_type(heap, i)->
					  type), want[i]), "type %d", i);
	CHECK(!strcmp(profile_str(heap, h->default_sample_type),
		      "inuse_space"), "heap default");
	CHECK(!strcmp(profile_str(allocs, profile_header_const(allocs)->
				  default_sample_type), "alloc_space"),
	      "allocs default");
	CHECK(!strcmp(profile_str(heap, h->period_type.type), "space") &&
	      h->period == RATE, "period");
	CHECK(!profile_nsamples(heap), "empty");
	profile_free(heap);
	profile_free(allocs);
}

/* rate 1: every allocation counts once; a free takes it out of use. */
static void test_exact_and_frees(struct heap_model *m)
{
	struct profile *p;

	MUST(alloc(m, site_a, 0x1000, 100, 1, true));
	MUST(alloc(m, site_a, 0x2000, 100, 1, true));
	MUST(alloc(m, site_a, 0x3000, 30, 1, true));	/* another bucket */
	MUST(alloc(m, site_b, 0x4000, 100, 1, false));	/* untracked */
	CHECK(heap_model_free_addr(m, 0x1000), "known");
	CHECK(!heap_model_free_addr(m, 0x1000), "twice");
	CHECK(!heap_model_free_addr(m, 0x4000), "untracked");
	CHECK(!heap_model_free_addr(m, 0x9999), "unknown");
	p = make(m, NULL, false);
	EXPECT(p, "site_a", 100, 2, 200, 1, 100);
	EXPECT(p, "site_a", 30, 1, 30, 1, 30);
	EXPECT(p, "site_b", 100, 1, 100, 1, 100);
	CHECK(profile_nsamples(p) == 3, "%zu", profile_nsamples(p));
	if (failures)
		dump(p);
	CHECK(heap_model_samples(m) == 4 && heap_model_frees(m) == 1,
	      "counters");
	profile_free(p);
}

/* Go's weight at the default rate, summed unrounded, rounded once. */
static void test_weights(struct heap_model *m)
{
	double w = 1 / -expm1(-64.0 / RATE);
	struct profile *p;

	heap_model_reset(m);
	for (uint64_t i = 0; i < 1000; i++)
		MUST(alloc(m, site_a, 0x100000 + 64 * i, 64, RATE, true));
	for (uint64_t i = 0; i < 400; i++)
		CHECK(heap_model_free_addr(m, 0x100000 + 64 * i), "%d",
		      (int)i);
	p = make(m, NULL, false);
	EXPECT(p, "site_a", 64, llround(1000 * w), llround(64000 * w),
	       llround(600 * w), llround(38400 * w));
	profile_free(p);
}

/* A window: only what happened between the snapshots. */
static void test_delta(struct heap_model *m)
{
	struct heap_snap *before;
	struct profile *p;

	heap_model_reset(m);
	MUST(alloc(m, site_a, 0x1000, 10, 1, true));
	MUST(heap_model_snapshot(m, &before));
	MUST(alloc(m, site_b, 0x2000, 20, 1, true));
	CHECK(heap_model_free_addr(m, 0x1000), "old block freed");
	p = make(m, before, false);
	EXPECT(p, "site_a", 10, 0, 0, -1, -10);
	EXPECT(p, "site_b", 20, 1, 20, 1, 20);
	heap_snap_free(before);
	profile_free(p);
}

/* A reused address whose free went unseen: the newer block wins. */
static void test_reused_address(struct heap_model *m)
{
	struct profile *p;

	heap_model_reset(m);
	MUST(alloc(m, site_a, 0x5000, 8, 1, true));
	MUST(alloc(m, site_b, 0x5000, 8, 1, true));
	CHECK(heap_model_free_addr(m, 0x5000), "newest");
	p = make(m, NULL, false);
	EXPECT(p, "site_a", 8, 1, 8, 0, 0);
	EXPECT(p, "site_b", 8, 1, 8, 0, 0);
	profile_free(p);
}

/* Past max_buckets, new buckets count under one marker frame. */
static void test_bound(void)
{
	struct heap_model *m;
	struct profile *p;

	MUST(heap_model_new(getpid(), maps, 2, &m));
	MUST(alloc(m, site_a, 0x1000, 1, 1, true));
	MUST(alloc(m, site_a, 0x2000, 2, 1, true));
	MUST(alloc(m, site_a, 0x3000, 3, 1, true));
	MUST(alloc(m, site_b, 0x4000, 4, 1, true));
	CHECK(heap_model_free_addr(m, 0x4000), "overflowed block freed");
	p = make(m, NULL, false);
	EXPECT(p, "[max_stacks reached]", 0, 2, 7, 1, 3);
	CHECK(profile_nsamples(p) == 3, "%zu", profile_nsamples(p));
	profile_free(p);
	heap_model_free(m);
}

/* Bytes malloc has handed out, mmapped blocks included. */
static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* The profile's comment containing what, or NULL. */
static const char *comment_with(const struct profile *p, const char *what)
{
	for (size_t i = 0; i < profile_ncomments(p); i++) {
		const char *c = profile_str(p, profile_comment(p, i));

		if (strstr(c, what))
			return c;
	}
	return NULL;
}

/*
 * Past HEAP_MODEL_LIVE_PER_STACK x max_buckets live blocks (rate=1 on a
 * program holding millions of blocks), new tracked samples are dropped:
 * the model's memory stops growing, and the profile says how many.
 */
static void test_live_bound(void)
{
	const size_t cap = 100 * HEAP_MODEL_LIVE_PER_STACK;
	struct heap_snap *before;
	struct heap_model *m;
	struct profile *p;
	size_t used0, used1;
	const char *c;
	char want[64];

	MUST(heap_model_new(getpid(), maps, 100, &m));
	for (uint64_t i = 0; i < cap; i++)
		MUST(alloc(m, site_a, 0x10000000 + 16 * i, 16, 1, true));
	CHECK(!heap_model_dropped(m), "dropped below the cap");
	used0 = heap_bytes();
	/* 200 times the cap: 200,000 live entries would take > 6 MiB */
	for (uint64_t i = 0; i < 200 * cap; i++)
		MUST(alloc(m, site_b, 0x20000000 + 16 * i, 16, 1, true));
	used1 = heap_bytes();
	CHECK(used1 <= used0 + 64 * 1024, "memory grew past the cap: %zu -> "
	      "%zu bytes", used0, used1);
	CHECK(heap_model_dropped(m) == 200 * cap, "dropped %llu",
	      (unsigned long long)heap_model_dropped(m));
	CHECK(heap_model_samples(m) == cap, "samples %llu",
	      (unsigned long long)heap_model_samples(m));
	p = make(m, NULL, false);
	EXPECT(p, "site_a", 16, (int64_t)cap, 16 * (int64_t)cap,
	       (int64_t)cap, 16 * (int64_t)cap);
	CHECK(!values(p, "site_b", 16, (int64_t[4]){ 0 }), "site_b counted");
	snprintf(want, sizeof(want), "%zu sampled allocations were dropped",
		 200 * cap);
	c = comment_with(p, want);
	CHECK(c && strstr(c, "max_stacks"), "no comment saying \"%s\"",
	      want);
	profile_free(p);

	/* A free makes room again; an untracked sample never needs any;
	 * a window counts only its own drops. */
	MUST(heap_model_snapshot(m, &before));
	CHECK(heap_model_free_addr(m, 0x10000000), "freed");
	MUST(alloc(m, site_b, 0x30000000, 16, 1, true));
	MUST(alloc(m, site_b, 0x30000010, 16, 1, true));	/* full again */
	MUST(alloc(m, site_b, 0x30000020, 16, 1, false));
	p = make(m, before, false);
	EXPECT(p, "site_b", 16, 2, 32, 2, 32);
	CHECK(comment_with(p, " 1 sampled allocations were dropped"),
	      "window's drops");
	profile_free(p);
	heap_snap_free(before);
	heap_model_free(m);
}

int main(void)
{
	struct heap_model *m;

	MUST(dso_cache_new(NULL, &cache));
	MUST(maps_load(getpid(), cache, &maps));
	MUST(heap_model_new(getpid(), maps, 0, &m));
	test_types_and_default(m);
	test_exact_and_frees(m);
	test_weights(m);
	test_delta(m);
	test_reused_address(m);
	test_bound();
	test_live_bound();
	heap_model_free(m);
	maps_free(maps);
	dso_cache_free(cache);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-heap-model: all checks passed\n");
	return 0;
}
