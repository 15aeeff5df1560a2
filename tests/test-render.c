// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-render.c - the human renderings: .folded and .txt of small
 * hand-built profiles (inlined frames, labels that must not split lines,
 * two sample types, an unsymbolized frame, a name with "<>&") compared
 * byte for byte to tests/golden/; folded values sum to profile_total();
 * heap?debug=1 ends with the profile's MemStats figures, as Go's, and
 * memstats.txt is that block alone;
 * a Go program's thread dump names its goroutines as Go's does;
 * the SVG is well-formed (xmllint when installed), names are escaped, the
 * only URI is the SVG namespace; a 50,000-stack profile renders under
 * 5 MB. Writes small.svg and big.svg to $TEST_BUILD_DIR for the browser
 * test (tests/integration/test_render_browser.py).
 *
 * RENDER_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render/flame.h"
#include "check.h"
#include "render/folded.h"
#include "render/heap_text.h"
#include "sampler/model/profile.h"
#include "render/text.h"
#include "render/threads_text.h"

#define UGLY "tmpl<a&b>::op\"x\"'"
#define UGLY_ESC "tmpl&lt;a&amp;b&gt;::op&quot;x&quot;&apos;"
#define PERIOD 10000000ll

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t fn(struct profile *p, const char *name)
{
	uint64_t id;

	MUST(profile_add_function(p, name, NULL, "app.c", 1, &id));
	return id;
}

static uint64_t loc(struct profile *p, uint64_t mid, uint64_t f_inner,
		    uint64_t f_outer)
{
	struct pf_line l[2] = { { f_inner, 10 }, { f_outer, 20 } };
	uint64_t id;

	MUST(profile_add_location(p, mid, 0x1000 + profile_nlocations(p),
				  l, f_inner ? (f_outer ? 2 : 1) : 0, &id));
	return id;
}

/*
 * main -> run -> work (60 samples, thread 1; 30, thread 2: same stack,
 * one folded line); main -> run -> compute with hash inlined (25);
 * main -> compute (10, compute not inlined there); main -> UGLY -> [app]
 * (4, unsymbolized); main -> run -> run -> work (1: recursion counted
 * once in cum). Types samples/count and cpu/nanoseconds.
 */
static struct profile *cpu_profile(void)
{
	struct profile *p;
	struct pf_header *h;
	struct pf_mapping m = { .start = 0x1000, .limit = 0x9000,
				.has_functions = true };
	struct pf_label t1, t2;
	uint64_t mid, f_main, f_run, f_work, f_comp, f_hash, f_ugly;
	uint64_t l_main, l_run, l_work, l_inl, l_comp, l_ugly, l_bare;

	MUST(profile_new(&p));
	MUST(profile_add_sample_type(p, "samples", "count"));
	MUST(profile_add_sample_type(p, "cpu", "nanoseconds"));
	MUST(profile_set_period(p, "cpu", "nanoseconds", PERIOD));
	h = profile_header(p);
	h->duration_nanos = 2000000000ll;
	h->pid = 77;
	h->command = profile_intern(p, "/usr/bin/app --fast");
	h->kind = profile_intern(p, "cpu");
	m.filename = profile_intern(p, "/usr/bin/app");
	m.build_id = profile_intern(p, "abc123");
	MUST(profile_add_mapping(p, &m, &mid));
	f_main = fn(p, "main");
	f_run = fn(p, "run");
	f_work = fn(p, "work");
	f_comp = fn(p, "compute");
	f_hash = fn(p, "hash");
	/* Demangled, as the symbolizer leaves C++ names: pprof keeps it. */
	MUST(profile_add_function(p, UGLY, "_Z4tmplIcE2opEv", "app.cc", 1,
				  &f_ugly));
	l_main = loc(p, mid, f_main, 0);
	l_run = loc(p, mid, f_run, 0);
	l_work = loc(p, mid, f_work, 0);
	l_inl = loc(p, mid, f_hash, f_comp);
	l_comp = loc(p, mid, f_comp, 0);
	l_ugly = loc(p, mid, f_ugly, 0);
	l_bare = loc(p, mid, 0, 0);
	t1 = (struct pf_label){ profile_intern(p, "thread"),
				profile_intern(p, "1"), 0, 0 };
	t2 = (struct pf_label){ t1.key, profile_intern(p, "2"), 0, 0 };

