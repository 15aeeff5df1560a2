// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-profile.c - the profile model: interning, dense ids, function
 * deduplication, sample merging by (location ids, labels), rejection of
 * dangling indices, 100k distinct stacks (also keyed only by high bits),
 * and, by failing each allocation in turn, that a failed call leaves the
 * profile unchanged.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampler/model/profile.h"
#include "sampler/model/profile_merge.h"
#include "check.h"
#include "sane-profile.h"

static bool streq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}
#define STREQ(a, b) streq((a), (b))
#define SANE(p) CHECK(assert_sane_profile((p), __func__), "see above")

/*
 * Allocation failure injection: glibc lets a program replace malloc and
 * friends (all four together). Under a sanitizer its allocator is left
 * alone and the injection tests are skipped.
 */
#if defined(__SANITIZE_ADDRESS__)
#define INJECT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define INJECT 0
#endif
#endif
#ifndef INJECT
#define INJECT 1
#endif

#if INJECT
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void __libc_free(void *p);

/* Allocations left before one fails; < 0 = never fail. */
static long alloc_budget = -1;

static bool alloc_fails(void)
{
	if (alloc_budget < 0)
		return false;
	return alloc_budget-- == 0;
}

void *malloc(size_t size)
{
	return alloc_fails() ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	return alloc_fails() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	return alloc_fails() ? NULL : __libc_realloc(p, size);
}

void free(void *p)
{
	__libc_free(p);
}
#endif

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct profile *new_profile(int ntypes)
{
	static const char *const types[][2] = {
		{ "samples", "count" }, { "cpu", "nanoseconds" },
		{ "alloc_space", "bytes" },
	};
	struct profile *p = NULL;
	int ret = profile_new(&p);

	if (ret) {
		fprintf(stderr, "profile_new: %d\n", ret);
		exit(1);
	}
	for (int i = 0; i < ntypes; i++)
		if (profile_add_sample_type(p, types[i][0], types[i][1])) {
			fprintf(stderr, "profile_add_sample_type failed\n");
			exit(1);
		}
	return p;
}

static void test_new(void)
{
	struct profile *p = new_profile(0);
	const struct pf_header *h = profile_header_const(p);

	CHECK(profile_nstrings(p) == 1, "%zu", profile_nstrings(p));
	CHECK(STREQ(profile_str(p, 0), ""), "string 0");
	CHECK(profile_str(p, 1) == NULL && profile_str(p, -1) == NULL,
	      "out of range");
	CHECK(profile_nsample_types(p) == 0 && profile_nsamples(p) == 0 &&
	      profile_nmappings(p) == 0 && profile_nlocations(p) == 0 &&
	      profile_nfunctions(p) == 0 && profile_ncomments(p) == 0,
	      "not empty");
	CHECK(h->period == 0 && h->default_sample_type == 0 && h->pid == 0,
	      "header not zeroed");
	CHECK(profile_header(p) == h, "two headers");
	CHECK(profile_total(p, 0) == 0, "total");
	CHECK(profile_find_sample_type(p, "cpu") == -ENOENT, "find");
	SANE(p);
	profile_free(p);
	profile_free(NULL);
}

static void test_intern(void)
{
	struct profile *p = new_profile(0);
	char buf[32];
	int64_t a, b, ok = 1;

	CHECK(profile_intern(p, NULL) == 0, "NULL");
	CHECK(profile_intern(p, "") == 0, "empty");
	a = profile_intern(p, "main");
	b = profile_intern(p, "mainx");
	CHECK(a == 1 && b == 2, "%ld %ld", (long)a, (long)b);
	CHECK(profile_intern(p, "main") == 1, "again");
	CHECK(profile_nstrings(p) == 3, "%zu", profile_nstrings(p));
	/* Enough to grow the index many times; indices stay dense. */
	for (int i = 0; i < 50000; i++) {
		snprintf(buf, sizeof(buf), "s%d", i);
		ok &= profile_intern(p, buf) == 3 + i;
	}
	CHECK(ok, "dense indices");
	for (int i = 0; i < 50000; i += 7) {
		snprintf(buf, sizeof(buf), "s%d", i);
		ok &= profile_intern(p, buf) == 3 + i &&
		      STREQ(profile_str(p, 3 + i), buf);
	}
	CHECK(ok, "lookup after growth");
	CHECK(profile_nstrings(p) == 50003, "%zu", profile_nstrings(p));
	CHECK(profile_intern(p, "main") == 1, "still there");
	SANE(p);
	profile_free(p);
}

