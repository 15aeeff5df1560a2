// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * gopclntab.c - Go's pc-line table, read as the runtime reads it
 * (runtime/symtab.go, debug/gosym/pclntab.go), written here from the
 * layout alone.
 *
 * The section starts with a header giving the offsets of its parts, in
 * this order: function names, the compile units' file indexes (cutab),
 * file names, the pc-value tables, and the function table (pairs of entry
 * pc and offset of a _func record, sorted by pc, one more entry at the
 * end giving the end of the last function). Each part is bounded by the
 * next, so every read below is checked against its own part.
 *
 * A pc-value table maps a function's pcs to values (frame size, file
 * index, line, inline tree index): pairs of zig-zag varint value deltas
 * and varint pc deltas, from value -1 at the entry, ending at a zero
 * value delta.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/unwind/elfscn.h"
#include "sampler/unwind/gopclntab.h"
#include "sampler/log.h"

#define MAGIC_116	0xfffffffau
#define MAGIC_118	0xfffffff0u
#define MAGIC_120	0xfffffff1u
#define PCDATA_INLTREE	2	/* _PCDATA_InlTreeIndex */
#define FUNCDATA_INLTREE 3	/* _FUNCDATA_InlTree */
#define MAX_INLINE	32	/* deeper chains are cut */

enum part { P_NAMES, P_CUTAB, P_FILES, P_PCTAB, P_FUNCS, P__COUNT };

struct gopcln {
	const uint8_t *data;
	size_t size;
	uint32_t magic;
	uint8_t quantum;	/* minLC: pc deltas are multiples of it */
	uint64_t nfunc;
	uint64_t text;		/* base of 1.18+ entry offsets */
	size_t off[P__COUNT], end[P__COUNT];	/* each part's bytes */
	size_t fent;		/* bytes per function table entry */
	size_t fbase;		/* offset of nameoff in a _func */
	size_t funcid_off;	/* offset of funcID in a _func */
	/* go:func.*, where 1.18+ funcdata offsets point: the bytes of
	 * the section holding it, from gofunc on (NULL: no inline trees) */
	const uint8_t *gofunc;
	size_t gofunc_len;
	size_t inl_size;	/* bytes of an inlinedCall */
	char version[32];
};

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Whether [off, off + len) lies in part p. */
static bool in_part(const struct gopcln *g, enum part p, uint64_t off,
		    uint64_t len)
{
	uint64_t size = g->end[p] - g->off[p];

	return off <= size && len <= size - off;
}

/* The NUL-terminated string at off of part p, or NULL. */
static const char *part_str(const struct gopcln *g, enum part p,
			    uint64_t off)
{
	const uint8_t *s = g->data + g->off[p] + off;

	if (!in_part(g, p, off, 1) ||
	    !memchr(s, 0, g->end[p] - g->off[p] - off))
		return NULL;
	return (const char *)s;
}

int gopcln_new(const uint8_t *data, size_t size, uint64_t text_vaddr,
	       struct gopcln **out)
{
	struct gopcln *g;
	size_t hdr, i, w;
	uint32_t magic;

	if (size < 8)
		return -EINVAL;
	magic = rd32(data);
	if (magic != MAGIC_116 && magic != MAGIC_118 && magic != MAGIC_120)
		return -ENOEXEC;
	if (data[4] || data[5] || data[7] != 8 || !data[6])
		return -ENOEXEC;	/* 64-bit tables only */
	w = magic == MAGIC_116 ? 7 : 8;	/* header words after the first */
	hdr = 8 + w * 8;
	if (size < hdr)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->data = data;
	g->size = size;
	g->magic = magic;
	g->quantum = data[6];
	g->nfunc = rd64(data + 8);
	i = magic == MAGIC_116 ? 0 : 1;	/* 1.18+: textStart at word 2 */
	g->text = i ? rd64(data + 24) : 0;
	if (i && !g->text)
		g->text = text_vaddr;
	for (enum part p = 0; p < P__COUNT; p++) {
		uint64_t o = rd64(data + 24 + (i + p) * 8);

		g->off[p] = o < hdr || o > size ? 0 : o;
		if (!g->off[p] || (p && g->off[p] < g->off[p - 1]))
			goto bad;
		if (p)
			g->end[p - 1] = g->off[p];
	}
	g->end[P_FUNCS] = size;
	g->fent = magic == MAGIC_116 ? 16 : 8;
	g->fbase = magic == MAGIC_116 ? 8 : 4;
	g->funcid_off = g->fbase + (magic == MAGIC_120 ? 36 : 32);
	g->inl_size = magic == MAGIC_120 ? 16 : 20;
	if (g->nfunc > (size / g->fent) ||
	    !in_part(g, P_FUNCS, 0, (g->nfunc + 1) * g->fent))
		goto bad;
	snprintf(g->version, sizeof(g->version), "%s",
		 magic == MAGIC_116 ? "go1.16+" :
		 magic == MAGIC_118 ? "go1.18+" : "go1.20+");
	*out = g;
	return 0;
bad:
	free(g);
	return -EINVAL;
}

