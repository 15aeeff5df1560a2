/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cu_index.h - which DWARF compile unit, and which scopes in it (the
 * function, the inlined subroutines and blocks inside it), hold an
 * address: from the units' and functions' own address ranges
 * (DW_AT_low_pc/high_pc, DW_AT_ranges).
 *
 * libdw 0.188 (Debian 12) finds a unit by address only through
 * .debug_aranges, which neither Go's linker nor clang writes: without this
 * index their programs get functions from the symbol table but no file,
 * line or inlined frame, although addr2line, which reads the units, has
 * them. Inside a unit, the functions are found through a table of their
 * ranges, built on the unit's first lookup: a unit of Go's runtime or of
 * Rust's standard library has thousands of functions, and a walk of them
 * all cost 0.3 to 0.9 ms for each new address.
 *
 * The Dwarf is borrowed and must outlive the index. Not locked (the
 * tables grow on lookups): the dso that owns both serializes its libdw
 * use.
 */
#ifndef PROFFS_CU_INDEX_H
#define PROFFS_CU_INDEX_H

#include <stdbool.h>
#include <stddef.h>

#include <elfutils/libdw.h>

struct cu_index;

/* An index of the compile units of dw with code, made as lookups need it
 * (cu_index.c). 0, or -ENOMEM. An index of no unit is not an error:
 * every lookup then misses. */
int cu_index_build(Dwarf *dw, struct cu_index **out);

/* The compile unit's DIE whose ranges hold addr (a DWARF address). */
bool cu_index_find(struct cu_index *ix, Dwarf_Addr addr, Dwarf_Die *cu);

/*
 * The DIEs holding code (functions, inlined subroutines, lexical blocks)
 * that hold addr in the unit cu (from cu_index_find()), outermost first,
 * at most max: their number, 0 when none does.
 */
int cu_index_scopes(struct cu_index *ix, Dwarf_Die *cu, Dwarf_Addr addr,
		    Dwarf_Die *path, int max);

/* NULL is a no-op. */
void cu_index_free(struct cu_index *ix);

/* What the index holds, in bytes (its tables, without malloc's
 * rounding), and how many units it knows; 0 for NULL. */
size_t cu_index_mem_bytes(const struct cu_index *ix);
size_t cu_index_units(const struct cu_index *ix);

#endif