static void test_sample_types(void)
{
	struct profile *p = new_profile(0);
	int64_t v[PF_MAX_SAMPLE_TYPES] = { 0 };
	char name[16];

	CHECK(profile_add_sample(p, NULL, 0, NULL, 0, v) == -EINVAL,
	      "sample without types");
	for (int i = 0; i < PF_MAX_SAMPLE_TYPES; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		CHECK(!profile_add_sample_type(p, name, "count"), "type %d", i);
	}
	CHECK(profile_add_sample_type(p, "t8", "count") == -EINVAL, "9th");
	CHECK(profile_nsample_types(p) == PF_MAX_SAMPLE_TYPES, "count");
	CHECK(profile_intern(p, "t8") == (int64_t)profile_nstrings(p) - 1,
	      "the 9th type's name was interned");
	CHECK(profile_find_sample_type(p, "t3") == 3, "find t3");
	CHECK(profile_find_sample_type(p, "count") == -ENOENT, "find unit");
	CHECK(STREQ(profile_str(p, profile_sample_type(p, 7)->type), "t7") &&
	      STREQ(profile_str(p, profile_sample_type(p, 7)->unit), "count"),
	      "type 7");
	CHECK(profile_sample_type(p, 8) == NULL, "type 8");
	profile_free(p);

	p = new_profile(1);
	v[0] = 1;
	CHECK(!profile_add_sample(p, NULL, 0, NULL, 0, v), "empty stack");
	CHECK(profile_add_sample_type(p, "late", "count") == -EINVAL,
	      "type after samples");
	CHECK(profile_nsample_types(p) == 1, "late type added");
	CHECK(profile_total(p, 0) == 1, "total");
	SANE(p);
	profile_free(p);
}

static void test_header(void)
{
	struct profile *p = new_profile(1);
	const struct pf_header *h = profile_header_const(p);

	CHECK(!profile_set_period(p, "cpu", "nanoseconds", 10000000),
	      "set period");
	CHECK(STREQ(profile_str(p, h->period_type.type), "cpu") &&
	      STREQ(profile_str(p, h->period_type.unit), "nanoseconds") &&
	      h->period == 10000000, "period");
	CHECK(!profile_add_comment(p, "first") &&
	      !profile_add_comment(p, "second") &&
	      !profile_add_comment(p, "first"), "comments");
	CHECK(profile_ncomments(p) == 3, "%zu", profile_ncomments(p));
	CHECK(STREQ(profile_str(p, profile_comment(p, 1)), "second") &&
	      profile_comment(p, 0) == profile_comment(p, 2), "comment text");
	CHECK(profile_comment(p, 3) == 0, "comment out of range");
	profile_header(p)->pid = 42;
	CHECK(h->pid == 42, "header is shared");
	SANE(p);
	profile_free(p);
}

static void test_mappings(void)
{
	struct profile *p = new_profile(1);
	struct pf_mapping m = { .id = 99, .start = 0x400000, .limit = 0x401000,
				.offset = 0x1000, .has_functions = true };
	const struct pf_mapping *got;
	uint64_t id = 0;

	m.filename = profile_intern(p, "/usr/bin/app");
	m.build_id = profile_intern(p, "abcdef");
	CHECK(!profile_add_mapping(p, &m, &id) && id == 1, "%lu",
	      (unsigned long)id);
	CHECK(!profile_add_mapping(p, &m, &id) && id == 2, "not deduplicated");
	got = profile_mapping(p, 1);
	CHECK(got && got->id == 1 && got->start == 0x400000 &&
	      got->limit == 0x401000 && got->offset == 0x1000 &&
	      got->has_functions && !got->has_filenames &&
	      STREQ(profile_str(p, got->filename), "/usr/bin/app") &&
	      STREQ(profile_str(p, got->build_id), "abcdef"), "mapping 1");
	m.filename = profile_nstrings(p);
	CHECK(profile_add_mapping(p, &m, &id) == -EINVAL, "bad filename");
	m.filename = 0;
	m.build_id = -1;
	CHECK(profile_add_mapping(p, &m, &id) == -EINVAL, "bad build id");
	CHECK(profile_nmappings(p) == 2, "%zu", profile_nmappings(p));
	SANE(p);
	profile_free(p);
}

