// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-name.c - fs/core/name.c against a table of names: every kind, format,
 * parameter and default, each name that is no file of proffs (ENOENT:
 * its kind or format is not the grammar's), each bad duration or query
 * of one that is (EINVAL), the sentence that says why, and the 255-byte
 * limit. Each parse starts from a request
 * full of garbage, so a default that is not written shows up.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fs/core/name.h"

#define CPU PROFFS_KIND_CPU
#define HEAP PROFFS_KIND_HEAP
#define ALLOCS PROFFS_KIND_ALLOCS
#define GOR PROFFS_KIND_GOROUTINE
#define WALL PROFFS_KIND_WALL
#define BLOCK PROFFS_KIND_BLOCK
#define MUTEX PROFFS_KIND_MUTEX
#define PBGZ PROFFS_FMT_PB_GZ
#define PB PROFFS_FMT_PB
#define SVG PROFFS_FMT_SVG
#define TXT PROFFS_FMT_TXT
#define FOLDED PROFFS_FMT_FOLDED

/*
 * Zero fields mean "the default": win 0 is the 30 s default with
 * has_window false (a given window is never 0), hz 0 is 99, rate 0 is
 * 524288, sample NULL is "", nokernel 0 is kernel=1.
 */
struct name_case {
	const char *name;
	int ret;
	enum proffs_kind kind;	/* checked on 0 and -EINVAL */
	enum proffs_format fmt;
	uint64_t win;		/* the rest on 0 only */
	uint32_t hz;
	uint32_t rate;
	int debug;
	const char *sample;
	bool nokernel;
};

#define OK(n, k, f, ...) { .name = n, .ret = 0, .kind = k, .fmt = f, \
			   __VA_ARGS__ }
#define INVAL(n, k, f) { .name = n, .ret = -EINVAL, .kind = k, .fmt = f }
#define NOENT(n) { .name = n, .ret = -ENOENT }

