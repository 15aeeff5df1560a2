// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-dso.c - dso against fixtures compiled at test time: a PIE with an
 * inlined function (symbolized from its own DWARF, from a debug file
 * found by build-id and by each .gnu_debuglink location, built by clang,
 * which writes no .debug_aranges, with compressed DWARF), a stripped
 * shared library (.dynsym only), the cache, raw reads against readelf,
 * .debug_frame (own, compressed, in a debug file) against objcopy's dump
 * of it, corrupt files, and the members of a structure type from the
 * DWARF (dso_struct_offsets()). Also prints the cost of dso_symbolize().
 */
#include <dirent.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sampler/unwind/dso.h"
#include "check.h"

#define STREQ(a, b) ((a) && (b) && !strcmp((a), (b)))

static char dir[1024];

/* The fixture program; line numbers below are 1-based indices here. */
static const char *const fx_src[] = {
	"static inline __attribute__((always_inline)) int inl_fn(int x)",
	"{",
	"\tint y = x * 3;",
	"\t__asm__ volatile(\".globl inl_mark\\ninl_mark: nop\"",
	"\t\t\t ::: \"memory\");",
	"\treturn y + x / 7;",
	"}",
	"",
	"__attribute__((noipa)) int caller_fn(int x)",
	"{",
	"\tint r = inl_fn(x);",
	"\treturn r * 2;",
	"}",
	"",
	"int main(int argc, char **argv)",
	"{",
	"\t(void)argv;",
	"\treturn caller_fn(argc);",
	"}",
	"",
	"struct fx_in { char c; long lo, hi; };",
	"struct fx_g { int pad; struct fx_in stack; void *m; };",
	"typedef struct fx_in fx_in_t;",
	"struct fx_t { char c; fx_in_t in; };",
	"struct fx_g fx_g_var;",
	"struct fx_t fx_t_var;",
};
enum { L_INL_DECL = 1, L_ASM = 4, L_CALLER_DECL = 9, L_CALL = 11,
       L_MAIN_DECL = 15 };

static const char *const lib_src[] = {
	"int fx_exported(int x) { return x * 5 + 1; }",
	"int fx_cxx(int x) __asm__(\"_ZN2ns6fx_cxxEi\");",
	"int fx_cxx(int x) { return x * 7 + 3; }",
};

static char *path(const char *fmt, ...)
{
	static char buf[8][1200];
	static int next;
	char *p = buf[next++ % 8];
	int n;
	va_list ap;

	n = snprintf(p, sizeof(buf[0]), "%s/", dir);
	va_start(ap, fmt);
	vsnprintf(p + n, sizeof(buf[0]) - n, fmt, ap);
	va_end(ap);
	return p;
}

static void write_lines(const char *file, const char *const *lines, int n)
{
	FILE *f = fopen(file, "w");
	int i;

	if (!f) {
		perror(file);
		exit(1);
	}
	for (i = 0; i < n; i++)
		fprintf(f, "%s\n", lines[i]);
	fclose(f);
}

static void write_bytes(const char *file, const void *buf, size_t len)
{
	FILE *f = fopen(file, "w");

	if (!f || fwrite(buf, 1, len, f) != len) {
		perror(file);
		exit(1);
	}
	fclose(f);
}

