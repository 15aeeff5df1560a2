// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * cu_index.c - compile units by address, a sorted table of their ranges;
 * in each unit, a sorted table of its functions' ranges, made the first
 * time an address falls in the unit.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>

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
	struct ranges cus;
	struct unit *units;	/* by DIE offset, as the units come */
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

static int add_unit(struct cu_index *ix, Dwarf_Die *cudie)
{
	struct unit *nu;

	if (ix->nunits == ix->cap_units) {
		size_t cap = ix->cap_units ? ix->cap_units * 2 : 64;

		nu = realloc(ix->units, cap * sizeof(*nu));
		if (!nu)
			return -ENOMEM;
		ix->units = nu;
		ix->cap_units = cap;
	}
	ix->units[ix->nunits] = (struct unit){ .die = dwarf_dieoffset(cudie) };
	return ranges_add_die(&ix->cus, cudie, ix->nunits++);
}

int cu_index_build(Dwarf *dw, struct cu_index **out)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	struct cu_index *ix;
	uint8_t unit_type;
	Dwarf_Half version;
	int ret = 0;

	ix = calloc(1, sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	ix->dw = dw;
	while (!ret && !dwarf_get_units(dw, cu, &cu, &version, &unit_type,
					&cudie, NULL)) {
		if (unit_type == DW_UT_compile || unit_type == DW_UT_partial ||
		    unit_type == DW_UT_skeleton)
			ret = add_unit(ix, &cudie);
	}
	if (ret) {
		cu_index_free(ix);
		return ret;
	}
	ranges_sort(&ix->cus);
	*out = ix;
	return 0;
}

bool cu_index_find(const struct cu_index *ix, Dwarf_Addr addr,
		   Dwarf_Die *cu)
{
	const struct range *r = ranges_find(&ix->cus, addr);

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