	struct {
		uint64_t locs[4];
		uint32_t n;
		struct pf_label *label;
		int64_t count;
	} s[] = {
		{ { l_work, l_run, l_main }, 3, &t1, 60 },
		{ { l_work, l_run, l_main }, 3, &t2, 30 },
		{ { l_inl, l_run, l_main }, 3, &t1, 25 },
		{ { l_comp, l_main }, 2, &t1, 10 },
		{ { l_bare, l_ugly, l_main }, 3, &t2, 4 },
		{ { l_work, l_run, l_run, l_main }, 4, &t1, 1 },
	};
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		int64_t v[2] = { s[i].count, s[i].count * PERIOD };

		MUST(profile_add_sample(p, s[i].locs, s[i].n, s[i].label, 1,
					v));
	}
	return p;
}

/* Bytes: alloc_space default, so kB/MB scaling shows; a zero sample. */
static struct profile *heap_profile(void)
{
	struct profile *p;
	uint64_t f_main, f_alloc, f_grow, l_main, l_alloc, l_grow;

	MUST(profile_new(&p));
	MUST(profile_add_sample_type(p, "alloc_objects", "count"));
	MUST(profile_add_sample_type(p, "alloc_space", "bytes"));
	MUST(profile_set_period(p, "space", "bytes", 524288));
	profile_header(p)->default_sample_type =
		profile_intern(p, "alloc_space");
	profile_header(p)->kind = profile_intern(p, "allocs");
	f_main = fn(p, "main");
	f_alloc = fn(p, "xmalloc");
	f_grow = fn(p, "vec_grow");
	l_main = loc(p, 0, f_main, 0);
	l_alloc = loc(p, 0, f_alloc, 0);
	l_grow = loc(p, 0, f_alloc, f_grow);

	uint64_t a[] = { l_alloc, l_main }, g[] = { l_grow, l_main };
	int64_t va[2] = { 3, 3 * 1024 * 1024 }, vg[2] = { 12, 1536 };
	int64_t vz[2] = { 0, 0 }, vm[2] = { 1, 512 };
	uint64_t m[] = { l_main };

	MUST(profile_add_sample(p, a, 2, NULL, 0, va));
	MUST(profile_add_sample(p, g, 2, NULL, 0, vg));
	MUST(profile_add_sample(p, m, 1, NULL, 0, vm));
	MUST(profile_add_sample(p, a, 1, NULL, 0, vz));
	return p;
}

/*
 * Go's four heap types, scaled as heap_model.c scales them at period
 * (the rate): 1000 sampled 64-byte objects (weight 8192.5 each at the
 * default rate) of which 400 are freed; 2 sampled 1 MiB blocks, both
 * live; a stack with nothing left.
 */
static struct profile *heap4_profile(int64_t rate)
{
	struct profile *p;
	uint64_t f_main, f_small, f_big, l_main, l_small, l_big;
	double w_small = rate > 1 ? 1 / -expm1(-64.0 / rate) : 1;
	double w_big = rate > 1 ? 1 / -expm1(-1048576.0 / rate) : 1;

	MUST(profile_new(&p));
	MUST(profile_add_sample_type(p, "alloc_objects", "count"));
	MUST(profile_add_sample_type(p, "alloc_space", "bytes"));
	MUST(profile_add_sample_type(p, "inuse_objects", "count"));
	MUST(profile_add_sample_type(p, "inuse_space", "bytes"));
	MUST(profile_set_period(p, "space", "bytes", rate));
	profile_header(p)->default_sample_type =
		profile_intern(p, "inuse_space");
	f_main = fn(p, "main");
	f_small = fn(p, "small_site");
	f_big = fn(p, "big_site");
	l_main = loc(p, 0, f_main, 0);
	l_small = loc(p, 0, f_small, 0);
	l_big = loc(p, 0, f_big, 0);

