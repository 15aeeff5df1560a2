// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-dso-mem.c - what a cached dso holds in bytes (dso_mem.c) and the
 * cache's byte bound (dso_expire.c), on the shared libraries this test
 * runs with (libc, libdw, libelf, libz): the count grows as a dso
 * symbolizes, is not less than what malloc says loading cost, and the
 * cache's sum is the sum of its objects; past the bound the idle ones go,
 * least recently let go first, none within the grace time, the ones in
 * use never (said once in the log, the cache then "pressed"). Prints the
 * counts and malloc's, for docs/performance.md. The unwinder's rows kept
 * with an object (dso_row_get): found again through the cache, at most
 * DSO_ROWS_MAX of one size, counted in its bytes, gone with it.
 */
#include <link.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler/log.h"
#include "sampler/unwind/dso.h"
#include "check.h"

#define NLIBS 4
static const char *const libs[NLIBS] = {
	"/libc.so.6", "/libdw.so.1", "/libelf.so.1", "/libz.so.1",
};
static char paths[NLIBS][512];

static int warnings;

static void count_sink(enum proffs_log_level level, const char *fmt,
		       va_list ap)
{
	if (level == PROFFS_LOG_NOTICE && strstr(fmt, "dso_mem="))
		warnings++;
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* Where the loader found each library (dl_iterate_phdr names them by
 * the path it opened, before symlinks). */
static int find_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	size_t n = strlen(info->dlpi_name);

	(void)size, (void)arg;
	for (int i = 0; i < NLIBS; i++) {
		size_t m = strlen(libs[i]);

		if (n > m && !strcmp(info->dlpi_name + n - m, libs[i]) &&
		    !paths[i][0])
			snprintf(paths[i], sizeof(paths[i]), "%s",
				 info->dlpi_name);
	}
	return 0;
}

static void find_libs(void)
{
	dl_iterate_phdr(find_lib, NULL);
	for (int i = 0; i < NLIBS; i++)
		if (!paths[i][0])
			die(libs[i], -1);
}

/* Symbolize n addresses spread over d's functions (loads libdw's module
 * and some of its DWARF units, when it has DWARF). */
static void use(struct dso *d, const char *sym, int n)
{
	struct dso_frame f[8];
	uint64_t v;
	int got;

	if (dso_symbol_vaddr(d, sym, &v))
		v = 0x1000;
	for (int i = 0; i < n; i++)
		dso_symbolize(d, v + (uint64_t)i * 4099, f, 8, &got);
}