static void test_functions(void)
{
	struct profile *p = new_profile(1);
	const struct pf_function *f;
	uint64_t a, b, c, d, e, g;

	CHECK(!profile_add_function(p, "main", NULL, "main.c", 10, &a) &&
	      a == 1, "first");
	CHECK(!profile_add_function(p, "main", "main", "main.c", 10, &b) &&
	      b == 1, "NULL system_name is the name");
	CHECK(!profile_add_function(p, "main", NULL, "main.c", 11, &c) &&
	      c == 2, "other start line");
	CHECK(!profile_add_function(p, "main", NULL, "other.c", 10, &d) &&
	      d == 3, "other file");
	CHECK(!profile_add_function(p, "main", "_Z4mainv", "main.c", 10,
				    &e) && e == 4, "other system name");
	CHECK(!profile_add_function(p, NULL, NULL, NULL, 0, &g) && g == 5,
	      "all NULL");
	CHECK(!profile_add_function(p, "", "", "", 0, &g) && g == 5,
	      "NULL is \"\"");
	CHECK(profile_nfunctions(p) == 5, "%zu", profile_nfunctions(p));
	f = profile_function(p, 4);
	CHECK(f && f->id == 4 && STREQ(profile_str(p, f->name), "main") &&
	      STREQ(profile_str(p, f->system_name), "_Z4mainv") &&
	      STREQ(profile_str(p, f->filename), "main.c") &&
	      f->start_line == 10, "function 4");
	/* Many functions: dedup through index growth. */
	for (int round = 0; round < 2; round++) {
		bool ok = true;
		char name[32];

		for (int i = 0; i < 20000; i++) {
			snprintf(name, sizeof(name), "fn%d", i % 5000);
			ok &= !profile_add_function(p, name, NULL, "x.c",
						    i / 5000, &g) &&
			      g == (uint64_t)(6 + i);
		}
		CHECK(ok, "round %d: ids", round);
	}
	CHECK(profile_nfunctions(p) == 20005, "%zu", profile_nfunctions(p));
	SANE(p);
	profile_free(p);
}

static void test_locations(void)
{
	struct profile *p = new_profile(1);
	struct pf_mapping m = { 0 };
	struct pf_line lines[2];
	const struct pf_location *l;
	uint64_t mid, f1, f2, id;

	CHECK(!profile_add_mapping(p, &m, &mid), "mapping");
	CHECK(!profile_add_function(p, "inlined", NULL, "a.h", 3, &f1) &&
	      !profile_add_function(p, "outer", NULL, "a.c", 30, &f2), "fn");
	lines[0] = (struct pf_line){ .function_id = f1, .line = 5 };
	lines[1] = (struct pf_line){ .function_id = f2, .line = 42 };
	CHECK(!profile_add_location(p, mid, 0x1234, lines, 2, &id) && id == 1,
	      "add");
	lines[0].line = 999;	/* the profile keeps its own copy */
	CHECK(!profile_add_location(p, mid, 0x1234, lines, 2, &id) && id == 2,
	      "locations are not deduplicated");
	CHECK(!profile_add_location(p, 0, 0x5678, NULL, 0, &id) && id == 3,
	      "no mapping, no lines");
	l = profile_location(p, 1);
	CHECK(l && l->id == 1 && l->mapping_id == mid && l->address == 0x1234 &&
	      l->nlines == 2 && l->lines[0].function_id == f1 &&
	      l->lines[0].line == 5 && l->lines[1].function_id == f2 &&
	      l->lines[1].line == 42, "location 1");
	CHECK(profile_location(p, 2)->lines[0].line == 999, "location 2");
	CHECK(profile_add_location(p, mid + 1, 0, lines, 2, &id) == -EINVAL,
	      "bad mapping");
	lines[1].function_id = 3;
	CHECK(profile_add_location(p, mid, 0, lines, 2, &id) == -EINVAL,
	      "bad function");
	lines[1].function_id = 0;
	CHECK(profile_add_location(p, mid, 0, lines, 2, &id) == -EINVAL,
	      "function 0");
	CHECK(profile_nlocations(p) == 3, "%zu", profile_nlocations(p));
	SANE(p);
	profile_free(p);
}