	uint64_t a[] = { l_small, l_main }, b[] = { l_big, l_main };
	uint64_t m[] = { l_main };
	int64_t va[4] = {
		llround(1000 * w_small), llround(64000 * w_small),
		llround(600 * w_small), llround(38400 * w_small),
	};
	int64_t vb[4] = {
		llround(2 * w_big), llround(2097152 * w_big),
		llround(2 * w_big), llround(2097152 * w_big),
	};
	int64_t vm[4] = { 0, 0, 0, 0 };

	struct pf_label la = { .key = profile_intern(p, "bytes"), .num = 64 };
	struct pf_label lb = { .key = la.key, .num = 1048576 };

	MUST(profile_add_sample(p, a, 2, &la, 1, va));
	MUST(profile_add_sample(p, b, 2, &lb, 1, vb));
	MUST(profile_add_sample(p, m, 1, NULL, 0, vm));
	return p;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc(n + 1)) &&
	    fread(buf, 1, n, f) == (size_t)n) {
		buf[n] = '\0';
		*len = n;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static void write_file(const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(buf, 1, len, f) != len || fclose(f))
		die(path, -errno);
}

static void check_golden(const char *name, const char *buf, size_t len)
{
	const char *src = getenv("TEST_SRC_DIR");
	char path[4096];
	char *want;
	size_t wlen = 0;

	snprintf(path, sizeof(path), "%s/golden/%s", src ? src : "tests",
		 name);
	if (getenv("RENDER_UPDATE_GOLDEN")) {
		write_file(path, buf, len);
		return;
	}
	want = read_file(path, &wlen);
	CHECK(want, "%s missing (RENDER_UPDATE_GOLDEN=1 writes it)", path);
	if (!want)
		return;
	CHECK(wlen == len && !memcmp(want, buf, len),
	      "%s differs; got:\n%s", name, buf);
	free(want);
}

static int64_t folded_sum(const char *buf)
{
	int64_t sum = 0;
	const char *nl, *sp;

	for (; *buf; buf = nl + 1) {
		nl = strchr(buf, '\n');
		if (!nl)
			return -1;
		for (sp = nl; sp > buf && sp[-1] != ' '; sp--)
			;
		sum += strtoll(sp, NULL, 10);
	}
	return sum;
}

static void check_folded(struct profile *p, const char *golden, int idx,
			 size_t vi)
{
	char *buf = NULL;
	size_t len = 0;

	MUST(folded_render(p, idx, &buf, &len));
	CHECK(strlen(buf) == len, "NUL-terminated at len");
	CHECK(folded_sum(buf) == profile_total(p, vi), "%" PRId64 " != %"
	      PRId64, folded_sum(buf), profile_total(p, vi));
	if (golden)
		check_golden(golden, buf, len);
	free(buf);
}

static void check_text(struct profile *p, const char *golden, int idx)
{
	char *buf = NULL;
	size_t len = 0;

	MUST(text_top_render(p, idx, &buf, &len));
	CHECK(strlen(buf) == len, "NUL-terminated at len");
	check_golden(golden, buf, len);
	free(buf);
}

static void test_folded_text(void)
{
	struct profile *cpu = cpu_profile(), *heap = heap_profile();
	char *buf = (char *)"untouched";
	size_t len = 0;

	check_folded(cpu, "cpu.folded", -1, 1);
	check_folded(cpu, NULL, 1, 1);
	check_folded(cpu, "cpu-samples.folded", 0, 0);
	check_folded(heap, "heap.folded", -1, 1);
	check_folded(heap, NULL, 0, 0);
	check_text(cpu, "cpu.txt", -1);
	check_text(cpu, "cpu-samples.txt", 0);
	check_text(heap, "heap.txt", -1);
	check_text(heap, "heap-objects.txt", 0);
	CHECK(folded_render(cpu, 2, &buf, &len) == -EINVAL, "index 2");
	CHECK(text_top_render(cpu, -2, &buf, &len) == -EINVAL, "index -2");
	CHECK(!strcmp(buf, "untouched"), "buf untouched on failure");
	profile_free(cpu);
	profile_free(heap);
}

/* heap?debug=1: the sampled counts back (unscaled), largest in use
 * first, twice the rate in the header; golden at the default rate. */