void gopcln_free(struct gopcln *g)
{
	free(g);
}

const char *gopcln_version(const struct gopcln *g)
{
	return g->version;
}

/* Entry pc of function table slot i (i <= nfunc). */
static uint64_t ftab_entry(const struct gopcln *g, uint64_t i)
{
	const uint8_t *p = g->data + g->off[P_FUNCS] + i * g->fent;

	return g->fent == 16 ? rd64(p) : g->text + rd32(p);
}

static uint64_t ftab_funcoff(const struct gopcln *g, uint64_t i)
{
	const uint8_t *p = g->data + g->off[P_FUNCS] + i * g->fent;

	return g->fent == 16 ? rd64(p + 8) : rd32(p + 4);
}

/* A function found: its _func record and range. */
struct fn {
	const uint8_t *rec;	/* in P_FUNCS, funcid_off + 4 bytes at least */
	uint64_t entry, end;
	uint32_t npcdata;
	uint8_t nfuncdata;
};

static int find_fn(const struct gopcln *g, uint64_t pc, struct fn *f)
{
	uint64_t lo = 0, hi = g->nfunc, mid, foff;

	if (!g->nfunc || pc < ftab_entry(g, 0) ||
	    pc >= ftab_entry(g, g->nfunc))
		return -ENOENT;
	while (hi - lo > 1) {	/* the last entry at or below pc */
		mid = lo + (hi - lo) / 2;
		if (ftab_entry(g, mid) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	f->entry = ftab_entry(g, lo);
	f->end = ftab_entry(g, lo + 1);
	foff = ftab_funcoff(g, lo);
	if (f->end <= pc || !in_part(g, P_FUNCS, foff, g->funcid_off + 4))
		return -ENOENT;
	f->rec = g->data + g->off[P_FUNCS] + foff;
	f->npcdata = rd32(f->rec + g->fbase + 24);
	f->nfuncdata = f->rec[g->funcid_off + 3];
	if (f->npcdata > 64 || !in_part(g, P_FUNCS, foff, g->funcid_off + 4 +
					4 * (uint64_t)f->npcdata))
		return -ENOENT;
	return 0;
}

/* Field k (0: nameoff, 3: pcsp, 4: pcfile, 5: pcln, 7: cuOffset). */
static uint32_t fn_field(const struct gopcln *g, const struct fn *f, int k)
{
	return rd32(f->rec + g->fbase + 4 * k);
}

static bool uvarint(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	uint32_t x = 0;

	for (unsigned shift = 0; shift < 35; shift += 7) {
		if (*p >= end)
			return false;
		x |= (uint32_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

/* The value of the pc-value table at offset off of P_PCTAB, at pc. */
static int pcvalue(const struct gopcln *g, const struct fn *f, uint32_t off,
		   uint64_t pc, int32_t *val)
{
	const uint8_t *p = g->data + g->off[P_PCTAB] + off;
	const uint8_t *end = g->data + g->end[P_PCTAB];
	uint64_t at = f->entry;
	uint32_t dv, dpc;
	int32_t v = -1;

	if (!off || !in_part(g, P_PCTAB, off, 1))
		return -ENOENT;
	for (bool first = true;; first = false) {
		if (!uvarint(&p, end, &dv) || (!dv && !first))
			return -ENOENT;
		/* zig-zag delta; Go's int32 wraps, and so does ours */
		v = (int32_t)((uint32_t)v + (-(dv & 1) ^ (dv >> 1)));
		if (!uvarint(&p, end, &dpc))
			return -ENOENT;
		at += (uint64_t)dpc * g->quantum;
		if (pc < at) {
			*val = v;
			return 0;
		}
		if (at >= f->end)
			return -ENOENT;
	}
}

static const char *fn_name(const struct gopcln *g, int32_t nameoff)
{
	return nameoff < 0 ? NULL : part_str(g, P_NAMES, (uint32_t)nameoff);
}

int gopcln_func(const struct gopcln *g, uint64_t vaddr,
		struct gopcln_func *out)
{
	struct fn f;
	const char *name;

	if (find_fn(g, vaddr, &f))
		return -ENOENT;
	name = fn_name(g, (int32_t)fn_field(g, &f, 0));
	if (!name)
		return -ENOENT;
	*out = (struct gopcln_func){ .entry = f.entry, .end = f.end,
				     .name = name,
				     .funcid = f.rec[g->funcid_off] };
	return 0;
}

int gopcln_sp_delta(const struct gopcln *g, uint64_t vaddr, int32_t *delta)
{
	struct fn f;

	if (find_fn(g, vaddr, &f) || pcvalue(g, &f, fn_field(g, &f, 3),
					     vaddr, delta) || *delta < 0)
		return -ENOENT;
	return 0;
}

int gopcln_frame_size(const struct gopcln *g, uint64_t vaddr,
		      int32_t *size)
{
	const uint8_t *p, *end;
	uint32_t off, dv, dpc;
	int32_t v = -1, max = -1;
	struct fn f;

	if (find_fn(g, vaddr, &f))
		return -ENOENT;
	off = fn_field(g, &f, 3);
	if (!off || !in_part(g, P_PCTAB, off, 1))
		return -ENOENT;
	p = g->data + g->off[P_PCTAB] + off;
	end = g->data + g->end[P_PCTAB];
	for (bool first = true;; first = false) {
		if (!uvarint(&p, end, &dv) || (!dv && !first))
			break;
		/* zig-zag delta; Go's int32 wraps, and so does ours */
		v = (int32_t)((uint32_t)v + (-(dv & 1) ^ (dv >> 1)));
		if (!uvarint(&p, end, &dpc))
			return -ENOENT;
		if (v > max)
			max = v;
	}
	if (max < 0)
		return -ENOENT;
	*size = max;
	return 0;
}

/* File and line of pc in f's tables (an inlined callee's where the code
 * is inlined). */
static void file_line(const struct gopcln *g, const struct fn *f,
		      uint64_t pc, struct gopcln_frame *fr)
{
	int32_t fileno, line;
	uint64_t k;

	if (!pcvalue(g, f, fn_field(g, f, 5), pc, &line) && line > 0)
		fr->line = line;
	if (pcvalue(g, f, fn_field(g, f, 4), pc, &fileno) || fileno < 0)
		return;
	k = (uint64_t)fn_field(g, f, 7) + (uint32_t)fileno;
	if (in_part(g, P_CUTAB, k * 4, 4))
		fr->file = part_str(g, P_FILES,
				    rd32(g->data + g->off[P_CUTAB] + k * 4));
}

/* The inline tree of f, as bytes of go:func.*; NULL if none. */
static const uint8_t *inl_tree(const struct gopcln *g, const struct fn *f,
			       size_t *len)
{
	uint32_t off;

	if (!g->gofunc || f->nfuncdata <= FUNCDATA_INLTREE ||
	    f->npcdata <= PCDATA_INLTREE)
		return NULL;
	/* funcdata offsets follow the pcdata offsets; checked in bounds
	 * by the caller's find_fn() only for pcdata: check them here */
	if (!in_part(g, P_FUNCS, (uint64_t)(f->rec - g->data -
					    g->off[P_FUNCS]),
		     g->funcid_off + 4 + 4 * ((uint64_t)f->npcdata +
					      f->nfuncdata)))
		return NULL;
	off = rd32(f->rec + g->funcid_off + 4 + 4 * (f->npcdata +
						      FUNCDATA_INLTREE));
	if (off == UINT32_MAX || off >= g->gofunc_len)
		return NULL;
	*len = g->gofunc_len - off;
	return g->gofunc + off;
}

int gopcln_frames(const struct gopcln *g, uint64_t vaddr,
		  struct gopcln_frame *frames, int max, int *n)
{
	struct gopcln_frame chain[MAX_INLINE + 1];
	const uint8_t *tree;
	uint64_t pc = vaddr;
	size_t tree_len = 0;
	int cnt = 0, k;
	int32_t ix;
	struct fn f;

	*n = 0;
	if (max <= 0 || find_fn(g, vaddr, &f))
		return -ENOENT;
	tree = inl_tree(g, &f, &tree_len);
	while (tree && cnt < MAX_INLINE &&
	       !pcvalue(g, &f, rd32(f.rec + g->funcid_off + 4 +
				    4 * PCDATA_INLTREE), pc, &ix) &&
	       ix >= 0 && (uint64_t)(ix + 1) * g->inl_size <= tree_len) {
		const uint8_t *c = tree + (size_t)ix * g->inl_size;
		/* 1.20+: funcID, pad, nameOff, parentPc, startLine;
		 * 1.18: parent, funcID, pad, file, line, func_, parentPc */
		int32_t nameoff = (int32_t)rd32(c + (g->inl_size == 16 ? 4 :
						     12));
		uint32_t parent_pc = rd32(c + (g->inl_size == 16 ? 8 : 16));

		chain[cnt] = (struct gopcln_frame){
			.function = fn_name(g, nameoff) };
		if (!chain[cnt].function)
			break;
		file_line(g, &f, pc, &chain[cnt++]);
		if (f.entry + parent_pc >= f.end)
			break;
		pc = f.entry + parent_pc;
	}
	chain[cnt] = (struct gopcln_frame){
		.function = fn_name(g, (int32_t)fn_field(g, &f, 0)) };
	if (!chain[cnt].function)
		return -ENOENT;
	file_line(g, &f, pc, &chain[cnt++]);
	*n = cnt < max ? cnt : max;
	for (k = 0; k < *n - 1; k++)
		frames[k] = chain[k];
	frames[*n - 1] = chain[cnt - 1];
	return 0;
}

/* ---- from an ELF file ---- */

/* The bytes of section name in the file, or NULL. */
static const uint8_t *elf_section(Elf *elf, const uint8_t *map,
				  size_t map_size, const char *name,
				  GElf_Shdr *shdr)
{
	if (!elf_section_named(elf, name, shdr) ||
	    shdr->sh_type != SHT_PROGBITS || shdr->sh_offset > map_size ||
	    shdr->sh_size > map_size - shdr->sh_offset)
		return NULL;
	return map + shdr->sh_offset;
}

/* The Go version .go.buildinfo records inline (1.18 and later: a
 * varint-prefixed string after the 32-byte header). */
static void buildinfo_version(struct gopcln *g, const uint8_t *b,
			      size_t len)
{
	static const char magic[] = "\xff Go buildinf:";
	const uint8_t *p = b + 32, *end = b + len;
	uint32_t n;

	if (len < 33 || memcmp(b, magic, 14) || !(b[15] & 2) ||
	    !uvarint(&p, end, &n) || !n || n >= sizeof(g->version) ||
	    n > (size_t)(end - p) || memcmp(p, "go", 2))
		return;
	memcpy(g->version, p, n);
	g->version[n] = '\0';
}

/*
 * go:func.*, where 1.18+ funcdata offsets point, from the runtime's
 * moduledata in .noptrdata: the record that starts with the table's
 * address followed by the function names' slice. gofunc is its word 38
 * (1.18-1.19) or 40 (1.20+: two coverage counter words more).
 */
static void find_gofunc(struct gopcln *g, Elf *elf, const uint8_t *map,
			size_t map_size, uint64_t tab_vaddr)
{
	const uint8_t *nd, *ro;
	GElf_Shdr sh, rsh;
	size_t k, word = g->magic == MAGIC_120 ? 40 : 38;
	uint64_t gofunc;

	if (g->magic == MAGIC_116)
		return;
	nd = elf_section(elf, map, map_size, ".noptrdata", &sh);
	ro = elf_section(elf, map, map_size, ".rodata", &rsh);
	if (!nd || !ro || sh.sh_size < (word + 1) * 8)
		return;
	for (k = 0; k + (word + 1) * 8 <= sh.sh_size; k += 8) {
		if (rd64(nd + k) != tab_vaddr ||
		    rd64(nd + k + 8) != tab_vaddr + g->off[P_NAMES])
			continue;
		gofunc = rd64(nd + k + word * 8);
		if (gofunc < rsh.sh_addr ||
		    gofunc >= rsh.sh_addr + rsh.sh_size)
			return;
		g->gofunc = ro + (gofunc - rsh.sh_addr);
		g->gofunc_len = rsh.sh_addr + rsh.sh_size - gofunc;
		return;
	}
}

int gopcln_from_elf(Elf *elf, const uint8_t *map, size_t map_size,
		    struct gopcln **out)
{
	const uint8_t *tab, *bi;
	GElf_Shdr sh, text = { 0 }, bsh;
	struct gopcln *g;
	int ret;

	tab = elf_section(elf, map, map_size, ".gopclntab", &sh);
	if (!tab)
		return -ENOENT;
	elf_section(elf, map, map_size, ".text", &text);
	ret = gopcln_new(tab, sh.sh_size, text.sh_addr, &g);
	if (ret)
		return ret;
	bi = elf_section(elf, map, map_size, ".go.buildinfo", &bsh);
	if (bi)
		buildinfo_version(g, bi, bsh.sh_size);
	find_gofunc(g, elf, map, map_size, sh.sh_addr);
	*out = g;
	return 0;
}