static uint64_t heap(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* Counts grow with use; the cache's sum is its objects'; the heap part
 * near malloc's growth (memfds and mapped sections come on top). */
static void test_accounting(const char *roots)
{
	static const char *const syms[NLIBS] = {
		"malloc", "dwarf_begin", "elf_begin", "deflate",
	};
	uint64_t loaded[NLIBS], used[NLIBS], sum = 0, heap_sum = 0, before;
	uint64_t real;
	struct dso_mem_parts parts;
	struct dso_cache_stats st;
	struct dso_cache *c;
	struct dso *d[NLIBS];

	MUST(dso_cache_new(roots, &c));
	dso_cache_set_bytes(c, 0, 0);
	printf("test_accounting: debug roots %s\n", roots ? roots : "(default)");
	before = heap();
	for (int i = 0; i < NLIBS; i++) {
		MUST(dso_cache_get(c, paths[i], paths[i], &d[i]));
		loaded[i] = dso_mem_bytes(d[i]);
		use(d[i], syms[i], 300);
		used[i] = dso_mem_bytes(d[i]);
		dso_mem_parts(d[i], &parts);
		sum += used[i];
		heap_sum += parts.heap;
		printf("test_accounting: %s: %llu bytes loaded, %llu used: "
		       "%llu heap, %llu inflated, %llu mapped\n", paths[i],
		       (unsigned long long)loaded[i],
		       (unsigned long long)used[i],
		       (unsigned long long)parts.heap,
		       (unsigned long long)parts.inflated,
		       (unsigned long long)parts.mapped);
		CHECK(parts.heap + parts.inflated + parts.mapped == used[i],
		      "parts");
		CHECK(loaded[i] >= 512, "%s: %llu", paths[i],
		      (unsigned long long)loaded[i]);
		CHECK(used[i] > loaded[i] + 4096, "%s: %llu then %llu",
		      paths[i], (unsigned long long)loaded[i],
		      (unsigned long long)used[i]);
	}
	real = heap() - before;
	printf("test_accounting: counted %llu, of which heap %llu; malloc "
	       "grew %llu\n", (unsigned long long)sum,
	       (unsigned long long)heap_sum, (unsigned long long)real);
	/* the estimate of libdw's part within a third of malloc's word
	 * (where a sanitizer or valgrind owns the heap mallinfo2 says 0) */
	if (before && real)
		CHECK(heap_sum >= real * 3 / 4 && heap_sum <= real * 4 / 3,
		      "heap counted %llu, malloc says %llu",
		      (unsigned long long)heap_sum, (unsigned long long)real);
	dso_cache_stats(c, &st);
	CHECK(st.bytes == sum && st.in_use == sum && st.objects == NLIBS &&
	      st.max_bytes == 0, "stats: %llu of %llu, %llu in use, %zu",
	      (unsigned long long)st.bytes, (unsigned long long)sum,
	      (unsigned long long)st.in_use, st.objects);
	for (int i = 0; i < NLIBS; i++)
		dso_put(d[i]);
	dso_cache_stats(c, &st);
	CHECK(st.objects == NLIBS && st.in_use == 0 && st.bytes == sum,
	      "no byte bound: all stay: %zu, %llu in use", st.objects,
	      (unsigned long long)st.in_use);
	dso_cache_free(c);
}

/* Past the byte bound: the idle ones go, least recently let go first. */
static void test_lru(void)
{
	struct dso_cache_stats st;
	struct dso_cache *c;
	struct dso *d[NLIBS], *again;
	uint64_t m[NLIBS];

	MUST(dso_cache_new("", &c));
	for (int i = 0; i < NLIBS; i++) {
		MUST(dso_cache_get(c, paths[i], paths[i], &d[i]));
		use(d[i], "main", 50);
		m[i] = dso_mem_bytes(d[i]);
	}
	/* room for the last two */
	dso_cache_set_bytes(c, m[2] + m[3], 0);
	dso_cache_stats(c, &st);
	CHECK(st.objects == NLIBS && !st.expired && dso_cache_pressed(c),
	      "all in use, over: %zu", st.objects);
	for (int i = 0; i < NLIBS; i++) {
		dso_put(d[i]);
		usleep(3000);
	}
	dso_cache_stats(c, &st);
	CHECK(st.objects == 2 && st.expired == 2 && !dso_cache_pressed(c) &&
	      st.bytes == m[2] + m[3] && !st.in_use,
	      "the two let go first went: %zu objects, %llu bytes",
	      st.objects, (unsigned long long)st.bytes);
	MUST(dso_cache_get(c, paths[3], paths[3], &again));
	CHECK(again == d[3], "the last let go stayed");
	dso_put(again);
	MUST(dso_cache_get(c, paths[2], paths[2], &again));
	CHECK(again == d[2], "the one before it stayed");
	dso_put(again);
	/* within the grace time nothing goes, past it everything */
	dso_cache_set_bytes(c, 1, 60000);
	dso_cache_stats(c, &st);
	CHECK(st.objects == 2, "within the grace time: %zu", st.objects);
	dso_cache_set_bytes(c, 1, 0);
	dso_cache_stats(c, &st);
	CHECK(st.objects == 0 && st.bytes == 0 && st.expired == 4,
	      "past it: %zu, %llu bytes", st.objects,
	      (unsigned long long)st.bytes);
	dso_cache_free(c);
}

/* In use past the bound: stays, said once (not again within the hour),
 * the cache pressed; let go, it goes. */
static void test_in_use(void)
{
	struct dso_cache_stats st;
	struct dso_cache *c;
	struct dso *held, *idle;

	MUST(dso_cache_new("", &c));
	MUST(dso_cache_get(c, paths[0], paths[0], &held));
	MUST(dso_cache_get(c, paths[3], paths[3], &idle));
	use(held, "malloc", 50);
	dso_put(idle);
	dso_cache_set_bytes(c, dso_mem_bytes(held) / 2, 0);
	warnings = 0;
	proffs_log_set_sink(count_sink);
	for (int i = 0; i < 3; i++)
		dso_cache_stats(c, &st);
	CHECK(st.objects == 1 && st.in_use == dso_mem_bytes(held) &&
	      st.bytes == st.in_use, "the one in use stays alone: %zu",
	      st.objects);
	CHECK(dso_cache_pressed(c), "pressed");
	CHECK(warnings == 1, "said %d times", warnings);
	dso_put(held);
	dso_cache_stats(c, &st);
	CHECK(st.objects == 0 && !dso_cache_pressed(c), "let go: %zu",
	      st.objects);
	/* over again within the hour: not said again */
	MUST(dso_cache_get(c, paths[0], paths[0], &held));
	use(held, "malloc", 50);
	dso_cache_stats(c, &st);
	CHECK(dso_cache_pressed(c), "pressed again");
	CHECK(warnings == 1, "a new time over: said %d times", warnings);
	proffs_log_set_sink(NULL);
	dso_put(held);
	dso_cache_free(c);
}

/* The rows a user keeps with an object: found by the next holder of the
 * same object, one size only, bounded, counted, expired with it. */
static void test_rows(void)
{
	uint64_t h0, m0, f0, h, m, f, before, row[12] = { 7 };
	struct dso_cache_stats st;
	struct dso_cache *c;
	struct dso *d, *again;

	MUST(dso_cache_new("", &c));
	MUST(dso_cache_get(c, paths[3], paths[3], &d));
	dso_rows_counters(&h0, &m0, &f0);
	CHECK(!dso_row_get(d, 0x1000, row, sizeof(row)), "none yet");
	before = dso_mem_bytes(d);
	for (uint64_t i = 0; i <= DSO_ROWS_MAX; i++) {
		row[0] = i;
		dso_row_put(d, 0x1000 + i, row, sizeof(row));
	}
	dso_row_put(d, 0x100, row, 8);	/* another size: not kept */
	dso_rows_counters(&h, &m, &f);
	CHECK(dso_rows_held(d) == DSO_ROWS_MAX && f == f0 + 1 && m == m0 + 1,
	      "bounded: %zu held, %llu refused", dso_rows_held(d),
	      (unsigned long long)(f - f0));
	CHECK(dso_mem_bytes(d) >= before + DSO_ROWS_MAX * sizeof(row),
	      "counted: %llu -> %llu", (unsigned long long)before,
	      (unsigned long long)dso_mem_bytes(d));
	dso_put(d);
	/* the next session gets the same object, and its rows */
	MUST(dso_cache_get(c, paths[3], paths[3], &again));
	CHECK(again == d && dso_row_get(again, 0x1000 + 5, row, sizeof(row)) &&
	      row[0] == 5 && !dso_row_get(again, 0x100, row, 8),
	      "kept across holders");
	dso_rows_counters(&h, &m, &f);
	CHECK(h == h0 + 1, "one hit: %llu", (unsigned long long)(h - h0));
	dso_cache_stats(c, &st);
	CHECK(st.rows == DSO_ROWS_MAX && st.row_hits == h, "status: %llu",
	      (unsigned long long)st.rows);
	dso_put(again);
	/* expired: the rows go with it */
	dso_cache_set_limits(c, 0, 256);
	dso_cache_stats(c, &st);
	CHECK(st.objects == 0 && st.rows == 0, "expired: %zu objects, %llu "
	      "rows", st.objects, (unsigned long long)st.rows);
	MUST(dso_cache_get(c, paths[3], paths[3], &d));
	CHECK(!dso_rows_held(d) && !dso_row_get(d, 0x1000 + 5, row,
						 sizeof(row)),
	      "loaded again without them");
	dso_put(d);
	dso_cache_free(c);
}

int main(void)
{
	find_libs();
	if (getenv("TEST_DSO_MEM_DEBUG"))	/* each dso's parts */
		proffs_log_set_level(PROFFS_LOG_DEBUG);
	test_accounting(NULL);	/* libc6-dbg's file where installed */
	test_accounting("");	/* none */
	test_lru();
	test_in_use();
	test_rows();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