#define HEAP_HEAD "heap profile: 602: 2135552 [1002: 2161152] @ "
static void test_heap_text(void)
{
	struct profile *p = heap4_profile(524288), *exact = heap4_profile(1);
	struct profile *two = heap_profile();
	char *buf = NULL;
	size_t len = 0;

	MUST(heap_text_render(p, &buf, &len));
	CHECK(strlen(buf) == len, "NUL-terminated at len");
	CHECK(!strncmp(buf, HEAP_HEAD "heap/1048576\n",
		       strlen(HEAP_HEAD "heap/1048576\n")), "header: %.80s", buf);
	check_golden("heap-legacy.txt", buf, len);
	free(buf);
	/* rate 1: nothing was scaled, nothing to unscale */
	MUST(heap_text_render(exact, &buf, &len));
	CHECK(!strncmp(buf, HEAP_HEAD "heap/2\n", strlen(HEAP_HEAD "heap/2\n")),
	      "header: %.80s", buf);
	free(buf);
	/* Counted at rate 1 (a rate=1 session), the profile's period the
	 * default since: 1000 blocks of 64 bytes unscale to 0.12 of one,
	 * and pprof refuses bytes without objects; one is kept. */
	profile_header(exact)->period = 524288;
	MUST(heap_text_render(exact, &buf, &len));
	CHECK(strstr(buf, "\n1: 5 [1: 8] @ ") != NULL,
	      "a finer rate's blocks: %s", buf);
	free(buf);
	buf = (char *)"untouched";
	CHECK(heap_text_render(two, &buf, &len) == -EINVAL, "2 types");
	CHECK(!strcmp(buf, "untouched"), "buf untouched on failure");
	profile_free(p);
	profile_free(exact);
	profile_free(two);
}

/* MemStats: Go's block after the memory map ("# Name = value" in the
 * order added, then the notes), and alone; a profile without figures
 * has no block, and nothing to print alone. */
static void test_memstats_text(void)
{
	struct profile *p = heap4_profile(524288), *bare = heap4_profile(1);
	char *buf = NULL, *block;
	size_t len = 0;

	MUST(profile_add_stat(p, "Alloc", "2135552"));
	MUST(profile_add_stat(p, "a note on the figures", NULL));
	MUST(profile_add_stat(p, "Mallocs", "1002"));
	MUST(profile_add_stat(p, "Stack", "8192 / 139264"));
	CHECK(profile_add_stat(p, "", "1") == -EINVAL, "empty name");
	CHECK(profile_add_stat(p, "Frees", "") == -EINVAL, "empty value");
	CHECK(profile_nstats(p) == 4, "%zu figures", profile_nstats(p));
	MUST(heap_text_render(p, &buf, &len));
	check_golden("heap-legacy-memstats.txt", buf, len);
	block = strstr(buf, "\n\n# runtime.MemStats\n");
	CHECK(block && strstr(buf, "MAPPED_LIBRARIES:\n") < block &&
	      !strcmp(block, "\n\n# runtime.MemStats\n# Alloc = 2135552\n"
		      "# Mallocs = 1002\n# Stack = 8192 / 139264\n"
		      "# proffs: a note on the figures\n"),
	      "the block does not end the text: %s", block ? block : buf);
	free(buf);
	MUST(heap_text_memstats(p, &buf, &len));
	CHECK(strlen(buf) == len &&
	      !strcmp(buf, "# runtime.MemStats\n# Alloc = 2135552\n"
		      "# Mallocs = 1002\n# Stack = 8192 / 139264\n"
		      "# proffs: a note on the figures\n"), "alone: %s", buf);
	free(buf);
	MUST(heap_text_render(bare, &buf, &len));
	CHECK(!strstr(buf, "MemStats"), "a block without figures");
	free(buf);
	buf = (char *)"untouched";
	CHECK(heap_text_memstats(bare, &buf, &len) == -EINVAL &&
	      !strcmp(buf, "untouched"), "alone without figures");
	profile_free(p);
	profile_free(bare);
}