static const struct name_case cases[] = {
	/* kinds, aliases and default formats */
	OK("cpu", CPU, PBGZ),
	OK("profile", CPU, PBGZ),
	OK("flame", CPU, SVG),
	OK("heap", HEAP, PBGZ),
	OK("allocs", ALLOCS, PBGZ),
	OK("goroutine", GOR, PBGZ),
	OK("threads", GOR, PBGZ),
	OK("wall", WALL, PBGZ),
	OK("block", BLOCK, PBGZ),
	OK("mutex", MUTEX, PBGZ),
	OK("memstats", PROFFS_KIND_MEMSTATS, TXT),
	/* formats */
	OK("cpu.pb.gz", CPU, PBGZ),
	OK("cpu.pb", CPU, PB),
	OK("cpu.svg", CPU, SVG),
	OK("cpu.txt", CPU, TXT),
	OK("cpu.folded", CPU, FOLDED),
	OK("flame.pb.gz", CPU, PBGZ),
	OK("flame.txt", CPU, TXT),
	OK("heap.svg", HEAP, SVG),
	OK("allocs.pb", ALLOCS, PB),
	OK("goroutine.txt", GOR, TXT),
	OK("threads.folded", GOR, FOLDED),
	OK("wall.svg", WALL, SVG),
	OK("block.txt", BLOCK, TXT),
	OK("mutex.folded", MUTEX, FOLDED),
	OK("mutex.pb", MUTEX, PB),
	OK("memstats.txt", PROFFS_KIND_MEMSTATS, TXT),
	/* durations */
	OK("cpu_30s.pb.gz", CPU, PBGZ, .win = 30000),
	OK("cpu_500ms", CPU, PBGZ, .win = 500),
	OK("cpu_1s.svg", CPU, SVG, .win = 1000),
	OK("flame_5s", CPU, SVG, .win = 5000),
	OK("heap_10s.txt", HEAP, TXT, .win = 10000),
	OK("wall_10s", WALL, PBGZ, .win = 10000),
	OK("block_250ms.svg", BLOCK, SVG, .win = 250),
	INVAL("mutex_0s", MUTEX, PBGZ),
	OK("cpu_030s", CPU, PBGZ, .win = 30000),
	OK("cpu_1ms", CPU, PBGZ, .win = 1),
	OK("cpu_31536000s", CPU, PBGZ, .win = 31536000000ull),
	OK("cpu_31536000000ms", CPU, PBGZ, .win = 31536000000ull),
	INVAL("cpu_31536001s", CPU, PBGZ),
	INVAL("cpu_31536000001ms", CPU, PBGZ),
	INVAL("cpu_0s", CPU, PBGZ),
	INVAL("cpu_0ms.svg", CPU, SVG),
	INVAL("flame_000s", CPU, SVG),
	INVAL("cpu_99999999999999999999999s", CPU, PBGZ),
	INVAL("cpu_18446744073709551616ms", CPU, PBGZ),
	/* duration and seconds= together, compared in ms */
	OK("cpu_5s?seconds=5", CPU, PBGZ, .win = 5000),
	OK("cpu_1000ms?seconds=1", CPU, PBGZ, .win = 1000),
	OK("cpu_30s?seconds=30.pb.gz", CPU, PBGZ, .win = 30000),
	OK("cpu_2s.svg?seconds=2", CPU, SVG, .win = 2000),
	INVAL("cpu_1500ms?seconds=1", CPU, PBGZ),
	INVAL("cpu_30s?seconds=5", CPU, PBGZ),
	INVAL("cpu_1s.txt?seconds=2", CPU, TXT),
	/* query before and after the format */
	OK("profile?seconds=5.pb.gz", CPU, PBGZ, .win = 5000),
	OK("profile?seconds=5", CPU, PBGZ, .win = 5000),
	OK("profile?seconds=5.pb", CPU, PB, .win = 5000),
	OK("profile.pb.gz?seconds=5", CPU, PBGZ, .win = 5000),
	OK("heap.svg?sample=alloc_space", HEAP, SVG, .sample = "alloc_space"),
	OK("heap?sample=alloc_space.svg", HEAP, SVG, .sample = "alloc_space"),
	OK("goroutine.txt?debug=2", GOR, TXT, .debug = 2),
	OK("goroutine?debug=1.txt", GOR, TXT, .debug = 1),
	OK("threads?debug=0", GOR, PBGZ),
	OK("threads?debug=00.txt", GOR, TXT),
	OK("wall_10s?hz=99", WALL, PBGZ, .win = 10000, .hz = 99),
	OK("block?seconds=5.txt", BLOCK, TXT, .win = 5000),
	OK("mutex.svg?sample=contentions", MUTEX, SVG,
	   .sample = "contentions"),
	INVAL("wall?hz=0.svg", WALL, SVG),
	INVAL("block_2s?seconds=3", BLOCK, PBGZ),
	/* each parameter at its limits */
	OK("cpu?hz=999", CPU, PBGZ, .hz = 999),
	OK("cpu?hz=1", CPU, PBGZ, .hz = 1),
	OK("cpu?hz=1000000", CPU, PBGZ, .hz = 1000000),
	INVAL("cpu?hz=1000001", CPU, PBGZ),
	INVAL("cpu?hz=0", CPU, PBGZ),
	INVAL("flame?hz=0", CPU, SVG),
	INVAL("cpu?hz=18446744073709551616", CPU, PBGZ),
	OK("heap?rate=1", HEAP, PBGZ, .rate = 1),
	OK("heap?rate=524288", HEAP, PBGZ, .rate = 524288),
	OK("allocs?rate=4294967295", ALLOCS, PBGZ, .rate = 4294967295u),
	INVAL("allocs?rate=4294967296", ALLOCS, PBGZ),
	INVAL("heap?rate=0.txt", HEAP, TXT),
	INVAL("heap.txt?rate=0", HEAP, TXT),
	INVAL("goroutine.txt?debug=3", GOR, TXT),
	INVAL("goroutine?debug=99999999999999999999999", GOR, PBGZ),
	OK("cpu?seconds=1", CPU, PBGZ, .win = 1000),
	OK("cpu?seconds=31536000", CPU, PBGZ, .win = 31536000000ull),
	INVAL("cpu?seconds=31536001", CPU, PBGZ),
	INVAL("cpu?seconds=0", CPU, PBGZ),
	OK("heap.svg?sample=abcdefghijklmnopqrstuvwxyz_0123",
	   HEAP, SVG, .sample = "abcdefghijklmnopqrstuvwxyz_0123"),
	INVAL("heap.svg?sample=abcdefghijklmnopqrstuvwxyz_01234", HEAP, SVG),
	OK("cpu.svg?sample=X", CPU, SVG, .sample = "X"),
	/* several parameters; those that do not apply are accepted */
	OK("cpu.svg?sample=cpu&hz=199&seconds=2",
	   CPU, SVG, .win = 2000, .hz = 199, .sample = "cpu"),
	OK("cpu?seconds=2&hz=5&rate=7&debug=1&sample=x_Y9.txt",
	   CPU, TXT, .win = 2000, .hz = 5, .rate = 7, .debug = 1,
	   .sample = "x_Y9"),
	OK("heap?hz=7&debug=2", HEAP, PBGZ, .hz = 7, .debug = 2),
	/* kernel frames: 0 or 1 */
	OK("cpu?kernel=0", CPU, PBGZ, .nokernel = true),
	OK("cpu?kernel=1.svg", CPU, SVG),
	OK("cpu_5s?kernel=000&hz=499.folded", CPU, FOLDED, .win = 5000,
	   .hz = 499, .nokernel = true),
	OK("goroutine.txt?debug=2&kernel=0", GOR, TXT, .debug = 2,
	   .nokernel = true),
	OK("flame?kernel=01", CPU, SVG),
	INVAL("cpu?kernel=2", CPU, PBGZ),
	INVAL("threads.txt?kernel=0&kernel=0", GOR, TXT),
	INVAL("cpu?kernel=18446744073709551616", CPU, PBGZ),
	INVAL("cpu?kernel=", CPU, PBGZ),
	INVAL("cpu?kernel=no", CPU, PBGZ),
	INVAL("cpu?kernel", CPU, PBGZ),
	INVAL("cpu?Kernel=0", CPU, PBGZ),
	/* a parameter twice, equal or not */
	INVAL("cpu?hz=1&hz=1", CPU, PBGZ),
	INVAL("cpu?hz=1&hz=2", CPU, PBGZ),
	INVAL("cpu?seconds=5&seconds=5", CPU, PBGZ),
	INVAL("heap.svg?sample=a&sample=b", HEAP, SVG),
	/* grammar errors win over value errors */
	INVAL("cpu_0s?hz=x", CPU, PBGZ),
	NOENT("cpu_0s.xyz"),
	INVAL("cpu?hz=0&bogus=1", CPU, PBGZ),
	INVAL("cpu?hz=1&hz=x", CPU, PBGZ),
	INVAL("cpu?seconds=0&", CPU, PBGZ),
	/* unknown kinds and formats, case */
	NOENT(""),
	NOENT("CPU"),
	NOENT("Cpu.pb.gz"),
	NOENT("cpu.PB.GZ"),
	NOENT("cpux"),
	NOENT("cp"),
	NOENT("memory"),
	NOENT("blocked.pb.gz"),
	NOENT("Wall"),
	NOENT("mutexes"),
	NOENT("cpu."),
	NOENT("cpu.gz"),
	/* json is a format of the grammar since trace (SPEC §10); cpu
	 * is not served in it: ENOENT at lookup (output.c, test_record) */
	OK("cpu.json", CPU, PROFFS_FMT_JSON),
	NOENT("cpu.jsonl"),
	OK("trace_3s.json", PROFFS_KIND_TRACE, PROFFS_FMT_JSON, .win = 3000),
	OK("trace", PROFFS_KIND_TRACE, PROFFS_FMT_JSON),
	NOENT("cpu.pb.gz.svg"),
	NOENT("cpu.svg.pb"),
	NOENT("cpu..svg"),
	NOENT("cpu.svg."),
	NOENT(".pb.gz"),
	/* bad durations */
	NOENT("_30s"),
	INVAL("cpu_", CPU, PBGZ),
	INVAL("cpu_30", CPU, PBGZ),
	INVAL("cpu_s", CPU, PBGZ),
	INVAL("cpu_ms", CPU, PBGZ),
	INVAL("cpu_30S", CPU, PBGZ),
	INVAL("cpu_30m", CPU, PBGZ),
	INVAL("cpu_30sec", CPU, PBGZ),
	INVAL("cpu_30us", CPU, PBGZ),
	INVAL("cpu_+30s", CPU, PBGZ),
	INVAL("cpu_-30s", CPU, PBGZ),
	INVAL("cpu_ 30s", CPU, PBGZ),
	INVAL("cpu_3 0s", CPU, PBGZ),
	NOENT("cpu_1.5s"),
	INVAL("cpu_30s_5s", CPU, PBGZ),
	INVAL("cpu__30s", CPU, PBGZ),
	NOENT("cpu30s"),
	/* bad queries */
	INVAL("cpu?", CPU, PBGZ),
	INVAL("cpu.svg?", CPU, SVG),
	INVAL("cpu?.svg", CPU, PBGZ),
	INVAL("cpu?&hz=1", CPU, PBGZ),
	INVAL("cpu?hz=1&", CPU, PBGZ),
	INVAL("cpu?hz=1&&rate=2", CPU, PBGZ),
	INVAL("cpu?&&", CPU, PBGZ),
	INVAL("cpu?hz", CPU, PBGZ),
	INVAL("cpu?hz=", CPU, PBGZ),
	INVAL("cpu?=5", CPU, PBGZ),
	INVAL("cpu?hz==5", CPU, PBGZ),
	INVAL("cpu?hz=+5", CPU, PBGZ),
	INVAL("cpu?hz=-5", CPU, PBGZ),
	INVAL("cpu?hz=5x", CPU, PBGZ),
	INVAL("cpu?hz=0x10", CPU, PBGZ),
	INVAL("cpu?hz= 5", CPU, PBGZ),
	INVAL("cpu?HZ=5", CPU, PBGZ),
	INVAL("cpu?freq=5", CPU, PBGZ),
	INVAL("cpu?seconds=5s", CPU, PBGZ),
	INVAL("cpu?sample=", CPU, PBGZ),
	INVAL("cpu?sample=a-b", CPU, PBGZ),
	INVAL("cpu?sample=a b", CPU, PBGZ),
	INVAL("heap?sample=a.b", HEAP, PBGZ),
	INVAL("heap.svg?sample=a.b", HEAP, SVG),
	INVAL("flame.svg?sample=x.svg", CPU, SVG),
	INVAL("cpu?hz=5?rate=1", CPU, PBGZ),
	INVAL("cpu.svg?hz=5.txt", CPU, SVG),
	INVAL("cpu?hz=5.svg.txt", CPU, TXT),
	INVAL("cpu?hz=5..svg", CPU, SVG),
	INVAL("cpu?hz=5.svg?", CPU, PBGZ),
	INVAL("cpu?hz=5;rate=1", CPU, PBGZ),
	NOENT("?hz=5"),
	/* trailing and leading garbage */
	NOENT("cpu_30s.pb.gz "),
	NOENT(" cpu"),
	NOENT("cpu\n"),
	NOENT("cpu/heap"),
	NOENT("cpu.pb.gz/"),
	NOENT("cpu\xc3\xa9"),
	NOENT("heap.pb.gzip"),
};


