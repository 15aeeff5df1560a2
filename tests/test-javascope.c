// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-javascope.c - the Java frames of a compiled method's pc
 * (javascope.h), from a fake nmethod built in this process's own memory
 * with a layout of our own: its header found before its code, a PcDesc
 * by the rule "first at or after the pc" (a return address less one
 * gets the call's scope), a scope chain decoded innermost first with a
 * bci of several UNSIGNED5 bytes, a pc with no scope (the method, no
 * bci); then everything a JVM's memory could get wrong (a header that
 * names other code, offsets out of order or past the blob, a metadata
 * index out of range, a chain that loops, scopes of another method, too
 * deep a chain, random scopes data), each an error and counted, never a
 * crash; a layout whose fields fall outside what is read, refused. Also the external names of methods (javamethod_external()).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sampler/log.h"
#include "sampler/runtime/javamethod.h"
#include "sampler/runtime/javascope.h"

/* the fake layout: header fields, then a PcDesc's */
static const struct javamethod_nm layout = {
	.size = 0, .header_size = 4, .code_begin = 8, .code_end = 16,
	.method = 24, .scopes_data_begin = 32, .metadata_offset = 40,
	.scopes_pcs_offset = 44, .dependencies_offset = 48,
	.pc_offset = 0, .scope_offset = 4,
	.nm_size = 128, .pc_size = 16,
};

enum { CONSTS = 32, CODE = 256, MD = 128 + CONSTS + CODE, NMD = 3 };
#define M_OUTER 0x10000ull
#define M_INNER 0x20000ull
#define M_OTHER 0x30000ull

struct fake {
	_Alignas(64) uint8_t mem[16384];
	uint8_t *h;		/* the header */
	uint64_t code;		/* its code's address */
	size_t sd, pcs, deps;	/* offsets from h */
	uint32_t scope_a, scope_b;	/* decode offsets */
};

static void put32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* HotSpot's CompressedWriteStream::write_int (UNSIGNED5). */
static size_t put_u5(uint8_t *p, uint32_t sum)
{
	size_t i = 0;

	for (int k = 0; k < 4 && sum >= 192; k++) {
		sum -= 192;
		p[i++] = (uint8_t)(192 + sum % 64);
		sum >>= 6;
	}
	p[i++] = (uint8_t)sum;
	return i;
}

static size_t put_scope(uint8_t *p, uint32_t sender, uint32_t midx, int bci)
{
	size_t n = put_u5(p, sender);

	n += put_u5(p + n, midx);
	return n + put_u5(p + n, (uint32_t)(bci + 1));
}

static void put_pc(struct fake *f, int i, int32_t off, uint32_t scope)
{
	put32(f->h + f->pcs + 16 * i, off);
	put32(f->h + f->pcs + 16 * i + 4, (int32_t)scope);
}

/*
 * outer() (bci 300, a bci of two bytes) calls inner(), inlined, whose
 * call at bci 3 returns to code + 40; code + 100 is a poll of outer()
 * alone; the end sentinel (no scope) at CODE + 1.
 */
static void build(struct fake *f)
{
	uint8_t *sd;
	size_t n = 1;

	memset(f->mem, 0, sizeof(f->mem));
	f->h = f->mem + 8192;
	f->code = (uint64_t)(uintptr_t)(f->h + 128 + CONSTS);
	put32(f->h + layout.header_size, 128);
	put64(f->h + layout.code_begin, f->code);
	put64(f->h + layout.code_end, f->code + CODE);
	put64(f->h + layout.method, M_OUTER);
	put64(f->h + MD, M_OUTER);
	put64(f->h + MD + 8, M_INNER);
	put64(f->h + MD + 16, M_OTHER);
	f->sd = MD + 8 * NMD;
	sd = f->h + f->sd;
	sd[0] = 0xff;		/* no scope at 0: serialized_null */
	f->scope_a = (uint32_t)n;
	n += put_scope(sd + n, 0, 1, 300);
	f->scope_b = (uint32_t)n;
	n += put_scope(sd + n, f->scope_a, 2, 3);
	f->pcs = (f->sd + n + 7) & ~7ul;
	put_pc(f, 0, -1, 0);
	put_pc(f, 1, 40, f->scope_b);
	put_pc(f, 2, 100, f->scope_a);
	put_pc(f, 3, CODE + 1, 0);
	f->deps = f->pcs + 4 * 16;
	put32(f->h + layout.size, (int32_t)f->deps + 64);
	put64(f->h + layout.scopes_data_begin,
	      (uint64_t)(uintptr_t)(f->h + f->sd));
	put32(f->h + layout.metadata_offset, MD);
	put32(f->h + layout.scopes_pcs_offset, (int32_t)f->pcs);
	put32(f->h + layout.dependencies_offset, (int32_t)f->deps);
}

