// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * cu_index.c - compile units by address, a sorted table of their ranges;
 * in each unit, a sorted table of its functions' ranges, made the first
 * time an address falls in the unit.
 *
 * Lazily: an address is first looked up in the file's own
 * .debug_aranges (GCC writes it; read raw, without touching
 * .debug_info), and the unit it names is taken when its own ranges hold
 * the address. Only a file without it (Go, clang), or an address it
 * does not place so, has every unit walked for the table of their
 * ranges, once: for libc6-dbg's 2,000 units that walk was a tenth of a
 * fresh daemon's first read.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gelf.h>

#include "sampler/unwind/cu_index.h"

/* Ranges may overlap (a discarded COMDAT copy, LTO partitions): a lookup
 * looks this many ranges back from the last one starting at or below the
 * address. */
#define OVERLAP_SCAN 8

struct range {
	Dwarf_Addr start, end;	/* [start, end) */
	Dwarf_Off die;		/* offset of the DIE in .debug_info */
	size_t unit;		/* of a unit's range: its index in units */
};

struct ranges {
	struct range *v;
	size_t n, cap;
};

struct unit {
	Dwarf_Off die;
	bool built;		/* funcs made (maybe empty) */
	struct ranges funcs;
};

struct cu_index {
	Dwarf *dw;
	bool full;		/* cus made: every unit's ranges */
	bool ar_tried;		/* ar read (maybe empty) */
	struct ranges cus;	/* die: the unit's DIE */
	struct ranges ar;	/* .debug_aranges; die: the unit's offset */
	struct unit *units;	/* sorted by DIE offset */
	size_t nunits, cap_units;
};

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int ranges_add(struct ranges *r, Dwarf_Addr start, Dwarf_Addr end,
		      Dwarf_Off die, size_t unit)
{
	struct range *nv;

	/* A function the linker dropped keeps its range at 0 (or at a
	 * tombstone, -1 or -2, past every real address). */
	if (!start || start >= end || end >= (Dwarf_Addr)-2)
		return 0;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;

		nv = realloc(r->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		r->v = nv;
		r->cap = cap;
	}
	r->v[r->n++] = (struct range){ start, end, die, unit };
	return 0;
}

/* Every range of die into r. */
static int ranges_add_die(struct ranges *r, Dwarf_Die *die, size_t unit)
{
	Dwarf_Addr base, start, end;
	Dwarf_Off off = dwarf_dieoffset(die);
	ptrdiff_t at = 0;
	int ret = 0;

	while (!ret && (at = dwarf_ranges(die, at, &base, &start, &end)) > 0)
		ret = ranges_add(r, start, end, off, unit);
	return ret;
}

static void ranges_sort(struct ranges *r)
{
	if (r->n)	/* r->v may be NULL: qsort's may not */
		qsort(r->v, r->n, sizeof(*r->v), range_cmp);
}

/* The range holding addr that starts last, or NULL. */
static const struct range *ranges_find(const struct ranges *r,
				       Dwarf_Addr addr)
{
	size_t lo = 0, hi = r->n, i;

	while (lo < hi) {	/* first range starting above addr */
		size_t mid = lo + (hi - lo) / 2;

		if (r->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i > 0 && lo - i < OVERLAP_SCAN; i--)
		if (addr < r->v[i - 1].end)
			return &r->v[i - 1];
	return NULL;
}

/* The unit of DIE offset off in units (kept sorted), added if new. */
static int unit_add(struct cu_index *ix, Dwarf_Off off)
{
	size_t lo = 0, hi = ix->nunits;
	struct unit *nu;

	if (hi && ix->units[hi - 1].die < off)
		lo = hi;	/* in order, as the full walk comes */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->units[mid].die == off)
			return 0;
		if (ix->units[mid].die < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (ix->nunits == ix->cap_units) {
		size_t cap = ix->cap_units ? ix->cap_units * 2 : 64;

		nu = realloc(ix->units, cap * sizeof(*nu));
		if (!nu)
			return -ENOMEM;
		ix->units = nu;
		ix->cap_units = cap;
	}
	memmove(&ix->units[lo + 1], &ix->units[lo],
		(ix->nunits - lo) * sizeof(*nu));
	ix->units[lo] = (struct unit){ .die = off };
	ix->nunits++;
	return 0;
}

/* Every unit's ranges into cus, once. */
static int build_full(struct cu_index *ix)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;
	int ret = 0;

	ix->full = true;
	while (!ret && !dwarf_get_units(ix->dw, cu, &cu, &version,
					&unit_type, &cudie, NULL)) {
		if (unit_type == DW_UT_compile || unit_type == DW_UT_partial ||
		    unit_type == DW_UT_skeleton)
			ret = unit_add(ix, dwarf_dieoffset(&cudie));
		if (!ret)
			ret = ranges_add_die(&ix->cus, &cudie, 0);
	}
	ranges_sort(&ix->cus);
	return ret;
}