static void check_fields(const struct name_case *c,
			 const struct proffs_request *r)
{
	uint64_t win = c->win ? c->win : PROFFS_DEFAULT_SECONDS * 1000ull;
	uint32_t hz = c->hz ? c->hz : PROFFS_DEFAULT_HZ;
	uint32_t rate = c->rate ? c->rate : PROFFS_DEFAULT_RATE;
	const char *sample = c->sample ? c->sample : "";

	CHECK(r->has_window == (c->win != 0), "'%s': has_window %d",
	      c->name, r->has_window);
	CHECK(r->window_ms == win, "'%s': window_ms %llu, want %llu",
	      c->name, (unsigned long long)r->window_ms,
	      (unsigned long long)win);
	CHECK(r->hz == hz, "'%s': hz %u, want %u", c->name, r->hz, hz);
	CHECK(r->rate == rate, "'%s': rate %u, want %u", c->name, r->rate,
	      rate);
	/* named, the default's value too: never made coarser */
	CHECK(r->rate_named == (c->rate != 0), "'%s': rate_named %d",
	      c->name, r->rate_named);
	CHECK(r->debug == c->debug, "'%s': debug %d, want %d", c->name,
	      r->debug, c->debug);
	CHECK(r->kernel == !c->nokernel, "'%s': kernel %d", c->name,
	      r->kernel);
	CHECK(memchr(r->sample, '\0', sizeof(r->sample)) &&
	      !strcmp(r->sample, sample),
	      "'%s': sample '%.*s', want '%s'", c->name,
	      (int)sizeof(r->sample), r->sample, sample);
}