/* javascope_find() on a fresh javascope (nothing cached). */
static int find(struct fake *f, uint64_t off, struct javascope_frame *fr,
		int max, int *n, unsigned long *failed)
{
	struct javascope *s;
	int ret;

	MUST(javascope_new(NULL, getpid(), &s));
	javascope_set_layout(s, &layout);
	ret = javascope_find(s, f->code + off, f->code, CODE, fr, max, n);
	*failed = javascope_failures(s);
	javascope_free(s);
	return ret;
}

static void test_scopes(struct fake *f)
{
	struct javascope_frame fr[4];
	unsigned long failed;
	int n, ret;

	build(f);
	/* a return address less one, and the return address: the call */
	for (uint64_t off = 39; off <= 40; off++) {
		ret = find(f, off, fr, 4, &n, &failed);
		CHECK(!ret && n == 2 && fr[0].method == M_INNER &&
		      fr[0].bci == 3 && fr[1].method == M_OUTER &&
		      fr[1].bci == 300, "%d %d", ret, n);
	}
	/* a leaf before the poll: the poll's */
	ret = find(f, 41, fr, 4, &n, &failed);
	CHECK(!ret && n == 1 && fr[0].method == M_OUTER && fr[0].bci == 300,
	      "%d %d", ret, n);
	/* past the last poll: the sentinel, no scope */
	ret = find(f, 200, fr, 4, &n, &failed);
	CHECK(!ret && n == 1 && fr[0].method == M_OUTER && fr[0].bci == -1,
	      "%d %d %d", ret, n, fr[0].bci);
	/* no room */
	ret = find(f, 39, fr, 1, &n, &failed);
	CHECK(ret == -E2BIG && !n && failed == 1, "%d %lu", ret, failed);
	/* outside the code */
	ret = find(f, CODE, fr, 4, &n, &failed);
	CHECK(ret == -EINVAL && !failed, "%d", ret);
}

/* Each a JVM's memory gone wrong: an error, counted. */
static void test_bad(struct fake *f)
{
	struct javascope_frame fr[4];
	unsigned long failed;
	int n, ret;

	struct {
		const char *what;
		size_t at;		/* offset from h */
		int32_t v;
		uint64_t off;		/* the pc's */
	} bad[] = {
		{ "header names other code", layout.code_end, 0, 39 },
		{ "header of another size", layout.header_size, 64, 39 },
		{ "blob too small", layout.size, 100, 39 },
		{ "metadata before the header", layout.metadata_offset, 8, 39 },
		{ "pcs before scopes", layout.scopes_pcs_offset, MD, 39 },
		{ "deps past the blob", layout.dependencies_offset, 1 << 20,
		  39 },
		{ "pcs not whole", layout.dependencies_offset, -1, 39 },
		{ "scope past the data", 0, 1 << 20, 39 },
		{ "negative scope", 0, -5, 39 },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		build(f);
		if (!bad[i].at)		/* PcDesc 1's scope */
			put_pc(f, 1, 40, (uint32_t)bad[i].v);
		else if (bad[i].v == -1)
			put32(f->h + bad[i].at, (int32_t)f->deps - 3);
		else
			put32(f->h + bad[i].at, bad[i].v);
		ret = find(f, bad[i].off, fr, 4, &n, &failed);
		CHECK(ret == -EINVAL && !n && failed == 1, "%s: %d %d %lu",
		      bad[i].what, ret, n, failed);
	}
	/* a metadata index out of range, a chain that loops, scopes of
	 * another method */
	build(f);
	f->h[f->sd + f->scope_b + 1] = NMD + 1;
	ret = find(f, 39, fr, 4, &n, &failed);
	CHECK(ret == -EINVAL && failed == 1, "metadata index: %d", ret);
	build(f);
	f->h[f->sd + f->scope_a] = (uint8_t)f->scope_b;
	ret = find(f, 39, fr, 4, &n, &failed);
	CHECK(ret == -EINVAL && failed == 1, "loop: %d", ret);
	build(f);
	put64(f->h + layout.method, M_OTHER);
	ret = find(f, 39, fr, 4, &n, &failed);
	CHECK(ret == -EINVAL && failed == 1, "other method: %d", ret);
	/* random scopes data: whatever comes, no crash, no read past it */
	srand(1);
	for (int k = 0; k < 2000; k++) {
		build(f);
		for (size_t i = 1; i < f->pcs - f->sd; i++)
			f->h[f->sd + i] = (uint8_t)rand();
		ret = find(f, (uint64_t)rand() % CODE, fr, 4, &n, &failed);
		CHECK(ret == 0 || ret == -EINVAL || ret == -E2BIG, "%d", ret);
		CHECK(ret || (n >= 1 && n <= 4 &&
			      fr[n - 1].method == M_OUTER), "%d", n);
	}
}

