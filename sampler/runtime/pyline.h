/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pyline.h - line numbers from CPython's line tables, as the interpreter
 * computes them (PyCode_Addr2Line), for code objects read from outside.
 * Pure functions of the bytes given; no state, no allocation.
 */
#ifndef PROFFS_PYLINE_H
#define PROFFS_PYLINE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The line of code unit lasti (the instruction's index, 2-byte units,
 * -1 for a frame that has not run its first one: then first) in a 3.11
 * location table t of len bytes (co_linetable) of a code object whose
 * first line is first. 0 when the table gives the instruction no line;
 * -1 when lasti is outside the table.
 */
int32_t pyline_311(const uint8_t *t, size_t len, int32_t first,
		   int64_t lasti);

/* The same of 3.8 and 3.9's co_lnotab, lasti a byte offset (f_lasti of
 * those versions): every offset has a line (the last one's past the
 * end); -1 for lasti below -1. */
int32_t pyline_lnotab(const uint8_t *t, size_t len, int32_t first,
		      int64_t lasti);

/* The same of 3.10's co_linetable, lasti an instruction's index (2-byte
 * code units, as f_lasti of 3.10): 0 for an instruction with no line,
 * -1 when lasti is outside the table. */
int32_t pyline_310(const uint8_t *t, size_t len, int32_t first,
		   int64_t lasti);

#endif