static void run_case(const struct name_case *c)
{
	struct proffs_request r;
	int ret;

	memset(&r, 0xa5, sizeof(r));
	ret = name_parse(c->name, &r);
	CHECK(ret == c->ret, "'%s': returned %d, want %d", c->name, ret,
	      c->ret);
	if (ret != c->ret || ret == -ENOENT)
		return;
	CHECK(r.kind == c->kind, "'%s': kind %d, want %d", c->name, r.kind,
	      c->kind);
	CHECK(r.format == c->fmt, "'%s': format %d, want %d", c->name,
	      r.format, c->fmt);
	if (!ret)
		check_fields(c, &r);
}

/* NAME_MAX: a 255-byte name parses, 256 bytes do not, even grammatical. */
static void test_length(void)
{
	char name[300];
	struct proffs_request r;
	size_t len;

	for (len = 255; len <= 256; len++) {
		memset(name, '0', len);
		memcpy(name, "cpu_", 4);
		memcpy(name + len - 3, "30s", 3);
		name[len] = '\0';
		CHECK(name_parse(name, &r) == (len == 255 ? 0 : -ENOENT),
		      "%zu-byte name", len);
		if (len == 255)
			CHECK(r.has_window && r.window_ms == 30000,
			      "255-byte name: window %llu",
			      (unsigned long long)r.window_ms);
	}
	memset(name, 'x', 299);
	name[299] = '\0';
	CHECK(name_parse(name, &r) == -ENOENT, "299 bytes of x");
	CHECK(name_parse(NULL, &r) == -ENOENT, "NULL name");
}