static void build_fixtures(void)
{
	const char *bd = getenv("TEST_BUILD_DIR");
	const char *cflags = "-g -O2 -fPIE -pie -Wl,--build-id";

	snprintf(dir, sizeof(dir), "%s/dso-fixtures", bd ? bd : ".");
	run_sh("rm -rf '%s' && mkdir -p '%s/src'", dir, dir);
	write_lines(path("src/fx.c"), fx_src, sizeof(fx_src) / sizeof(*fx_src));
	write_lines(path("src/lib.c"), lib_src,
		    sizeof(lib_src) / sizeof(*lib_src));
	run_sh("cd %s && cc %s -o fx src/fx.c", dir, cflags);
	run_sh("cd %s && objcopy --only-keep-debug fx fx.debug && "
	    "strip --strip-all -o fx.stripped fx && "
	    "objcopy --add-gnu-debuglink=fx.debug fx.stripped", dir);
	/* build-id root only: the debuglink names a file nobody has */
	run_sh("cd %s && mkdir -p bid root1 empty-root && cp fx.stripped bid/fx",
	    dir);
	run_sh("cd %s && id=$(readelf -n fx | sed -n 's/.*Build ID: //p') && "
	    "mkdir -p root1/.build-id/${id%%${id#??}} && "
	    "cp fx.debug root1/.build-id/${id%%${id#??}}/${id#??}.debug",
	    dir);
	run_sh("cd %s && mkdir -p next dot/.debug rootdir && "
	    "cp fx.stripped next/fx && cp fx.debug next/ && "
	    "cp fx.stripped dot/fx && cp fx.debug dot/.debug/ && "
	    "cp fx.stripped rootdir/fx && mkdir -p root2/%s/rootdir && "
	    "cp fx.debug root2/%s/rootdir/", dir, dir, dir);
	/* no build-id: the debug file is matched by its CRC */
	run_sh("cd %s && mkdir -p crc badcrc && "
	    "cc %s -Wl,--build-id=none -o crc/full src/fx.c && "
	    "objcopy --only-keep-debug crc/full crc/fx.debug && "
	    "strip --strip-all -o crc/fx crc/full && "
	    "cd crc && objcopy --add-gnu-debuglink=fx.debug fx && cd .. && "
	    "cp crc/fx badcrc/fx && "
	    "cc %s -O1 -Wl,--build-id=none -o badcrc/other src/fx.c && "
	    "objcopy --only-keep-debug badcrc/other badcrc/fx.debug",
	    dir, cflags, cflags);
	/* CFI in .debug_frame only; compressed; in a debug file only */
	run_sh("cd %s && mkdir -p df && cd df && cc %s -fno-asynchronous-unwind-"
	    "tables -fno-unwind-tables -o full ../src/fx.c && "
	    "objcopy --dump-section .debug_frame=section full && "
	    "objcopy --compress-debug-sections=zlib full zlib && "
	    "readelf -SW zlib | grep -q ' .debug_frame .* [A-Z]*C' && "
	    "objcopy --only-keep-debug full fx.debug && "
	    "strip --strip-all -o fx full && "
	    "objcopy --add-gnu-debuglink=fx.debug fx", dir, cflags);
	/* DWARF as other toolchains write it: clang writes no
	 * .debug_aranges; compressed sections, zlib and GNU's legacy
	 * .zdebug_*; DWARF 4 */
	run_sh("cd %s && mkdir -p forms && "
	    "clang %s -Dnoipa=noinline -o forms/clang src/fx.c && "
	    "! readelf -SW forms/clang | grep -q debug_aranges && "
	    "cc %s -gz=zlib -o forms/zlib src/fx.c && "
	    "readelf -SW forms/zlib | grep -q ' .debug_info .* [A-Z]*C' && "
	    "cc %s -gz=zlib-gnu -o forms/zlib-gnu src/fx.c && "
	    "readelf -SW forms/zlib-gnu | grep -q ' .zdebug_info ' && "
	    "cc %s -gdwarf-4 -o forms/dwarf4 src/fx.c", dir, cflags, cflags,
	    cflags, cflags);
	run_sh("cd %s && cc -O2 -fPIC -shared -o lib.so src/lib.c && "
	    "strip --strip-all -o lib.stripped.so lib.so && "
	    "cc -O2 -fPIC -shared -Wl,--no-eh-frame-hdr -o lib-noeh.so "
	    "src/lib.c && cc -c -o lib.o src/lib.c", dir);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

static struct dso *get(struct dso_cache *c, const char *file)
{
	struct dso *d = NULL;
	int ret = dso_cache_get(c, file, file, &d);

	CHECK(!ret && d, "dso_cache_get(%s) = %d", file, ret);
	if (!d) {
		fprintf(stderr, "FATAL: cannot go on\n");
		exit(1);
	}
	return d;
}

/* The inlined asm label: inl_fn inside caller_fn, both in fx.c. */
static void check_inline(struct dso *d, uint64_t mark, const char *what)
{
	struct dso_frame f[8];
	const char *src = path("src/fx.c");
	int n = 0, ret;

	ret = dso_symbolize(d, mark, f, 8, &n);
	CHECK(ret == 0 && n == 2, "%s: ret %d n %d", what, ret, n);
	if (n != 2)
		return;
	CHECK(STREQ(f[0].function, "inl_fn"), "%s: %s", what, f[0].function);
	CHECK(STREQ(f[0].system_name, "inl_fn"), "%s: %s", what,
	      f[0].system_name);
	CHECK(STREQ(f[0].file, src), "%s: %s", what, f[0].file);
	CHECK(f[0].line == L_ASM, "%s: %d", what, f[0].line);
	CHECK(f[0].start_line == L_INL_DECL, "%s: %d", what, f[0].start_line);
	CHECK(STREQ(f[1].function, "caller_fn"), "%s: %s", what,
	      f[1].function);
	CHECK(STREQ(f[1].file, src), "%s: %s", what, f[1].file);
	CHECK(f[1].line == L_CALL, "%s: %d", what, f[1].line);
	CHECK(f[1].start_line == L_CALLER_DECL, "%s: %d", what,
	      f[1].start_line);

	/* short buffer: the function holding the code is kept */
	ret = dso_symbolize(d, mark, f, 1, &n);
	CHECK(ret == 0 && n == 1 && STREQ(f[0].function, "caller_fn"),
	      "%s: max 1: ret %d n %d", what, ret, n);
}

static void check_caps(struct dso *d, bool fn, bool lines, bool inl,
		       const char *what)
{
	struct dso_caps caps;

	dso_caps(d, &caps);
	CHECK(caps.functions == fn && caps.filenames == lines &&
	      caps.line_numbers == lines && caps.inline_frames == inl,
	      "%s: caps %d %d %d %d", what, caps.functions, caps.filenames,
	      caps.line_numbers, caps.inline_frames);
}

static void test_full(uint64_t mark, uint64_t caller, uint64_t main_addr)
{
	struct dso_cache *c;
	struct dso_frame f[8];
	struct dso *d;
	int n, ret;

	CHECK(!dso_cache_new(path("empty-root"), &c), "cache");
	d = get(c, path("fx"));
	CHECK(strlen(dso_build_id(d)) == 40, "build-id '%s'",
	      dso_build_id(d));
	check_inline(d, mark, "full");
	check_caps(d, true, true, true, "full");
	ret = dso_symbolize(d, caller + 1, f, 8, &n);
	CHECK(!ret && n >= 1 && STREQ(f[n - 1].function, "caller_fn"),
	      "caller+1: ret %d n %d", ret, n);
	ret = dso_symbolize(d, main_addr, f, 8, &n);
	CHECK(!ret && n == 1 && STREQ(f[0].function, "main") &&
	      f[0].start_line == L_MAIN_DECL, "main: ret %d n %d", ret, n);
	ret = dso_symbolize(d, 0x10000000, f, 8, &n);
	CHECK(ret == -ENOENT && n == 0, "far away: ret %d n %d", ret, n);
	dso_put(d);
	dso_cache_free(c);
}

/* Lines and inlined frames from DWARF found without .debug_aranges, and
 * from compressed sections. */
static void test_dwarf_forms(void)
{
	static const char *const forms[] = {
		"clang", "zlib", "zlib-gnu", "dwarf4",
	};
	struct dso_cache *c;
	struct dso *d;

	CHECK(!dso_cache_new(path("empty-root"), &c), "cache");
	for (size_t i = 0; i < sizeof(forms) / sizeof(*forms); i++) {
		const char *file = path("forms/%s", forms[i]);

		d = get(c, file);
		check_inline(d, nm_addr(file, "inl_mark", false), file);
		check_caps(d, true, true, true, file);
		dso_put(d);
	}
	dso_cache_free(c);
}

/* Members of a structure type, as a Go runtime's g is read: nested
 * ("stack.hi"), through a typedef, absent (-1); no such type. */
static void test_struct_offsets(void)
{
	static const char *const g[] = { "pad", "stack.hi", "m", "nope",
					 "stack.nope", "pad.x" };
	static const char *const t[] = { "in.hi" };
	long off[6];
	struct dso_cache *c;
	struct dso *d;

	CHECK(!dso_cache_new(path("empty-root"), &c), "cache");
	d = get(c, path("fx"));
	CHECK(!dso_struct_offsets(d, "runtime", "fx_g", g, off, 6),
	      "fx_g found in some unit");
	CHECK(off[0] == 0 && off[1] == 24 && off[2] == 32 && off[3] == -1 &&
	      off[4] == -1 && off[5] == -1, "fx_g: %ld %ld %ld %ld %ld %ld",
	      off[0], off[1], off[2], off[3], off[4], off[5]);
	CHECK(!dso_struct_offsets(d, NULL, "fx_t", t, off, 1) && off[0] == 24,
	      "through a typedef: %ld", off[0]);
	CHECK(dso_struct_offsets(d, NULL, "fx_none", t, off, 1) == -ENOENT,
	      "no such type");
	dso_put(d);
	d = get(c, path("lib.stripped.so"));	/* .dynsym only */
	CHECK(dso_struct_offsets(d, NULL, "fx_g", g, off, 1) == -ENOENT,
	      "no DWARF");
	dso_put(d);
	dso_cache_free(c);
}

static void test_debug_file(const char *roots, const char *file,
			    uint64_t mark)
{
	struct dso_cache *c;
	struct dso *d;

	CHECK(!dso_cache_new(roots, &c), "cache");
	d = get(c, file);
	check_inline(d, mark, file);
	check_caps(d, true, true, true, file);
	dso_put(d);
	dso_cache_free(c);
}

static void test_debug_files(uint64_t mark, uint64_t crc_mark)
{
	struct dso_frame f[8];
	struct dso_cache *c;
	struct dso *d;
	char roots[3000];
	int n, ret;

	snprintf(roots, sizeof(roots), "%s:%s", path("empty-root"),
		 path("root1"));
	test_debug_file(roots, path("bid/fx"), mark);
	test_debug_file(path("empty-root"), path("next/fx"), mark);
	test_debug_file(path("empty-root"), path("dot/fx"), mark);
	test_debug_file(path("root2"), path("rootdir/fx"), mark);
	test_debug_file(path("empty-root"), path("crc/fx"), crc_mark);

	/* a debug file of another build is not used */
	CHECK(!dso_cache_new(path("empty-root"), &c), "cache");
	d = get(c, path("badcrc/fx"));
	CHECK(!strcmp(dso_build_id(d), ""), "%s", dso_build_id(d));
	ret = dso_symbolize(d, crc_mark, f, 8, &n);
	CHECK(ret == -ENOENT && n == 0, "badcrc: ret %d n %d", ret, n);
	check_caps(d, false, false, false, "badcrc");
	dso_put(d);
	dso_cache_free(c);
}

static int made, dropped;

static void *make_index(const uint8_t *data, size_t size)
{
	(void)data;
	made++;
	return malloc(size);
}

static void *make_none(const uint8_t *data, size_t size)
{
	(void)data, (void)size;
	made++;
	return NULL;
}

static void drop_index(void *index)
{
	dropped++;
	free(index);
}

/* file's .debug_frame is the bytes objcopy dumped, zero-padded, indexed
 * once; want false: there is none. */
static void check_debug_frame(const char *file, bool want)
{
	struct dso_debug_frame df, again;
	FILE *f = fopen(path("df/section"), "rb");
	static uint8_t ref[1 << 16];
	size_t n = f ? fread(ref, 1, sizeof(ref), f) : 0;
	struct dso_cache *c;
	struct dso *d;
	int ret;

	if (f)
		fclose(f);
	made = dropped = 0;
	CHECK(!dso_cache_new(path("empty-root"), &c), "cache");
	d = get(c, file);
	ret = dso_debug_frame(d, make_index, drop_index, &df);
	if (!want) {
		CHECK(ret == -ENOENT && !made, "%s: ret %d", file, ret);
	} else {
		CHECK(!ret && n && df.size == n && !memcmp(df.data, ref, n),
		      "%s: ret %d, %zu bytes, objcopy %zu", file, ret,
		      ret ? 0 : df.size, n);
		for (int i = 0; !ret && i < DSO_DEBUG_FRAME_PAD; i++)
			CHECK(!df.data[df.size + i], "%s: pad %d", file, i);
		ret = dso_debug_frame(d, make_index, drop_index, &again);
		CHECK(!ret && made == 1 && again.index == df.index &&
		      again.data == df.data, "%s: made %d", file, made);
	}
	dso_put(d);
	dso_cache_free(c);
	CHECK(dropped == (want ? 1 : 0), "%s: dropped %d", file, dropped);
}

static void test_debug_frame(void)
{
	struct dso_debug_frame df;
	struct dso_cache *c;
	struct dso *d;

	check_debug_frame(path("df/full"), true);
	check_debug_frame(path("df/zlib"), true);
	check_debug_frame(path("df/fx"), true);
	check_debug_frame(path("fx"), false);
	/* an index that cannot be made: as if there were no section */
	CHECK(!dso_cache_new(path("empty-root"), &c), "cache");
	d = get(c, path("df/full"));
	made = 0;
	CHECK(dso_debug_frame(d, make_none, drop_index, &df) == -ENOENT &&
	      dso_debug_frame(d, make_none, drop_index, &df) == -ENOENT &&
	      made == 1, "no index: made %d", made);
	dso_put(d);
	dso_cache_free(c);
}

static void test_dynsym(void)
{
	uint64_t exp = nm_addr(path("lib.so"), "fx_exported", true);
	uint64_t cxx = nm_addr(path("lib.so"), "_ZN2ns6fx_cxxEi", true);
	struct dso_frame f[4];
	struct dso_cache *c;
	struct dso *d;
	int n, ret;

	CHECK(!dso_cache_new(path("empty-root"), &c), "cache");
	d = get(c, path("lib.stripped.so"));
	ret = dso_symbolize(d, exp + 2, f, 4, &n);
	CHECK(!ret && n == 1 && STREQ(f[0].function, "fx_exported") &&
	      !f[0].file && !f[0].line, "dynsym: ret %d n %d", ret, n);
	ret = dso_symbolize(d, cxx, f, 4, &n);
	CHECK(!ret && n == 1 && STREQ(f[0].function, "ns::fx_cxx") &&
	      STREQ(f[0].system_name, "_ZN2ns6fx_cxxEi"),
	      "demangle: ret %d n %d %s", ret, n, n ? f[0].function : "");
	check_caps(d, true, false, false, "dynsym");
	dso_put(d);
	dso_cache_free(c);
}

static void test_cache(void)
{
	struct dso *a, *b, *h, *cp;
	struct dso_cache *c;

	run_sh("cd %s && ln -f fx fx.hardlink && cp fx fx.copy", dir);
	CHECK(!dso_cache_new(NULL, &c), "cache");
	a = get(c, path("fx"));
	b = get(c, path("fx"));
	h = get(c, path("fx.hardlink"));
	cp = get(c, path("fx.copy"));
	CHECK(a == b && a == h && a == cp, "%p %p %p %p", (void *)a,
	      (void *)b, (void *)h, (void *)cp);
	CHECK(STREQ(dso_name(cp), path("fx")), "%s", dso_name(cp));
	CHECK(dso_get(a) == a, "dso_get");
	dso_put(a);
	{
		/* a memo put through one reference, read through another
		 * (the same object: a hard link, a copy); only its size */
		uint64_t v = 42, w = 0, big[2];

		CHECK(dso_memo_get(a, DSO_MEMO_GO_ALLGS, &w, sizeof(w)) ==
		      -ENOENT, "no memo yet");
		CHECK(!dso_memo_put(a, DSO_MEMO_GO_ALLGS, &v, sizeof(v)),
		      "memo put");
		CHECK(!dso_memo_get(h, DSO_MEMO_GO_ALLGS, &w, sizeof(w)) &&
		      w == 42, "memo through the hard link: %llu",
		      (unsigned long long)w);
		CHECK(dso_memo_get(cp, DSO_MEMO_GO_ALLGS, big, sizeof(big)) ==
		      -ENOENT, "another size");
		CHECK(dso_memo_get(cp, DSO_MEMO_JVM_LAYOUT, &w, sizeof(w)) ==
		      -ENOENT, "another kind");
		CHECK(dso_memo_put(a, DSO_MEMO_JVM_LAYOUT, big, 0) == -EINVAL &&
		      dso_memo_put(a, DSO_MEMO_JVM_LAYOUT, big,
				   DSO_MEMO_MAX + 1) == -EINVAL, "bounds");
	}
	dso_put(a);
	dso_put(b);
	dso_cache_free(c);
	/* the cache is gone; our references still work */
	CHECK(STREQ(dso_name(h), path("fx")), "after free");
	dso_put(h);
	dso_put(cp);
	dso_put(NULL);
}

struct seg {
	unsigned long long off, vaddr, filesz, memsz;
};

static int readelf_segs(const char *file, struct seg *load, int max,
			struct seg *eh)
{
	char cmd[2048], line[512], type[64];
	struct seg s;
	int n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -lW %s", file);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		if (sscanf(line, " %63s %llx %llx %*x %llx %llx", type, &s.off,
			   &s.vaddr, &s.filesz, &s.memsz) != 5)
			continue;
		if (!strcmp(type, "LOAD") && n < max)
			load[n++] = s;
		if (!strcmp(type, "GNU_EH_FRAME"))
			*eh = s;
	}
	if (p)
		pclose(p);
	return n;
}