static uint64_t get_le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/* .debug_aranges (version 2, 8-byte addresses, no segments, this
 * machine's byte order, not compressed) into ix->ar, raw; anything else
 * leaves it empty. */
static void read_aranges(struct cu_index *ix)
{
	Elf *elf = dwarf_getelf(ix->dw);
	const unsigned char *p, *end, *set_end;
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr sh;
	size_t shstr;
	uint64_t len, cu_off, a, n;
	int off, ob;

	ix->ar_tried = true;
	if (!elf || elf_getshdrstrndx(elf, &shstr) ||
	    elf_kind(elf) != ELF_K_ELF ||
	    elf_getident(elf, NULL)[EI_DATA] != ELFDATA2LSB ||
	    __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstr,
								   sh.sh_name)) &&
		    !strcmp(name, ".debug_aranges"))
			break;
	}
	if (!scn || sh.sh_type != SHT_PROGBITS ||
	    (sh.sh_flags & SHF_COMPRESSED) || !(data = elf_getdata(scn, NULL)) ||
	    !data->d_buf)
		return;
	p = data->d_buf;
	end = p + data->d_size;
	while (end - p >= 4) {
		const unsigned char *set = p;

		len = get_le(p, 4);
		off = 4;
		if (len == 0xffffffff) {
			if (end - p < 12)
				break;
			len = get_le(p + 4, 8);
			off = 12;
		}
		if (len > (uint64_t)(end - p - off))
			break;
		set_end = p + off + len;
		p += off;
		/* version 2, the unit's offset, 8-byte addresses, no segment */
		ob = off == 12 ? 8 : 4;
		if (set_end - p < 2 + ob + 2 || get_le(p, 2) != 2)
			break;
		cu_off = get_le(p + 2, ob);
		p += 2 + ob;
		if (p[0] != 8 || p[1] != 0)
			break;
		p = set + (((p + 2 - set) + 15) & ~(size_t)15);
		for (; set_end - p >= 16; p += 16) {
			a = get_le(p, 8);
			n = get_le(p + 8, 8);
			if (!a && !n)
				break;
			if (n && a + n > a &&
			    ranges_add(&ix->ar, a, a + n, cu_off, 0)) {
				free(ix->ar.v);
				ix->ar = (struct ranges){ 0 };
				return;
			}
		}
		p = set_end;
	}
	ranges_sort(&ix->ar);
}