static void test_strings(void)
{
	static const char *const kinds[] = { "cpu", "heap", "allocs",
					     "goroutine", "wall", "block",
					     "mutex", "memstats", "trace" };
	static const char *const fmts[] = { "pb.gz", "pb", "svg", "txt",
					    "folded", "json" };
	struct proffs_request r;
	char name[64];
	int i;

	for (i = 0; i < PROFFS_KIND__COUNT; i++) {
		CHECK(!strcmp(name_kind_str(i), kinds[i]), "kind %d: %s", i,
		      name_kind_str(i));
		/* The canonical strings are names the parser accepts. */
		CHECK(!name_parse(name_kind_str(i), &r) && (int)r.kind == i,
		      "kind string %s does not parse back", kinds[i]);
	}
	for (i = 0; i < PROFFS_FMT__COUNT; i++) {
		CHECK(!strcmp(name_format_str(i), fmts[i]), "format %d: %s",
		      i, name_format_str(i));
		snprintf(name, sizeof(name), "heap.%s", name_format_str(i));
		CHECK(!name_parse(name, &r) && (int)r.format == i,
		      "format string %s does not parse back", fmts[i]);
	}
	CHECK(!strcmp(name_kind_str(PROFFS_KIND__COUNT), "?"), "kind COUNT");
	CHECK(!strcmp(name_kind_str((enum proffs_kind)-1), "?"), "kind -1");
	CHECK(!strcmp(name_format_str(PROFFS_FMT__COUNT), "?"), "fmt COUNT");
	CHECK(!strcmp(name_format_str((enum proffs_format)-1), "?"),
	      "fmt -1");
}

/* Every failure says why, and the mistakes say what to do. */
static void test_why(void)
{
	static const struct {
		const char *name;
		int ret;
		const char *why;
	} whys[] = {
		{ "cpu_5.pb.gz", -EINVAL, "a duration needs a unit: "
		  "cpu_5s.pb.gz or cpu_500ms.pb.gz" },
		{ "cpu_5s.pdf", -ENOENT, "'pdf' is not a format" },
		{ "heap?seconds=-1.pb.gz", -EINVAL, "seconds=-1: seconds= "
		  "takes a whole number" },
		{ "cpu_1h", -EINVAL, "not 'h': cpu_3600s" },
		{ "cpu?foo=1", -EINVAL, "unknown parameter 'foo'" },
		{ "?foo=1", -ENOENT, "not a file proffs serves" },
		{ "cpu_0s", -EINVAL, "longer than 0" },
		{ "cpu?hz=1&hz=1", -EINVAL, "hz= given twice" },
		{ "cpu_2s?seconds=3", -EINVAL, "two different windows" },
		{ "goroutine.txt?debug=3", -EINVAL, "debug= takes 0 to 2" },
	};
	struct proffs_request r;
	char why[200];

	for (size_t i = 0; i < sizeof(whys) / sizeof(whys[0]); i++) {
		int ret = name_parse_why(whys[i].name, &r, why, sizeof(why));

		CHECK(ret == whys[i].ret, "'%s': returned %d", whys[i].name,
		      ret);
		CHECK(strstr(why, whys[i].why), "'%s': why '%s', want '%s'",
		      whys[i].name, why, whys[i].why);
	}
	/* every failing case has a sentence, every good one none */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret = name_parse_why(cases[i].name, &r, why, sizeof(why));

		CHECK(ret ? why[0] != '\0' : why[0] == '\0',
		      "'%s': returned %d, why '%s'", cases[i].name, ret, why);
	}
	CHECK(name_parse_why("cpu_5", &r, why, 8) == -EINVAL &&
	      strlen(why) == 7, "a short buffer: '%s'", why);
}