/* n locations, each in its own function "f<i>". */
static void add_locations(struct profile *p, int n)
{
	for (int i = 0; i < n; i++) {
		struct pf_line line = { .line = i };
		char name[32];
		uint64_t id;

		snprintf(name, sizeof(name), "f%d", i);
		if (profile_add_function(p, name, NULL, "f.c", 1,
					 &line.function_id) ||
		    profile_add_location(p, 0, 0x1000 + i, &line, 1, &id)) {
			fprintf(stderr, "add_locations failed\n");
			exit(1);
		}
	}
}

static void test_merge(void)
{
	struct profile *p = new_profile(2);
	uint64_t s1[] = { 1, 2, 3 }, s2[] = { 3, 2, 1 }, s3[] = { 1, 2 };
	struct pf_label l1[2], l2[2], bad;
	int64_t v1[] = { 1, 10 }, v2[] = { 2, 20 };
	const struct pf_sample *s;

	add_locations(p, 3);
	l1[0] = (struct pf_label){ .key = profile_intern(p, "thread"),
				   .str = profile_intern(p, "100") };
	l1[1] = (struct pf_label){ .key = profile_intern(p, "bytes"),
				   .num = 64,
				   .num_unit = profile_intern(p, "bytes") };
	memcpy(l2, l1, sizeof(l2));
	l2[0].str = profile_intern(p, "101");

	CHECK(!profile_add_sample(p, s1, 3, l1, 2, v1), "add");
	CHECK(!profile_add_sample(p, s1, 3, l1, 2, v2), "merge");
	CHECK(profile_nsamples(p) == 1, "%zu", profile_nsamples(p));
	s = profile_sample(p, 0);
	CHECK(s->values[0] == 3 && s->values[1] == 30, "%ld %ld",
	      (long)s->values[0], (long)s->values[1]);
	CHECK(s->nlocs == 3 && s->loc_ids[0] == 1 && s->loc_ids[2] == 3 &&
	      s->nlabels == 2 && s->labels[1].num == 64, "copied");

	CHECK(!profile_add_sample(p, s1, 3, l2, 2, v1), "other thread");
	CHECK(!profile_add_sample(p, s1, 3, l1, 1, v1), "fewer labels");
	l2[1].num = 65;
	CHECK(!profile_add_sample(p, s1, 3, l2, 2, v1), "other num");
	CHECK(!profile_add_sample(p, s2, 3, l1, 2, v1), "reversed stack");
	CHECK(!profile_add_sample(p, s3, 2, l1, 2, v1), "prefix stack");
	CHECK(!profile_add_sample(p, NULL, 0, NULL, 0, v1), "empty");
	CHECK(!profile_add_sample(p, s3, 0, NULL, 0, v2), "empty again");
	CHECK(profile_nsamples(p) == 7, "%zu", profile_nsamples(p));
	CHECK(profile_sample(p, 6)->values[0] == 3, "empty merged");
	CHECK(profile_total(p, 0) == 3 + 5 * 1 + 3 &&
	      profile_total(p, 1) == 30 + 5 * 10 + 30, "totals %ld %ld",
	      (long)profile_total(p, 0), (long)profile_total(p, 1));
	CHECK(profile_total(p, 2) == 0, "total of no column");

	/* Dangling indices are refused and change nothing. */
	s1[1] = 4;
	CHECK(profile_add_sample(p, s1, 3, l1, 2, v1) == -EINVAL, "loc 4");
	s1[1] = 0;
	CHECK(profile_add_sample(p, s1, 3, l1, 2, v1) == -EINVAL, "loc 0");
	bad = l1[0];
	bad.str = profile_nstrings(p);
	CHECK(profile_add_sample(p, s3, 2, &bad, 1, v1) == -EINVAL,
	      "label str");
	bad = l1[0];
	bad.key = -1;
	CHECK(profile_add_sample(p, s3, 2, &bad, 1, v1) == -EINVAL,
	      "label key");
	bad = l1[1];
	bad.num_unit = 1 << 20;
	CHECK(profile_add_sample(p, s3, 2, &bad, 1, v1) == -EINVAL,
	      "label unit");
	CHECK(profile_add_sample(p, NULL, 2, NULL, 0, v1) == -EINVAL,
	      "NULL locations");
	CHECK(profile_add_sample(p, s3, 2, NULL, 0, NULL) == -EINVAL,
	      "NULL values");
	CHECK(profile_nsamples(p) == 7 && profile_total(p, 0) == 11,
	      "refused samples changed the profile");
	SANE(p);
	profile_free(p);
}

