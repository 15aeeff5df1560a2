// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-kinds.c - the rows of fs/core/kinds.c, linked with the run functions
 * and renderers they name: every kind has a complete row, its words parse
 * back to it in their default format, which it is served in, and the
 * window and session-key rules hold as the spec states them (SPEC §1-§2).
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "fs/core/kinds.h"
#include "fs/core/name.h"
#include "fs/core/output.h"

static void test_rows(void)
{
	for (int k = 0; k < PROFFS_KIND__COUNT; k++) {
		const struct kind_ops *row = kinds_row(k);

		CHECK(row && row->name, "kind %d has no row", k);
		if (!row || !row->name)
			continue;
		CHECK(!strcmp(row->words[0].word, row->name),
		      "%s: first word %s", row->name, row->words[0].word);
		CHECK(row->run, "%s: no run function", row->name);
		CHECK(row->busy && *row->busy, "%s: no -EBUSY words",
		      row->name);
		for (int j = 0; j < k; j++)
			CHECK(strcmp(kinds_row(j)->name, row->name),
			      "%s twice", row->name);
		for (size_t w = 0; w < KIND_WORDS_MAX && row->words[w].word;
		     w++) {
			struct proffs_request r;

			CHECK(!name_parse(row->words[w].word, &r) &&
			      (int)r.kind == k &&
			      r.format == row->words[w].format,
			      "%s does not parse to its row",
			      row->words[w].word);
			CHECK(output_supported(k, row->words[w].format),
			      "%s: its default format is not served",
			      row->words[w].word);
		}
		/* A kind samples over a window or not: only windowed
		 * kinds have a rate to sample at. */
		CHECK(row->time != KIND_SNAPSHOT || !row->key,
		      "%s: a snapshot with a sampling key", row->name);
	}
	CHECK(!kinds_row(PROFFS_KIND__COUNT), "row past the last");
	CHECK(!kinds_row((enum proffs_kind)-1), "row -1");
}

static void test_words(void)
{
	static const char *const words[] = {
		"cpu", "profile", "flame", "heap", "allocs", "goroutine",
		"threads", "wall", "block", "mutex", "memstats", "trace",
	};
	enum proffs_format f;
	enum proffs_kind k;
	const char *w;
	size_t i;

	for (i = 0; !kinds_word(i, &w, &k, &f); i++) {
		CHECK(i < sizeof(words) / sizeof(words[0]) &&
		      !strcmp(w, words[i]), "word %zu: %s", i, w);
		CHECK(name_kind_word(i) && !strcmp(name_kind_word(i), w),
		      "name_kind_word(%zu)", i);
	}
	CHECK(i == sizeof(words) / sizeof(words[0]), "%zu words", i);
	CHECK(!name_kind_word(i), "a word past the last");
}

/* The window a session spans (and is keyed by): SPEC §2. */
static void test_window(void)
{
	static const struct {
		const char *name;
		uint64_t ms;
	} cases[] = {
		{ "cpu", 30000 }, { "cpu_5s", 5000 }, { "wall_500ms", 500 },
		{ "block?seconds=2", 2000 }, { "mutex", 30000 },
		{ "goroutine", 0 }, { "goroutine_5s", 0 },
		{ "memstats_5s", 0 }, { "heap", 0 }, { "heap_5s", 5000 },
		{ "allocs", 0 }, { "allocs?seconds=3", 3000 },
		{ "trace_3s.json", 3000 }, { "cpu_last20s", 20000 },
	};
	struct proffs_request r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(!name_parse(cases[i].name, &r), "%s", cases[i].name);
		CHECK(kinds_window_ms(&r) == cases[i].ms, "%s: %llu ms",
		      cases[i].name,
		      (unsigned long long)kinds_window_ms(&r));
	}
}

/* Who may show kernel frames, who is served in /prof/all, what a
 * goroutine pprof merges: the columns the front ends read. */
static void test_columns(void)
{
	CHECK(kinds_row(PROFFS_KIND_CPU)->host, "cpu in /prof/all");
	for (int k = 0; k < PROFFS_KIND__COUNT; k++)
		CHECK(k == PROFFS_KIND_CPU || !kinds_row(k)->host,
		      "%s in /prof/all", name_kind_str(k));
	CHECK(name_kind_kernel(PROFFS_KIND_CPU) &&
	      !name_kind_sleeping(PROFFS_KIND_CPU), "cpu frames");
	CHECK(name_kind_sleeping(PROFFS_KIND_WALL), "wall frames");
	CHECK(!name_kind_kernel(PROFFS_KIND_HEAP), "heap frames");
	CHECK(kinds_row(PROFFS_KIND_GOROUTINE)->merge_labels, "goroutine");
	CHECK(kinds_row(PROFFS_KIND_GOROUTINE)->finishes, "goroutine");
	CHECK(kinds_row(PROFFS_KIND_HEAP)->key == KIND_KEY_RATE, "heap key");
	CHECK(kinds_row(PROFFS_KIND_CPU)->key == (KIND_KEY_HZ | KIND_KEY_PAST),
	      "cpu key");
	/* the recorder's past is cpu's alone; trace is a timeline, json */
	for (int k = 0; k < PROFFS_KIND__COUNT; k++)
		CHECK(k == PROFFS_KIND_CPU ||
		      !(kinds_row(k)->key & KIND_KEY_PAST), "%s: past",
		      name_kind_str(k));
	CHECK(kinds_row(PROFFS_KIND_TRACE)->key == KIND_KEY_HZ, "trace key");
	CHECK(output_supported(PROFFS_KIND_TRACE, PROFFS_FMT_JSON) &&
	      output_supported(PROFFS_KIND_TRACE, PROFFS_FMT_PB_GZ) &&
	      !output_supported(PROFFS_KIND_TRACE, PROFFS_FMT_SVG) &&
	      !output_supported(PROFFS_KIND_CPU, PROFFS_FMT_JSON),
	      "json is trace's");
	CHECK(!output_supported(PROFFS_KIND_MEMSTATS, PROFFS_FMT_PB_GZ),
	      "memstats.pb.gz");
	CHECK(output_supported(PROFFS_KIND_MEMSTATS, PROFFS_FMT_TXT),
	      "memstats.txt");
	CHECK(!output_supported(PROFFS_KIND__COUNT, PROFFS_FMT_TXT),
	      "kind past the last");
	CHECK(!output_supported(PROFFS_KIND_CPU, PROFFS_FMT__COUNT),
	      "format past the last");
}

int main(void)
{
	test_rows();
	test_words();
	test_window();
	test_columns();
	if (failures) {
		fprintf(stderr, "test-kinds: %d failure(s)\n", failures);
		return 1;
	}
	printf("test-kinds: all passed\n");
	return 0;
}