/* The mapping at s's page: the segment starting exactly there if any
 * (rodata and data can share a page), else s. */
static uint64_t page_vaddr(const struct seg *load, int n, const struct seg *s)
{
	uint64_t page = s->off & ~0xfffULL;
	int i;

	for (i = 0; i < n; i++)
		if (load[i].off == page)
			return load[i].vaddr;
	return s->vaddr - (s->off - page);
}

static void test_raw(void)
{
	unsigned char want[16], got[16];
	struct seg load[8], eh = { 0 }, *s;
	uint64_t va, sz, last_end = 0;
	struct dso_cache *c;
	struct dso *d;
	FILE *f;
	int i, n;

	n = readelf_segs(path("fx"), load, 8, &eh);
	CHECK(n >= 2 && eh.filesz, "readelf: %d LOADs", n);
	CHECK(!dso_cache_new(NULL, &c), "cache");
	d = get(c, path("fx"));
	f = fopen(path("fx"), "r");
	for (i = 0; i < n; i++) {
		s = &load[i];
		CHECK(!dso_offset_to_vaddr(d, s->off & ~0xfffULL, false, &va) &&
		      va == page_vaddr(load, n, s), "seg %d: %#llx",
		      i, (unsigned long long)va);
		CHECK(!dso_offset_to_vaddr(d, s->off + s->filesz - 1, false,
					   &va) &&
		      va == s->vaddr + s->filesz - 1, "seg %d end", i);
		if (s->filesz < sizeof(want))
			continue;
		fseek(f, s->off, SEEK_SET);
		CHECK(fread(want, 1, sizeof(want), f) == sizeof(want), "fread");
		CHECK(!dso_read(d, s->vaddr, got, sizeof(got)) &&
		      !memcmp(got, want, sizeof(got)), "seg %d bytes", i);
		CHECK(dso_read(d, s->vaddr + s->filesz - 4, got, 8) == -EFAULT,
		      "seg %d: read across end", i);
		if (s->vaddr + s->memsz > last_end)
			last_end = s->vaddr + s->memsz;
	}
	fclose(f);
	CHECK(dso_read(d, last_end + 64, got, 1) == -EFAULT, "beyond");
	CHECK(dso_offset_to_vaddr(d, 1ULL << 40, false, &va) == -ENOENT,
	      "offset");
	CHECK(!dso_eh_frame_hdr(d, &va, &sz) && va == eh.vaddr &&
	      sz == eh.memsz, "eh_frame_hdr %#llx %#llx",
	      (unsigned long long)va, (unsigned long long)sz);
	CHECK(!dso_read(d, va, got, 1) && got[0] == 1, "eh version %d",
	      got[0]);
	dso_put(d);
	d = get(c, path("lib-noeh.so"));
	CHECK(dso_eh_frame_hdr(d, &va, &sz) == -ENOENT, "no eh_frame_hdr");
	dso_put(d);
	dso_cache_free(c);
}