/* A layout whose fields fall outside the header or PcDesc: none. */
static void test_layout(struct fake *f)
{
	struct javascope_frame fr[4];
	struct javamethod_nm l = layout;
	struct javascope *s;
	int n, ret;

	build(f);
	MUST(javascope_new(NULL, getpid(), &s));
	l.dependencies_offset = l.nm_size - 4;
	javascope_set_layout(s, &l);
	ret = javascope_find(s, f->code + 39, f->code, CODE, fr, 4, &n);
	CHECK(ret == -ENOENT && !n, "%d", ret);
	l = layout;
	l.scope_offset = 14;
	javascope_set_layout(s, &l);
	ret = javascope_find(s, f->code + 39, f->code, CODE, fr, 4, &n);
	CHECK(ret == -ENOENT, "%d", ret);
	l = layout;
	javascope_set_layout(s, &l);
	ret = javascope_find(s, f->code + 39, f->code, CODE, fr, 4, &n);
	CHECK(!ret && n == 2, "%d", ret);
	javascope_free(s);
}

static void test_external(void)
{
	static const struct {
		const char *name, *desc, *want;
	} cases[] = {
		{ "Known.heavy", "()J", "long Known.heavy()" },
		{ "Known.inner", "(LKnown$Op;JJ)J",
		  "long Known.inner(Known$Op, long, long)" },
		{ "p.C.m", "([[I[Ljava.lang.String;ZBCSFD)V",
		  "void p.C.m(int[][], java.lang.String[], boolean, byte, "
		  "char, short, float, double)" },
		{ "p.C.get", "()[Ljava.lang.Object;",
		  "java.lang.Object[] p.C.get()" },
	};
	static const char *const bad[] = {
		"", "J", "(J", "(Q)V", "(Ljava.lang.String)V", "()", "()JJ",
		"([)V",
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret = javamethod_external(cases[i].name, cases[i].desc,
					      strlen(cases[i].desc), buf,
					      sizeof(buf));

		CHECK(!ret && !strcmp(buf, cases[i].want), "%d %s", ret, buf);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(javamethod_external("C.m", bad[i], strlen(bad[i]), buf,
					  sizeof(buf)) == -EINVAL, "%s",
		      bad[i]);
	CHECK(javamethod_external("Known.heavy", "()J", 3, buf, 10) ==
	      -EINVAL, "too small");
}

int main(void)
{
	static struct fake f;

	/* each failure logs once per javascope, and each case has its own */
	proffs_log_set_level(PROFFS_LOG_WARNING);
	test_scopes(&f);
	test_bad(&f);
	test_layout(&f);
	test_external();
	if (failures)
		return 1;
	printf("all javascope checks passed\n");
	return 0;
}