static void test_units(void)
{
	static const struct {
		int64_t v;
		const char *unit, *want;
	} c[] = {
		{ 1230000000, "nanoseconds", "1.23s" },
		{ 250000000, "nanoseconds", "250ms" },
		{ 1500, "nanoseconds", "1.50us" },
		{ 0, "nanoseconds", "0" },
		{ 7200000000000ll, "nanoseconds", "2hrs" },
		{ 512, "bytes", "512B" },
		{ 1536, "bytes", "1.50kB" },
		{ 3 << 20, "bytes", "3MB" },
		{ 42, "count", "42" },
		{ 7, "widgets", "7" },
	};
	char buf[64];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		text_format_value(c[i].v, c[i].unit, buf, sizeof(buf));
		CHECK(!strcmp(buf, c[i].want), "%" PRId64 " %s: %s != %s",
		      c[i].v, c[i].unit, buf, c[i].want);
	}
}

/* memmem with a shrinking length, not strstr: sanitizers' strstr takes
 * strlen of the whole haystack per call, quadratic over a big SVG. */
static size_t count(const char *hay, const char *needle)
{
	size_t left = strlen(hay), nl = strlen(needle), n = 0;
	const char *p;

	while ((p = memmem(hay, left, needle, nl))) {
		n++;
		left -= p + 1 - hay;
		hay = p + 1;
	}
	return n;
}

static bool have_xmllint(void)
{
	return system("command -v xmllint >/dev/null 2>&1") == 0;
}

static void save_svg(const char *name, const char *buf, size_t len)
{
	const char *dir = getenv("TEST_BUILD_DIR");
	char path[4096], cmd[4200];
	bool xmllint;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".", name);
	write_file(path, buf, len);
	/* Well-formedness is a requirement: no xmllint, no pass. */
	xmllint = have_xmllint();
	CHECK(xmllint, "xmllint is not installed (libxml2-utils)");
	if (!xmllint)
		return;
	snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", path);
	CHECK(system(cmd) == 0, "%s is not well-formed XML", path);
}

static void check_svg_common(const char *svg)
{
	const char *ns = "http://www.w3.org/2000/svg";

	CHECK(!strncmp(svg, "<?xml", 5), "XML declaration first");
	CHECK(count(svg, "http") == count(svg, ns) && count(svg, ns) == 1,
	      "a URI other than the SVG namespace");
	CHECK(strstr(svg, "<script") && strstr(svg, "<style>"),
	      "inline script and style");
	CHECK(!strstr(svg, " src=") && !strstr(svg, "href"),
	      "nothing fetched");
	CHECK(strstr(svg, "id=\"reset\"") && strstr(svg, "id=\"search\"") &&
	      strstr(svg, "id=\"matched\"") && strstr(svg, "function search("),
	      "controls");
	CHECK(strstr(svg, "</svg>\n"), "complete");
}

static void test_flame_small(void)
{
	static const char *const names[] = { "all", "main", "run", "work",
					     "compute", "hash", "[app]",
					     UGLY_ESC };
	struct profile *p = cpu_profile();
	struct flame_opts o = { .sample_index = -1 };
	char *svg = NULL, *again = NULL, *mem = NULL, want[256];
	size_t len = 0, alen = 0, mlen = 0;

	MUST(flame_render(p, &o, &svg, &len));
	CHECK(strlen(svg) == len, "NUL-terminated at len");
	check_svg_common(svg);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(want, sizeof(want), "<title>%s (", names[i]);
		CHECK(strstr(svg, want), "no frame %s", names[i]);
	}
	CHECK(!strstr(svg, UGLY), "unescaped name");
	/* work: 60 + 30 + 1 samples at 10ms in two frames (run, run;run). */
	CHECK(strstr(svg, "<title>work (900ms, 69.23%)"), "work's tooltip");
	CHECK(strstr(svg, "<title>all (1.30s, 100.00%)"), "all's tooltip");
	CHECK(strstr(svg, ">cpu profile: pid 77 (/usr/bin/app --fast)<"),
	      "default title");
	CHECK(strstr(svg, ">cpu (nanoseconds), window 2s, total 1.30s<"),
	      "default subtitle");
	CHECK(count(svg, "class=\"frame\"") == 11, "frames: %zu",
	      count(svg, "class=\"frame\""));
	MUST(flame_render(p, NULL, &again, &alen));
	CHECK(alen == len && !memcmp(svg, again, len), "deterministic");
	o.palette = FLAME_MEMORY;
	o.title = "T<1>";
	o.subtitle = "S&2";
	MUST(flame_render(p, &o, &mem, &mlen));
	CHECK(strstr(mem, ">T&lt;1&gt;<") && strstr(mem, ">S&amp;2<"),
	      "given titles");
	CHECK(strcmp(svg, mem), "memory palette differs");
	save_svg("small.svg", svg, len);
	o.sample_index = 5;
	CHECK(flame_render(p, &o, &again, &alen) == -EINVAL, "index 5");
	free(svg);
	free(again);
	free(mem);
	profile_free(p);
}