static void truncate_copy(const char *from, const char *to, long len)
{
	run_sh("head -c %ld %s > %s", len, from, to);
}

static void test_bad(void)
{
	static const char *const bad[] = {
		"garbage", "empty", "ehdr-only", "half", "minus-one", "lib.o",
		"src",
	};
	unsigned char junk[4096];
	struct dso_cache *c;
	struct dso *d = NULL;
	long size;
	size_t i;
	FILE *f;
	int ret;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 2654435761u >> 13);
	junk[0] = 0x7f, junk[1] = 'E', junk[2] = 'L', junk[3] = 'F';
	write_bytes(path("garbage"), junk, sizeof(junk));
	write_bytes(path("empty"), junk, 0);
	f = fopen(path("fx"), "r");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	truncate_copy(path("fx"), path("ehdr-only"), 64);
	truncate_copy(path("fx"), path("half"), size / 2);
	truncate_copy(path("fx"), path("minus-one"), size - 1);
	CHECK(!dso_cache_new(NULL, &c), "cache");
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		ret = dso_cache_get(c, path("%s", bad[i]), "x", &d);
		CHECK(ret == -ENOEXEC, "%s: %d", bad[i], ret);
	}
	ret = dso_cache_get(c, path("no-such-file"), "x", &d);
	CHECK(ret == -ENOENT, "missing: %d", ret);
	dso_cache_free(c);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int self_bias_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uint64_t *)data = info->dlpi_addr;
	return 1;		/* the first entry is the program */
}

