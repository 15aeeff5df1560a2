/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gopclntab.h - a Go program's own function table (.gopclntab): function
 * names, file:line, inlined calls and stack frame sizes by program
 * counter, for Go binaries without DWARF or a symbol table (built with
 * -ldflags='-s -w', as Go programs ship). The Go version comes from
 * .go.buildinfo.
 *
 * Formats read: Go 1.16-1.17 (magic 0xfffffffa), 1.18-1.19 (0xfffffff0)
 * and 1.20 and later (0xfffffff1), 64-bit little-endian. Inlined frames
 * need the table's FUNCDATA_InlTree, which lives outside .gopclntab (in
 * go:func.*, found through the runtime's moduledata, 1.18 and later);
 * without it a pc in inlined code is named after the function that holds
 * the code, at the inlined line.
 *
 * Every offset of the table is checked against the section before it is
 * followed: a malformed table gives -EINVAL or -ENOENT, never a read
 * outside it. Strings returned point into the section bytes, which the
 * caller owns and must keep mapped while the table lives (the dso's
 * mmapped file). A table is immutable once built: any thread may use it.
 */
#ifndef PROFFS_GOPCLNTAB_H
#define PROFFS_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

#include <gelf.h>

struct gopcln;

/* What a table says of a function. Strings borrowed from the section. */
struct gopcln_func {
	uint64_t entry, end;	/* ELF vaddrs, end exclusive */
	const char *name;	/* as Go prints it: "main.main" */
	uint8_t funcid;		/* the runtime's funcID (0: normal) */
};

/* One frame of a pc, innermost first as in dso.h's struct dso_frame. */
struct gopcln_frame {
	const char *function;
	const char *file;	/* NULL when unknown */
	int line;		/* 0 when unknown */
};

/*
 * Parse a .gopclntab held in data (size bytes, borrowed: must outlive the
 * table). text_vaddr is the .text section's address, for tables whose
 * text start is 0 in the file (relocated at load). A table made here has
 * no inline trees (gopcln_from_elf() finds them). 0; -ENOEXEC for an
 * unknown magic or pointer size; -EINVAL for a malformed header;
 * -ENOMEM.
 */
int gopcln_new(const uint8_t *data, size_t size, uint64_t text_vaddr,
	       struct gopcln **out);
void gopcln_free(struct gopcln *g);

/*
 * Find .gopclntab (and .go.buildinfo, and the runtime's moduledata for
 * inline trees) in an ELF file mapped at map (map_size bytes, borrowed as
 * above) and parse it. -ENOENT when the file has no .gopclntab, else as
 * gopcln_new().
 */
int gopcln_from_elf(Elf *elf, const uint8_t *map, size_t map_size,
		    struct gopcln **out);

/* "go1.19.8" from .go.buildinfo, else the table's format ("go1.18+"). */
const char *gopcln_version(const struct gopcln *g);

/* The function holding vaddr. 0, or -ENOENT (outside every function,
 * or a malformed entry). */
int gopcln_func(const struct gopcln *g, uint64_t vaddr,
		struct gopcln_func *f);

/*
 * Frames of vaddr, innermost (inlined) first, the function holding the
 * code last; up to max, *n set to the count. The outermost is always
 * kept when max is short. 0, or -ENOENT (*n = 0).
 */
int gopcln_frames(const struct gopcln *g, uint64_t vaddr,
		  struct gopcln_frame *frames, int max, int *n);

/*
 * The stack pointer's distance below the function's entry value at
 * vaddr, in bytes, not counting the return address: the caller's frame
 * (CFA) is RSP + *delta + 8. 0, or -ENOENT.
 */
int gopcln_sp_delta(const struct gopcln *g, uint64_t vaddr, int32_t *delta);

/*
 * The largest of those distances in the function holding vaddr: its
 * frame in its body, where it calls others (Go code pushes nothing
 * between its prologue and epilogue). 0, or -ENOENT.
 */
int gopcln_frame_size(const struct gopcln *g, uint64_t vaddr,
		      int32_t *size);

#endif