int cu_index_build(Dwarf *dw, struct cu_index **out)
{
	struct cu_index *ix;

	ix = calloc(1, sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	ix->dw = dw;
	*out = ix;
	return 0;
}

/* The unit .debug_aranges places addr in, if its own ranges hold addr. */
static bool aranges_find(struct cu_index *ix, Dwarf_Addr addr,
			 Dwarf_Die *cu)
{
	const struct range *r;
	Dwarf_Off next;
	size_t hsize;

	if (!ix->ar_tried)
		read_aranges(ix);
	r = ranges_find(&ix->ar, addr);
	return r && !dwarf_next_unit(ix->dw, r->die, &next, &hsize, NULL,
				     NULL, NULL, NULL, NULL, NULL) &&
	       dwarf_offdie(ix->dw, r->die + hsize, cu) &&
	       (dwarf_tag(cu) == DW_TAG_compile_unit ||
		dwarf_tag(cu) == DW_TAG_partial_unit ||
		dwarf_tag(cu) == DW_TAG_skeleton_unit) &&
	       dwarf_haspc(cu, addr) > 0 &&
	       !unit_add(ix, dwarf_dieoffset(cu));
}

bool cu_index_find(struct cu_index *ix, Dwarf_Addr addr, Dwarf_Die *cu)
{
	const struct range *r;

	if (!ix->full && aranges_find(ix, addr, cu))
		return true;
	if (!ix->full && build_full(ix))
		return false;	/* no memory: what was made is kept */
	r = ranges_find(&ix->cus, addr);
	return r && dwarf_offdie(ix->dw, r->die, cu);
}

static bool holds_code(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block;
}

/* Scopes without addresses that may still hold functions. */
static bool holds_funcs(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module;
}

#define MAX_NEST 16

/* The ranges of the outermost DIEs of code of the unit, in namespaces
 * and modules too (Rust's functions are in its modules'). */
static int unit_funcs(struct unit *u, Dwarf_Die *cu)
{
	Dwarf_Die die, next, up[MAX_NEST];
	int tag, nup = 0, ret = 0;

	if (dwarf_child(cu, &die))
		return 0;
	while (!ret) {
		tag = dwarf_tag(&die);
		if (holds_code(tag)) {
			ret = ranges_add_die(&u->funcs, &die, 0);
		} else if (holds_funcs(tag) && nup < MAX_NEST &&
			   !dwarf_child(&die, &next)) {
			up[nup++] = die;
			die = next;
			continue;
		}
		while (dwarf_siblingof(&die, &next)) {
			if (!nup)
				return ret;
			die = up[--nup];
		}
		die = next;
	}
	return ret;
}

static struct unit *unit_of(struct cu_index *ix, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	size_t lo = 0, hi = ix->nunits;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->units[mid].die == off)
			return &ix->units[mid];
		if (ix->units[mid].die < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * The scopes holding addr below parent, outermost first, after the n of
 * path already found, in one pruned descent: dwarf_getscopes() plus
 * dwarf_getscopes_die() (what eu-addr2line -i does) walk the unit up to
 * three times.
 */
static int descend(Dwarf_Die *parent, Dwarf_Addr addr, Dwarf_Die *path,
		   int n, int max)
{
	Dwarf_Die die, next, up[MAX_NEST];
	int tag, nup = 0;

	if (n == max || dwarf_child(parent, &die))
		return n;
	for (;;) {
		tag = dwarf_tag(&die);
		if (holds_code(tag) && dwarf_haspc(&die, addr) > 0) {
			path[n++] = die;
			nup = 0;	/* siblings cannot hold addr too */
			if (n == max || dwarf_child(&die, &next))
				return n;
			die = next;
			continue;
		}
		if (holds_funcs(tag) && nup < MAX_NEST &&
		    !dwarf_child(&die, &next)) {
			up[nup++] = die;
			die = next;
			continue;
		}
		while (dwarf_siblingof(&die, &next)) {
			if (!nup)
				return n;
			die = up[--nup];
		}
		die = next;
	}
}

int cu_index_scopes(struct cu_index *ix, Dwarf_Die *cu, Dwarf_Addr addr,
		    Dwarf_Die *path, int max)
{
	struct unit *u = unit_of(ix, cu);
	const struct range *f;

	if (max <= 0)
		return 0;
	if (u && !u->built) {
		/* without memory, the unit is walked whole each time */
		if (unit_funcs(u, cu)) {
			free(u->funcs.v);
			u->funcs = (struct ranges){ 0 };
		} else {
			ranges_sort(&u->funcs);
			u->built = true;
		}
	}
	if (!u || !u->built)
		return descend(cu, addr, path, 0, max);
	f = ranges_find(&u->funcs, addr);
	if (!f || !dwarf_offdie(ix->dw, f->die, &path[0]))
		return 0;
	return descend(&path[0], addr, path, 1, max);
}

void cu_index_free(struct cu_index *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->nunits; i++)
		free(ix->units[i].funcs.v);
	free(ix->units);
	free(ix->cus.v);
	free(ix->ar.v);
	free(ix);
}

size_t cu_index_mem_bytes(const struct cu_index *ix)
{
	size_t m;

	if (!ix)
		return 0;
	m = sizeof(*ix) + ix->cus.cap * sizeof(*ix->cus.v) +
	    ix->cap_units * sizeof(*ix->units);
	for (size_t i = 0; i < ix->nunits; i++)
		m += ix->units[i].funcs.cap * sizeof(*ix->units[i].funcs.v);
	return m;
}

size_t cu_index_units(const struct cu_index *ix)
{
	return ix ? ix->nunits : 0;
}