/* Ourselves, as the daemon would see a process: a real-size DWARF. */
static void test_self_and_timing(uint64_t mark)
{
	struct dso_frame f[8];
	struct dso_cache *c;
	double t0, t1, t2, t3;
	uint64_t bias = 0, pc;
	struct dso *d;
	int n, ret, i;

	dl_iterate_phdr(self_bias_cb, &bias);
	pc = (uint64_t)(uintptr_t)&test_raw - bias + 4;
	CHECK(!dso_cache_new(NULL, &c), "cache");
	d = get(c, "/proc/self/exe");
	t0 = now_us();
	ret = dso_symbolize(d, pc, f, 8, &n);
	t1 = now_us();
	CHECK(!ret && n >= 1 && STREQ(f[n - 1].function, "test_raw") &&
	      f[n - 1].file && strstr(f[n - 1].file, "test-dso.c"),
	      "self: ret %d n %d %s", ret, n, n ? f[n - 1].function : "");
	pc = (uint64_t)(uintptr_t)&test_bad - bias + 8;
	ret = dso_symbolize(d, pc, f, 8, &n);
	t2 = now_us();
	for (i = 0; i < 1000; i++)
		dso_symbolize(d, pc, f, 8, &n);
	t3 = now_us();
	printf("self: first call (dwfl setup) %.0f us, new pc %.1f us, "
	       "memoized %.3f us\n", t1 - t0, t2 - t1, (t3 - t2) / 1000);
	dso_put(d);
	dso_cache_free(c);

	CHECK(!dso_cache_new(path("empty-root"), &c), "cache");
	t0 = now_us();
	d = get(c, path("fx"));
	t1 = now_us();
	ret = dso_symbolize(d, mark, f, 8, &n);
	t2 = now_us();
	printf("fx: dso_cache_get %.0f us, first symbolize %.0f us\n",
	       t1 - t0, t2 - t1);
	dso_put(d);
	dso_cache_free(c);
}