/* The fill of the frame named name in svg into out ("#rrggbb"). */
static bool frame_fill(const char *svg, const char *name, char out[8])
{
	char want[128];
	const char *at, *fill;

	snprintf(want, sizeof(want), "<title>%s (", name);
	at = strstr(svg, want);
	fill = at ? strstr(at, "fill=\"") : NULL;
	if (!fill)
		return false;
	snprintf(out, 8, "%.7s", fill + 6);
	return true;
}

/* A runtime's frames (pf_function.runtime) in purples, in every palette;
 * a name that only looks like one's is a native frame's. */
static void test_flame_runtime(void)
{
	static const char *const names[] = {
		"clone3", "Known.main", "long Known.heavy()",
		"fake (not.py:3)", "heavy (a.py:9)",
	};
	static const bool runtime[] = { false, true, true, false, true };
	enum { N = sizeof(names) / sizeof(names[0]) };
	static const enum flame_palette pals[] = {
		FLAME_WARM, FLAME_MEMORY, FLAME_OFFCPU,
	};
	struct profile *p;
	uint64_t locs[N], f;
	int64_t v = 5;
	char *svg, fill[8];
	size_t len;

	MUST(profile_new(&p));
	MUST(profile_add_sample_type(p, "samples", "count"));
	for (size_t i = 0; i < N; i++) {
		struct pf_line l = { 0, 1 };

		MUST(profile_add_function(p, names[i], NULL, NULL, 0, &f));
		if (runtime[i])
			MUST(profile_mark_runtime(p, f));
		l.function_id = f;
		MUST(profile_add_location(p, 0, 0, &l, 1, &locs[N - 1 - i]));
	}
	MUST(profile_add_sample(p, locs, N, NULL, 0, &v));
	for (size_t k = 0; k < sizeof(pals) / sizeof(pals[0]); k++) {
		struct flame_opts o = { .sample_index = -1,
					.palette = pals[k] };

		MUST(flame_render(p, &o, &svg, &len));
		for (size_t i = 0; i < N; i++) {
			unsigned r, g, b;
			bool purple;

			CHECK(frame_fill(svg, names[i], fill), "%s", names[i]);
			sscanf(fill, "#%2x%2x%2x", &r, &g, &b);
			/* PALETTE_RUNTIME: red 140..200, green 70..120,
			 * blue 200..255 */
			purple = r >= 140 && g <= 120 && b >= 200;
			CHECK(purple == runtime[i], "palette %zu: %s is %s",
			      k, names[i], fill);
		}
		free(svg);
	}
	profile_free(p);
}

/* 50,000 distinct stacks over 3,000 functions, depth 6..29. */
static struct profile *big_profile(void)
{
	enum { NFN = 3000, NSTACK = 50000 };
	struct profile *p;
	uint64_t *locs = malloc(NFN * sizeof(*locs)), id, f, stack[32];
	char name[96];

	MUST(profile_new(&p));
	MUST(profile_add_sample_type(p, "cpu", "nanoseconds"));
	for (int i = 0; i < NFN; i++) {
		struct pf_line l = { 0, 1 };

		snprintf(name, sizeof(name),
			 "ns%d::Class%d<std::string>::method_%d", i % 17,
			 i % 101, i);
		MUST(profile_add_function(p, name, NULL, "big.cc", i, &f));
		l.function_id = f;
		MUST(profile_add_location(p, 0, 0x1000 + i, &l, 1, &id));
		locs[i] = id;
	}
	while (profile_nsamples(p) < NSTACK) {
		uint32_t depth = 6 + rnd() % 24, k;
		uint64_t node = 0;
		int64_t v = (int64_t)(1 + rnd() % 100) * PERIOD;

		/* A skewed tree: low branching near the root. */
		for (k = 0; k < depth; k++) {
			node = node * 7 + rnd() % (k < 3 ? 3 : 12);
			stack[depth - 1 - k] = locs[node % NFN];
		}
		MUST(profile_add_sample(p, stack, depth, NULL, 0, &v));
	}
	free(locs);
	return p;
}