/*
 * 100k distinct samples, then each again: memory grows with distinct
 * stacks, and merging stays O(1). The second batch differs only in a
 * numeric label's high bits, which a hash of the low bits would pile
 * into one probe chain (quadratic: minutes instead of milliseconds).
 */
static void test_many(void)
{
	struct profile *p = new_profile(2);
	const int n = 100000, nloc = 1000;
	struct pf_label label = { 0 };
	uint64_t stack[3];
	bool ok = true;
	double t0, t1, t2;

	add_locations(p, nloc);
	label.key = profile_intern(p, "bytes");
	label.num_unit = label.key;
	t0 = now();
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < n; i++) {
			int64_t v[2] = { 1, i };

			stack[0] = 1 + i % nloc;
			stack[1] = 1 + (i / nloc) % nloc;
			stack[2] = 1 + i / (nloc * nloc);
			ok &= !profile_add_sample(p, stack, 3, NULL, 0, v);
		}
		CHECK(ok && profile_nsamples(p) == (size_t)n,
		      "round %d: %zu samples", round, profile_nsamples(p));
	}
	CHECK(profile_total(p, 0) == 2 * n &&
	      profile_total(p, 1) == (int64_t)n * (n - 1), "totals");
	CHECK(profile_sample(p, 12345)->values[1] == 2 * 12345 &&
	      profile_sample(p, 12345)->loc_ids[0] == 1 + 345 &&
	      profile_sample(p, 12345)->loc_ids[1] == 1 + 12, "sample 12345");
	t1 = now();
	stack[0] = 1;
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < n; i++) {
			int64_t v[2] = { 1, 1 };

			label.num = (int64_t)((uint64_t)i << 40);
			ok &= !profile_add_sample(p, stack, 1, &label, 1, v);
		}
	t2 = now();
	CHECK(ok && profile_nsamples(p) == (size_t)2 * n, "%zu samples",
	      profile_nsamples(p));
	CHECK(profile_sample(p, n + 7)->values[0] == 2 &&
	      profile_sample(p, n + 7)->labels[0].num == (int64_t)7 << 40,
	      "high-bit label merged");
	printf("test_many: %d samples x2 in %.3f s, "
	       "high-bit labels in %.3f s\n", n, t1 - t0, t2 - t1);
	CHECK(t1 - t0 < 5 && t2 - t1 < 5, "too slow: %.3f s, %.3f s",
	      t1 - t0, t2 - t1);
	SANE(p);
	profile_free(p);
}

/*
 * 1M adds cycling over 1000 stacks, as a long session sees hot loops: the
 * model must stay at 1000 samples (memory bounded by distinct stacks) and
 * intern nothing new.
 */
static void test_repeat(void)
{
	struct profile *p = new_profile(2);
	const int nstack = 1000, nadd = 1000000;
	struct pf_label label;
	uint64_t stack[4];
	size_t nstrings;
	bool ok = true;
	double t0;

	add_locations(p, nstack);
	label = (struct pf_label){ .key = profile_intern(p, "thread"),
				   .str = profile_intern(p, "7") };
	nstrings = profile_nstrings(p);
	t0 = now();
	for (int i = 0; i < nadd; i++) {
		int k = i % nstack;
		int64_t v[2] = { 1, k };

		for (int d = 0; d < 4; d++)
			stack[d] = 1 + (k + d * 7) % nstack;
		ok &= !profile_add_sample(p, stack, 4, &label, 1, v);
	}
	printf("test_repeat: %d adds of %d stacks in %.3f s\n", nadd, nstack,
	       now() - t0);
	CHECK(ok, "add failed");
	CHECK(profile_nsamples(p) == (size_t)nstack, "%zu samples",
	      profile_nsamples(p));
	CHECK(profile_nstrings(p) == nstrings, "%zu strings",
	      profile_nstrings(p));
	CHECK(profile_total(p, 0) == nadd &&
	      profile_total(p, 1) == (int64_t)(nadd / nstack) *
				     (nstack * (nstack - 1) / 2),
	      "totals %ld %ld", (long)profile_total(p, 0),
	      (long)profile_total(p, 1));
	for (int k = 0; k < nstack; k++) {
		const struct pf_sample *s = profile_sample(p, k);

		ok &= s->values[0] == nadd / nstack &&
		      s->values[1] == (int64_t)k * (nadd / nstack) &&
		      s->nlocs == 4 && s->loc_ids[0] == (uint64_t)k + 1;
	}
	CHECK(ok, "per-sample values");
	SANE(p);
	profile_free(p);
}