static bool name_is(void *arg, const char *name)
{
	return !strcmp(name, (const char *)arg);
}

static bool no_name(void *arg, const char *name)
{
	(void)arg;
	(void)name;
	return false;
}

static bool covers(const struct dso_range *r, size_t n, uint64_t a)
{
	for (size_t i = 0; i < n; i++)
		if (a >= r[i].start && a < r[i].end)
			return true;
	return false;
}

/*
 * Ranges by name, aliases included (issue 16): the symbolizer names
 * calloc's address by one alias (glibc: __libc_calloc); asked for
 * "calloc" or for that alias, the ranges cover the address either way.
 */
static void test_ranges(void)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	struct dso_range *r = NULL, *r2 = NULL;
	struct dso_frame f[4];
	struct dso_cache *c;
	size_t n = 0, n2 = 0;
	uint64_t a = 0;
	struct dso *d;
	int nf = 0;

	if (access(libc, R_OK)) {
		printf("ranges: no %s, skipped\n", libc);
		return;
	}
	CHECK(!dso_cache_new(path("empty-root"), &c), "cache");
	d = get(c, libc);
	CHECK(!dso_symbol_vaddr(d, "calloc", &a) && a, "calloc's address");
	CHECK(!dso_symbolize(d, a, f, 4, &nf) && nf, "symbolize calloc");
	CHECK(!dso_symbol_ranges(d, name_is, (void *)"calloc", &r, &n) && n,
	      "ranges of calloc: %zu", n);
	CHECK(covers(r, n, a) && covers(r, n, a + 8), "calloc's range");
	CHECK(!dso_symbol_ranges(d, name_is, (void *)f[nf - 1].system_name,
				 &r2, &n2) && covers(r2, n2, a),
	      "the alias %s covers calloc too", f[nf - 1].system_name);
	printf("ranges: calloc at 0x%llx is named %s by the symbolizer\n",
	      (unsigned long long)a, f[nf - 1].system_name);
	for (size_t i = 0; i + 1 < n; i++)
		CHECK(r[i].start < r[i].end && r[i].end < r[i + 1].start,
		      "sorted, merged");
	free(r);
	free(r2);
	r = NULL;
	CHECK(!dso_symbol_ranges(d, no_name, NULL, &r, &n) && !n, "none");
	free(r);
	dso_put(d);
	dso_cache_free(c);
}

