// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-gopclntab.c - sampler/unwind/gopclntab.c over tables built here,
 * byte by byte, in Go 1.18's layout (magic 0xfffffff0) and 1.16's: names,
 * file:line and frame sizes at known pcs, and every truncation and
 * corruption of a table refused or answered within its bytes (the
 * sanitizers and valgrind runs see any read outside).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sampler/unwind/gopclntab.h"

#define TEXT 0x401000u
#define OK(cond) CHECK(cond, "%s", "")

struct buf {
	uint8_t b[1024];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void put64(struct buf *b, uint64_t v)
{
	put(b, &v, 8);
}

/* Two functions, main.a at TEXT (0x20 bytes: a 24-byte frame between
 * 4 and 0x1c, line 10 then 11 from 8) and main.b after it, in
 * /src/a.go. go116: the 1.16 layout (absolute entries, no text start). */
static size_t build(struct buf *b, bool go116)
{
	/* pc-value tables: zig-zag value delta, pc delta; 0 ends */
	static const uint8_t pcsp[] = { 2, 4, 48, 0x18, 47, 4, 0 };
	static const uint8_t pcfile[] = { 2, 0x20, 0 };
	static const uint8_t pcln[] = { 22, 8, 2, 0x18, 0 };
	static const char names[] = "main.a\0main.b";
	static const char files[] = "/src/a.go";
	size_t hdr = go116 ? 64 : 72, off_names, off_cu, off_files, off_pc,
	       off_fn, fent = go116 ? 16 : 8;
	uint32_t sp_at, file_at, ln_at;

	memset(b, 0, sizeof(*b));
	off_names = hdr;
	off_cu = off_names + sizeof(names);
	off_files = off_cu + 4;
	off_pc = off_files + sizeof(files);
	off_fn = off_pc + 1 + sizeof(pcsp) + sizeof(pcfile) + sizeof(pcln);
	put32(b, go116 ? 0xfffffffa : 0xfffffff0);
	put(b, "\0\0\1\x08", 4);
	put64(b, 2);		/* nfunc */
	put64(b, 1);		/* nfiles */
	if (!go116)
		put64(b, TEXT);
	put64(b, off_names);
	put64(b, off_cu);
	put64(b, off_files);
	put64(b, off_pc);
	put64(b, off_fn);
	put(b, names, sizeof(names));
	put32(b, 0);		/* cutab: file 0 at filetab offset 0 */
	put(b, files, sizeof(files));
	put(b, "", 1);		/* pc-table offset 0 means none */
	sp_at = 1;
	put(b, pcsp, sizeof(pcsp));
	file_at = sp_at + sizeof(pcsp);
	put(b, pcfile, sizeof(pcfile));
	ln_at = file_at + sizeof(pcfile);
	put(b, pcln, sizeof(pcln));
	OK(b->n == off_fn);
	for (int i = 0; i <= 2; i++) {	/* entries, then the end */
		uint64_t funcoff = 3 * fent + i * (go116 ? 44 : 40);

		if (go116) {
			put64(b, TEXT + 0x20 * i);
			put64(b, funcoff);
		} else {
			put32(b, 0x20 * i);
			put32(b, funcoff);
		}
	}
	for (int i = 0; i < 2; i++) {
		if (go116)
			put64(b, TEXT + 0x20 * i);
		else
			put32(b, 0x20 * i);
		put32(b, i * 7);	/* nameoff */
		put32(b, 0);		/* args */
		put32(b, 0);		/* deferreturn */
		put32(b, sp_at);
		put32(b, file_at);
		put32(b, ln_at);
		put32(b, 0);		/* npcdata */
		put32(b, 0);		/* cuOffset */
		put32(b, 0);		/* funcID, flag, pad, nfuncdata */
	}
	return b->n;
}

static void check_table(const struct buf *b)
{
	struct gopcln_frame fr[4];
	struct gopcln_func f;
	struct gopcln *g;
	int32_t delta;
	int n;

	OK(!gopcln_new(b->b, b->n, 0, &g));
	OK(!gopcln_func(g, TEXT + 0x10, &f));
	OK(!strcmp(f.name, "main.a") && f.entry == TEXT &&
	      f.end == TEXT + 0x20);
	OK(!gopcln_func(g, TEXT + 0x3f, &f) && !strcmp(f.name, "main.b"));
	OK(gopcln_func(g, TEXT + 0x40, &f) == -ENOENT);
	OK(gopcln_func(g, TEXT - 1, &f) == -ENOENT);
	OK(!gopcln_sp_delta(g, TEXT, &delta) && delta == 0);
	OK(!gopcln_sp_delta(g, TEXT + 4, &delta) && delta == 24);
	OK(!gopcln_sp_delta(g, TEXT + 0x1b, &delta) && delta == 24);
	OK(!gopcln_sp_delta(g, TEXT + 0x1c, &delta) && delta == 0);
	OK(!gopcln_frames(g, TEXT + 7, fr, 4, &n) && n == 1);
	OK(!strcmp(fr[0].function, "main.a") && fr[0].line == 10 &&
	      !strcmp(fr[0].file, "/src/a.go"));
	OK(!gopcln_frames(g, TEXT + 0x28, fr, 4, &n) && n == 1 &&
	      !strcmp(fr[0].function, "main.b") && fr[0].line == 11);
	OK(gopcln_frames(g, TEXT + 0x40, fr, 4, &n) == -ENOENT && !n);
	gopcln_free(g);
}

/* Every prefix, and every byte changed, parses or is refused, and
 * whatever parses answers lookups without reading outside the copy. */
static void check_damage(const struct buf *good)
{
	struct gopcln_frame fr[4];
	struct gopcln_func f;
	struct gopcln *g;
	int32_t delta;
	int n;

	for (size_t len = 0; len < good->n; len++) {
		uint8_t *copy = malloc(len ? len : 1);

		memcpy(copy, good->b, len);
		if (!gopcln_new(copy, len, 0, &g)) {
			for (uint64_t pc = TEXT - 1; pc <= TEXT + 0x41; pc++) {
				gopcln_func(g, pc, &f);
				gopcln_sp_delta(g, pc, &delta);
				gopcln_frames(g, pc, fr, 4, &n);
			}
			gopcln_free(g);
		}
		free(copy);
	}
	for (size_t i = 0; i < good->n; i++) {
		for (int v = 0; v < 256; v += 51) {
			uint8_t *copy = malloc(good->n);

			memcpy(copy, good->b, good->n);
			copy[i] = (uint8_t)(copy[i] ^ (v | 1));
			if (!gopcln_new(copy, good->n, TEXT, &g)) {
				for (uint64_t pc = TEXT; pc < TEXT + 0x40;
				     pc += 3) {
					gopcln_func(g, pc, &f);
					gopcln_sp_delta(g, pc, &delta);
					gopcln_frames(g, pc, fr, 4, &n);
				}
				gopcln_free(g);
			}
			free(copy);
		}
	}
}

int main(void)
{
	static const uint8_t elf[16] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
	struct buf b;
	struct gopcln *g;

	build(&b, false);
	check_table(&b);
	check_damage(&b);
	build(&b, true);
	check_table(&b);
	check_damage(&b);
	/* not a table at all; a 32-bit one */
	OK(gopcln_new(elf, sizeof(elf), 0, &g) == -ENOEXEC);
	build(&b, false);
	b.b[7] = 4;
	OK(gopcln_new(b.b, b.n, 0, &g) == -ENOEXEC);
	OK(gopcln_new(b.b, 4, 0, &g) == -EINVAL);
	return failures != 0;
}