/* Values wrap instead of overflowing (UB), e.g. on fuzzed input. */
static void test_wrap(void)
{
	struct profile *p = new_profile(1);
	int64_t v[] = { INT64_MAX };

	CHECK(!profile_add_sample(p, NULL, 0, NULL, 0, v) &&
	      !profile_add_sample(p, NULL, 0, NULL, 0, v), "add");
	CHECK(profile_sample(p, 0)->values[0] == -2, "%ld",
	      (long)profile_sample(p, 0)->values[0]);
	profile_free(p);
}

#if INJECT
/* Everything observable through the public API, in one comparable blob. */
struct shape {
	size_t nstrings, ntypes, ncomments, nsamples, nmappings, nlocations;
	size_t nfunctions;
	int64_t totals[2];
	int64_t period_type, period_unit, period;
};

static void shape_of(const struct profile *p, struct shape *s)
{
	memset(s, 0, sizeof(*s));
	s->nstrings = profile_nstrings(p);
	s->ntypes = profile_nsample_types(p);
	s->ncomments = profile_ncomments(p);
	s->nsamples = profile_nsamples(p);
	s->nmappings = profile_nmappings(p);
	s->nlocations = profile_nlocations(p);
	s->nfunctions = profile_nfunctions(p);
	s->totals[0] = profile_total(p, 0);
	s->totals[1] = profile_total(p, 1);
	s->period_type = profile_header_const(p)->period_type.type;
	s->period_unit = profile_header_const(p)->period_type.unit;
	s->period = profile_header_const(p)->period;
}

/* One operation of each kind, with fresh strings so that they intern. */
static int op(struct profile *p, int kind, int salt)
{
	char a[32], b[32];
	uint64_t id, locs[2] = { 1, 2 };
	struct pf_mapping m = { 0 };
	struct pf_line line = { .function_id = 1 };
	struct pf_label label = { .key = 1, .str = 2 };
	int64_t v[2] = { 1, 2 };

	snprintf(a, sizeof(a), "a%d", salt);
	snprintf(b, sizeof(b), "b%d", salt);
	switch (kind) {
	case 0:
		return profile_intern(p, a) < 0 ? -ENOMEM : 0;
	case 1:
		return profile_add_comment(p, a);
	case 2:
		return profile_set_period(p, a, b, 7);
	case 3:
		return profile_add_function(p, a, b, a, salt, &id);
	case 4:
		return profile_add_mapping(p, &m, &id);
	case 5:
		return profile_add_location(p, 0, salt, &line, 1, &id);
	case 6:
		locs[1] = 1 + salt % 3;
		label.num = salt;
		return profile_add_sample(p, locs, 2, &label, 1, v);
	default:
		return profile_add_sample(p, locs, 2, &label, 1, v);
	}
}

static void test_alloc_failures(void)
{
	struct profile *p = NULL;
	int failed = 0, salt = 0;

	for (long budget = 0; budget < 100; budget++) {
		alloc_budget = budget;
		if (!profile_new(&p))
			break;
		CHECK(!p, "out parameter set on failure");
	}
	alloc_budget = -1;
	CHECK(p, "profile_new never succeeded");
	if (!p)
		return;
	CHECK(!profile_add_sample_type(p, "samples", "count") &&
	      !profile_add_sample_type(p, "cpu", "nanoseconds"), "types");
	add_locations(p, 3);
	/* Every kind of call, failing at each allocation in turn, repeated
	 * so that tables and indexes are caught at their growth points. */
	for (int rep = 0; rep < 300; rep++) {
		for (int kind = 0; kind < 8; kind++) {
			struct shape before, after;
			int ret = -ENOMEM;

			for (long budget = 0; ret && budget < 16; budget++) {
				salt++;
				shape_of(p, &before);
				alloc_budget = budget;
				ret = op(p, kind, salt);
				alloc_budget = -1;
				if (!ret)
					break;
				failed++;
				shape_of(p, &after);
				CHECK(ret == -ENOMEM, "kind %d: %d", kind, ret);
				CHECK(!memcmp(&before, &after, sizeof(before)),
				      "kind %d, budget %ld: failed call "
				      "changed the profile", kind, budget);
			}
			CHECK(!ret, "kind %d never succeeded", kind);
		}
	}
	printf("test_alloc_failures: %d injected failures\n", failed);
	for (size_t i = 0; i < profile_nstrings(p); i++)
		CHECK(profile_intern(p, profile_str(p, i)) == (int64_t)i,
		      "string %zu lost from the index", i);
	SANE(p);
	profile_free(p);
}
#endif