/* The cache's bound and expiry: what nobody holds goes, least recently
 * let go first, past the bound or after the idle time; what a holder
 * holds stays; a dso let go is loaded again when asked. */
static void test_expiry(void)
{
	const char *files[] = { path("fx"), path("forms/clang"),
				path("forms/zlib") };
	struct dso_cache_stats st;
	struct dso_cache *c;
	struct dso *d[3], *held;

	CHECK(!dso_cache_new(path("empty-root"), &c), "cache");
	for (int i = 0; i < 3; i++)
		d[i] = get(c, files[i]);
	dso_cache_set_limits(c, 3600 * 1000, 2);
	dso_cache_stats(c, &st);
	CHECK(st.objects == 3 && !st.expired, "all held: %zu %llu",
	      st.objects, (unsigned long long)st.expired);
	dso_put(d[0]);
	usleep(2000);
	dso_put(d[1]);
	dso_cache_stats(c, &st);
	CHECK(st.objects == 2 && st.expired == 1, "one past the bound: %zu",
	      st.objects);
	held = get(c, files[1]);	/* the newer one stayed */
	CHECK(held == d[1], "the least recently let go went first");
	dso_put(held);
	dso_cache_set_limits(c, 0, 256);
	dso_cache_stats(c, &st);
	CHECK(st.objects == 1 && st.expired == 2 && st.max == 256 &&
	      st.idle_ms == 0, "idle: %zu", st.objects);
	dso_put(d[2]);
	dso_cache_stats(c, &st);
	CHECK(st.objects == 0 && st.expired == 3, "all idle: %zu",
	      st.objects);
	d[0] = get(c, files[0]);
	check_caps(d[0], true, true, true, "again");
	/* mapped by a process that runs (this one): kept while idle */
	dso_note_user(d[0], getpid());
	dso_put(d[0]);
	dso_cache_stats(c, &st);
	CHECK(st.objects == 1, "a mapped one went: %zu", st.objects);
	dso_cache_set_limits(c, 0, 0);	/* the bound still applies */
	dso_cache_stats(c, &st);
	CHECK(st.objects == 0, "past the bound, mapped: %zu", st.objects);
	dso_cache_free(c);
}

int main(void)
{
	uint64_t mark, caller, main_addr, crc_mark;
	int fds;

	build_fixtures();
	mark = nm_addr(path("fx"), "inl_mark", false);
	caller = nm_addr(path("fx"), "caller_fn", false);
	main_addr = nm_addr(path("fx"), "main", false);
	crc_mark = nm_addr(path("crc/full"), "inl_mark", false);
	fds = count_fds();
	test_full(mark, caller, main_addr);
	test_dwarf_forms();
	test_struct_offsets();
	test_debug_files(mark, crc_mark);
	test_debug_frame();
	test_dynsym();
	test_ranges();
	test_cache();
	test_expiry();
	test_raw();
	test_bad();
	test_self_and_timing(mark);
	CHECK(count_fds() == fds, "fd leak: %d -> %d", fds, count_fds());
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all dso checks passed\n");
	return 0;
}