/* The past (SPEC §10): _lastNs and base=prev | base=lastNs; a bad
 * duration or base= value is EINVAL, as every bad value is (test_why). */
static void test_past(void)
{
	static const struct {
		const char *name;
		int ret;
		bool last;
		uint64_t window_ms;
		enum proffs_base base;
		uint64_t base_ms;
	} cases[] = {
		{ "cpu_last30s.pb.gz", 0, true, 30000, PROFFS_BASE_NONE, 0 },
		{ "cpu_last1s", 0, true, 1000, PROFFS_BASE_NONE, 0 },
		{ "flame_last600s.svg", 0, true, 600000, PROFFS_BASE_NONE, 0 },
		{ "cpu_last10s.svg?base=prev", 0, true, 10000,
		  PROFFS_BASE_PREV, 0 },
		{ "cpu_last10s?base=prev.svg", 0, true, 10000,
		  PROFFS_BASE_PREV, 0 },
		{ "cpu_5s.txt?base=last60s", 0, false, 5000,
		  PROFFS_BASE_LAST, 60000 },
		{ "cpu_30s", 0, false, 30000, PROFFS_BASE_NONE, 0 },
		{ "cpu_last0s", -EINVAL, true, 0, 0, 0 },
		{ "cpu_5s?base=last0s", -EINVAL, false, 0, 0, 0 },
		{ "cpu_5s?base=prev&base=prev", -EINVAL, false, 0, 0, 0 },
		{ "cpu_last5ms", -EINVAL, false, 0, 0, 0 },
		{ "cpu_last", -EINVAL, false, 0, 0, 0 },
		{ "cpu_lasts", -EINVAL, false, 0, 0, 0 },
		{ "cpu_last5", -EINVAL, false, 0, 0, 0 },
		{ "cpu_5s?base=next", -EINVAL, false, 0, 0, 0 },
		{ "cpu_5s?base=last5", -EINVAL, false, 0, 0, 0 },
		{ "cpu_5s?base=last5ms", -EINVAL, false, 0, 0, 0 },
		{ "cpu_5s?base=", -EINVAL, false, 0, 0, 0 },
	};
	struct proffs_request r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret = name_parse(cases[i].name, &r);

		CHECK(ret == cases[i].ret, "'%s': returned %d, want %d",
		      cases[i].name, ret, cases[i].ret);
		if (ret || cases[i].ret)
			continue;
		CHECK(r.last == cases[i].last && r.has_window &&
		      r.window_ms == cases[i].window_ms &&
		      r.base == cases[i].base &&
		      r.base_ms == cases[i].base_ms,
		      "'%s': last %d window %llu base %d base_ms %llu",
		      cases[i].name, r.last, (unsigned long long)r.window_ms,
		      r.base, (unsigned long long)r.base_ms);
	}
	CHECK(!name_parse("cpu_30s", &r) && !r.last && !r.base,
	      "a live window is no past one");
}

int main(void)
{
	size_t n = sizeof(cases) / sizeof(cases[0]);

	for (size_t i = 0; i < n; i++)
		run_case(&cases[i]);
	test_length();
	test_strings();
	test_why();
	test_past();
	if (failures) {
		fprintf(stderr, "test-name: %d failure(s)\n", failures);
		return 1;
	}
	printf("test-name: %zu cases, all passed\n", n);
	return 0;
}