static void test_flame_big(void)
{
	struct profile *p = big_profile();
	char *svg = NULL, *folded = NULL;
	size_t len = 0, flen = 0;
	struct timespec a, b;
	double ms;

	clock_gettime(CLOCK_MONOTONIC, &a);
	MUST(flame_render(p, NULL, &svg, &len));
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
	CHECK(len < 5u << 20, "big.svg is %zu bytes", len);
	CHECK(count(svg, "class=\"frame\"") <= FLAME_MAX_FRAMES + 1,
	      "%zu frames", count(svg, "class=\"frame\""));
	check_svg_common(svg);
	printf("big: %zu stacks, svg %zu bytes, %zu frames, %.0f ms\n",
	       profile_nsamples(p), len, count(svg, "class=\"frame\""), ms);
	save_svg("big.svg", svg, len);
	MUST(folded_render(p, -1, &folded, &flen));
	CHECK(count(folded, "\n") == 50000, "%zu lines", count(folded, "\n"));
	CHECK(folded_sum(folded) == profile_total(p, 0), "big folded sum");
	free(folded);
	free(svg);
	profile_free(p);
}

/*
 * A Go program's thread dump (gothreads.c's labels): goroutines as Go
 * prints them, "goroutine 7 [chan receive, 3 minutes]:", by id before
 * the threads; the runtime's unexported frames left out of a goroutine's
 * stack in debug=2 (as Go's dump leaves them) but kept in debug=1 and a
 * thread's; debug=1's header is Go's; the goroutines comment shown.
 */
static struct profile *go_dump_profile(void)
{
	static const struct {
		const char *goroutine, *state, *wait, *thread;
	} g[] = {
		{ "7", "chan receive", "3", "created" },
		{ "5", "chan receive", NULL, NULL },
		{ "1", "running", NULL, "42" },
		{ NULL, "sleeping", NULL, "43" },
	};
	struct profile *p;
	int64_t one = 1;
	uint64_t stack[2];

	MUST(profile_new(&p));
	MUST(profile_add_sample_type(p, "goroutine", "count"));
	stack[0] = loc(p, 0, fn(p, "runtime.gopark"), 0);
	stack[1] = loc(p, 0, fn(p, "main.waitHere"), 0);
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
		struct pf_label l[5];
		int n = 0;

		l[n++] = (struct pf_label){ profile_intern(p, "state"),
					    profile_intern(p, g[i].state) };
		if (g[i].goroutine)
			l[n++] = (struct pf_label){
				profile_intern(p, "goroutine"),
				profile_intern(p, g[i].goroutine) };
		if (g[i].wait)
			l[n++] = (struct pf_label){
				profile_intern(p, "wait_minutes"),
				profile_intern(p, g[i].wait) };
		if (g[i].thread && !strcmp(g[i].thread, "created")) {
			l[n++] = (struct pf_label){
				profile_intern(p, "created_by"),
				profile_intern(p, "main.main") };
			l[n++] = (struct pf_label){
				profile_intern(p, "created_at"),
				profile_intern(p, "/src/m.go:9") };
		} else if (g[i].thread) {
			l[n++] = (struct pf_label){
				profile_intern(p, "thread"),
				profile_intern(p, g[i].thread) };
		}
		MUST(profile_add_sample(p, stack, 2, l, n, &one));
	}
	MUST(profile_add_comment(p, "proffs: 2 threads stopped"));
	MUST(profile_add_comment(p, "goroutines: 3 of go1.19.8 read"));
	return p;
}

