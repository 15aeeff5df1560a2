// SPDX-License-Identifier: GPL-2.0-or-later
/* cu_index.c - compile units by address, a sorted table of their ranges. */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>

#include "cu_index.h"

/* Units' ranges may overlap (a discarded COMDAT copy, LTO partitions):
 * a lookup looks this many ranges back from the last one starting at or
 * below the address. */
#define CU_OVERLAP_SCAN 8

struct cu_range {
	Dwarf_Addr start, end;	/* [start, end) */
	Dwarf_Off die;		/* offset of the unit's DIE in .debug_info */
};

struct cu_index {
	Dwarf *dw;
	struct cu_range *v;
	size_t n, cap;
};

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int add_range(struct cu_index *ix, Dwarf_Addr start, Dwarf_Addr end,
		     Dwarf_Off die)
{
	struct cu_range *nv;

	/* A function the linker dropped keeps its range at 0 (or at a
	 * tombstone, -1 or -2, past every real address). */
	if (!start || start >= end || end >= (Dwarf_Addr)-2)
		return 0;
	if (ix->n == ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 64;

		nv = realloc(ix->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		ix->v = nv;
		ix->cap = cap;
	}
	ix->v[ix->n++] = (struct cu_range){ start, end, die };
	return 0;
}

static int add_unit(struct cu_index *ix, Dwarf_Die *cudie)
{
	Dwarf_Addr base, start, end;
	Dwarf_Off die = dwarf_dieoffset(cudie);
	ptrdiff_t off = 0;
	int ret = 0;

	while (!ret && (off = dwarf_ranges(cudie, off, &base, &start,
					   &end)) > 0)
		ret = add_range(ix, start, end, die);
	return ret;
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
	if (ix->n)
		qsort(ix->v, ix->n, sizeof(*ix->v), range_cmp);
	*out = ix;
	return 0;
}

bool cu_index_find(const struct cu_index *ix, Dwarf_Addr addr,
		   Dwarf_Die *cu)
{
	size_t lo = 0, hi = ix->n, i;

	while (lo < hi) {	/* first range starting above addr */
		size_t mid = lo + (hi - lo) / 2;

		if (ix->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i > 0 && lo - i < CU_OVERLAP_SCAN; i--)
		if (addr < ix->v[i - 1].end)
			return dwarf_offdie(ix->dw, ix->v[i - 1].die, cu);
	return false;
}

void cu_index_free(struct cu_index *ix)
{
	if (!ix)
		return;
	free(ix->v);
	free(ix);
}