/* profile_mem_bytes() against the heap glibc says the profile took
 * (mallinfo2: where a sanitizer or valgrind owns the heap it says 0, and
 * only the lower bound is checked). The flight recorder's record_mem is
 * this count (record.h). */
static void test_mem_bytes(void)
{
	struct mallinfo2 before = mallinfo2(), after;
	struct profile *p = new_profile(2);
	struct pf_label label = { 0 };
	size_t counted, real;
	char name[64];
	bool ok = true;

	add_locations(p, 2000);
	for (int i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "a string of some length, %d", i);
		ok &= profile_intern(p, name) > 0;
	}
	label.key = profile_intern(p, "thread");
	for (int i = 0; i < 5000; i++) {
		uint64_t stack[3] = { 1 + i % 2000, 1 + i / 2000, 7 };
		int64_t v[2] = { 1, i };

		label.str = 1 + i % 20000;
		ok &= !profile_add_sample(p, stack, 3, &label, 1, v);
	}
	after = mallinfo2();
	counted = profile_mem_bytes(p);
	real = after.uordblks - before.uordblks;
	CHECK(ok, "building");
	printf("test_mem_bytes: counted %zu, malloc says %zu\n", counted, real);
	/* the strings alone: 20000 of 27-31 bytes, rounded to 32 and 48 */
	CHECK(counted > 20000 * 32, "counted %zu", counted);
	if (after.uordblks)
		CHECK(counted >= real * 9 / 10 && counted <= real * 11 / 10,
		      "counted %zu, malloc says %zu", counted, real);
	profile_free(p);
}

/* pf_function.runtime: set by profile_mark_runtime(), kept by copies
 * and merges, not part of what makes two functions one. */
static void test_runtime_flag(void)
{
	static const char *const drop[] = { "thread", NULL };
	struct profile *p, *c, *m;
	struct pf_line l = { 0, 3 };
	uint64_t f, g, id, loc;
	int64_t v = 1;

	MUST(profile_new(&p));
	MUST(profile_add_sample_type(p, "samples", "count"));
	MUST(profile_add_function(p, "native", NULL, NULL, 0, &g));
	MUST(profile_add_function(p, "heavy (a.py:3)", "heavy", "a.py", 1,
				  &f));
	CHECK(!profile_function(p, f)->runtime, "not marked yet");
	MUST(profile_mark_runtime(p, f));
	CHECK(profile_function(p, f)->runtime, "marked");
	CHECK(!profile_function(p, g)->runtime, "the other not");
	CHECK(profile_mark_runtime(p, 0) == -EINVAL &&
	      profile_mark_runtime(p, 3) == -EINVAL, "ids out of range");
	MUST(profile_add_function(p, "heavy (a.py:3)", "heavy", "a.py", 1,
				  &id));
	CHECK(id == f && profile_function(p, id)->runtime, "the same one");
	l.function_id = f;
	MUST(profile_add_location(p, 0, 0, &l, 1, &loc));
	MUST(profile_add_sample(p, &loc, 1, NULL, 0, &v));
	MUST(profile_copy_dropping_labels(p, drop, &c));
	CHECK(profile_function(c, f)->runtime &&
	      !profile_function(c, g)->runtime, "a copy keeps it");
	MUST(profile_new(&m));
	MUST(profile_add_sample_type(m, "samples", "count"));
	MUST(profile_add_function(m, "other", NULL, NULL, 0, &id));
	MUST(profile_append(m, p, 1, 1, NULL));
	for (id = 1; id <= profile_nfunctions(m); id++) {
		const struct pf_function *fn = profile_function(m, id);

		CHECK(fn->runtime == !strcmp(profile_str(m, fn->name),
					     "heavy (a.py:3)"),
		      "appended: %s", profile_str(m, fn->name));
	}
	profile_free(m);
	profile_free(c);
	profile_free(p);
}

int main(void)
{
	test_runtime_flag();
	test_new();
	test_intern();
	test_sample_types();
	test_header();
	test_mappings();
	test_functions();
	test_locations();
	test_merge();
	test_many();
	test_repeat();
	test_wrap();
	test_mem_bytes();
#if INJECT
	test_alloc_failures();
#endif
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-profile: all checks passed\n");
	return 0;
}