static void test_goroutines_text(void)
{
	struct profile *p = go_dump_profile();
	char *buf = NULL, *at;
	size_t len;

	MUST(threads_text_render(p, 2, &buf, &len));
	at = strstr(buf, "goroutine 1 [running]:\nmain.waitHere(...)\n");
	CHECK(at == buf, "debug=2: goroutine 1 first, gopark hidden: %s",
	      buf);
	at = strstr(buf, "goroutine 5 [chan receive]:\n");
	CHECK(at && at < strstr(buf, "goroutine 7 [chan receive, "
				"3 minutes]:\nmain.waitHere(...)\n\tapp.c:10\n"
				"created by main.main\n\t/src/m.go:9\n\n"),
	      "by id, minutes, created by: %s", buf);
	at = strstr(buf, "thread 43 [sleeping]: \nruntime.gopark(...)");
	CHECK(at && at > strstr(buf, "goroutine 7"),
	      "threads after, with every frame: %s", buf);
	CHECK(strstr(buf, "\n# goroutines: 3 of go1.19.8 read\n") &&
	      !strstr(buf, "stopped"), "the goroutines comment: %s", buf);
	free(buf);
	MUST(threads_text_render(p, 1, &buf, &len));
	CHECK(!strncmp(buf, "goroutine profile: total 4\n"
		       "# goroutines: 3 of go1.19.8 read\n3 @ ", 60),
	      "debug=1 header: %s", buf);
	CHECK(strstr(buf, "\"chan receive\"} (2 goroutines)\n") &&
	      strstr(buf, "\truntime.gopark\t"), "debug=1 groups: %s", buf);
	free(buf);
	profile_free(p);
}

/*
 * A goroutine's pprof labels (gothreads.c puts them under their own
 * keys) in debug=1's "# labels:" line as Go prints a label set
 * (runtime/pprof's labelMap.String()): each pair "%q:%q" as Go quotes
 * (\n, \u00a0, \xff for a byte that is not UTF-8, é as it is), the
 * pairs sorted as strings, joined by ", ", with proffs' state among
 * them; goroutines that differ only in labels are apart.
 */
static void test_goroutine_labels_text(void)
{
	static const char *const kv[][2] = {
		{ "worker", "a" }, { "a b", "x\ny" }, { "\xc3\xa9", "\xff" },
		{ "nb", "1\xc2\xa0" "2\x7f" },
	};
	struct profile *p;
	struct pf_label l[8];
	uint64_t stack[1];
	int64_t one = 1;
	char *buf = NULL;
	size_t len;

	MUST(profile_new(&p));
	MUST(profile_add_sample_type(p, "goroutine", "count"));
	stack[0] = loc(p, 0, fn(p, "main.waitHere"), 0);
	for (int g = 0; g < 2; g++) {
		int n = 0;

		l[n++] = (struct pf_label){ profile_intern(p, "state"),
					    profile_intern(p, "chan receive") };
		l[n++] = (struct pf_label){ profile_intern(p, "goroutine"),
					    profile_intern(p, g ? "8" : "9") };
		for (size_t i = 0; g && i < sizeof(kv) / sizeof(kv[0]); i++)
			l[n++] = (struct pf_label){ profile_intern(p, kv[i][0]),
						    profile_intern(p, kv[i][1]) };
		MUST(profile_add_sample(p, stack, 1, l, n, &one));
	}
	MUST(threads_text_render(p, 1, &buf, &len));
	CHECK(strstr(buf, "\n# labels: {\"a b\":\"x\\ny\", \"nb\":\"1\\u00a02"
		      "\\x7f\", \"state\":\"chan receive\", \"worker\":\"a\", "
		      "\"\xc3\xa9\":\"\\xff\"} (1 goroutines)\n") &&
	      strstr(buf, "\n# labels: {\"state\":\"chan receive\"} "
		      "(1 goroutines)\n"), "Go's label sets: %s", buf);
	free(buf);
	profile_free(p);
}

int main(void)
{
	test_units();
	test_goroutines_text();
	test_goroutine_labels_text();
	test_folded_text();
	test_heap_text();
	test_memstats_text();
	test_flame_small();
	test_flame_runtime();
	test_flame_big();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-render: all checks passed\n");
	return 0;
}
