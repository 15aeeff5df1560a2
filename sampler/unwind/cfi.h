/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cfi.h - the DWARF call frame information (.eh_frame, else .debug_frame)
 * of an x86-64 ELF object, reduced to the one row that applies at an
 * address: where the CFA is and where the caller's registers were saved.
 *
 * This is what lets the unwinder cache per pc: a row depends only on the
 * code, not on the stack, so it is computed once per distinct pc and then
 * applied to every sample that passes there. Only the rules a row can be
 * applied with cheaply are represented (CFA = register + offset; registers
 * same, undefined, saved at CFA + n, equal to CFA + n, or in another
 * register); anything else (DWARF expressions, as in PLT stubs and signal
 * trampolines) is -ENOTSUP, and the caller unwinds that stack another way.
 *
 * The FDE is found through the object's .eh_frame_hdr search table and
 * read with dso_read(); for code the .eh_frame does not cover, through a
 * table of the .debug_frame FDEs (of the object, or of its separate debug
 * file), built on first use and kept by the dso (dso_debug_frame()). No
 * other allocation is kept; thread-safe as the dso calls are.
 */
#ifndef PROFFS_CFI_H
#define PROFFS_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dso;
struct dso_debug_frame;

/* x86-64 DWARF register numbers 0-15 (libunwind's order, see unwind.h)
 * and the return address column, 16. */
#define CFI_NREGS 17
#define CFI_REG_RBP 6
#define CFI_REG_RSP 7
#define CFI_REG_RA 16
/* Registers with a rule other than "same value" in one row: a compiled
 * function saves at most the six callee-saved ones and the RA. */
#define CFI_MAX_RULES 10

enum cfi_rule_kind {
	CFI_UNDEF = 1,		/* no value: for the RA, the outermost frame */
	CFI_OFFSET,		/* saved in memory at CFA + off */
	CFI_VAL_OFFSET,		/* value is CFA + off */
	CFI_REGISTER,		/* value is that of register reg */
};

/* Four bytes: the unwinder keeps a row per distinct pc, and a big
 * program's rows (tens of thousands) must stay in cache. A saved
 * register's offset from the CFA beyond int16 is not a row (-ENOTSUP). */
struct cfi_rule {
	int16_t off;
	uint8_t reg;		/* the register this rule restores */
	uint8_t kind : 3;	/* enum cfi_rule_kind */
	uint8_t src : 5;	/* CFI_REGISTER: the register holding it */
};

struct cfi_row {
	int32_t cfa_off;
	uint8_t cfa_reg;
	uint8_t nrules;
	bool signal;		/* the CIE says signal frame ('S') */
	struct cfi_rule rules[CFI_MAX_RULES];	/* registers not listed:
						 * same value */
};

/*
 * The row in effect at ELF virtual address vaddr of d. Returns 0;
 * -ENOENT when no FDE covers vaddr (neither through a usable
 * .eh_frame_hdr nor in .debug_frame); -ENOTSUP when the row holds a rule
 * struct cfi_row cannot express (*row then holds only the signal mark,
 * which names a restorer's caller); -EINVAL when the CFI is malformed.
 * Otherwise *row is only written on success. The first miss in
 * .eh_frame of an object loads its .debug_frame (and maybe its debug
 * file): slow, once.
 */
int cfi_row_at(struct dso *d, uint64_t vaddr, struct cfi_row *row);

/*
 * The range [*start, *end) of ELF vaddrs the FDE covering vaddr covers:
 * the function holding vaddr, for a compiled function (its .cold part
 * has an FDE of its own). From .eh_frame, else .debug_frame, as
 * cfi_row_at() finds them. 0, -ENOENT, or -EINVAL (malformed CFI).
 */
int cfi_fde_range(struct dso *d, uint64_t vaddr, uint64_t *start,
		  uint64_t *end);

/* A .debug_frame FDE, for a DWARF reader of its own (libunwind's). */
struct cfi_fde {
	uint64_t off;		/* of the FDE in the section */
	uint64_t start, end;	/* ELF vaddrs covered, end exclusive */
	bool plain;		/* CIE version 1 or 3, no DWARF expression,
				 * the whole program parses */
};

/*
 * The .debug_frame FDE of d covering vaddr, and the section (*df, owned
 * by d). 0, or -ENOENT.
 */
int cfi_debug_frame_fde(struct dso *d, uint64_t vaddr,
			struct dso_debug_frame *df, struct cfi_fde *fde);

/*
 * cfi_row_at() over the bytes of a .debug_frame section alone (its
 * table built for the call): for tests and fuzzing.
 */
int cfi_debug_frame_row(const uint8_t *data, size_t size, uint64_t vaddr,
			struct cfi_row *row);

#endif
