// SPDX-License-Identifier: GPL-2.0-or-later
/* pyline.c - CPython line tables (3.8-3.9 co_lnotab, 3.10 co_linetable,
 * 3.11+ location tables) -> line numbers. */
#include "sampler/runtime/pyline.h"

static unsigned varint(const uint8_t *t, size_t len, size_t *i)
{
	unsigned v = 0, shift = 0;

	while (*i < len && shift < 32) {
		uint8_t b = t[(*i)++];

		v |= (unsigned)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

/*
 * A 3.11 location table
 * (Objects/locations.md): entries of a first byte with bit 7 set, bits
 * 3-6 a code and bits 0-2 the length in code units minus one, followed
 * by bytes without bit 7. Codes 13 and 14 carry a signed varint line
 * delta, 10-12 mean a delta of code - 10, 15 no line, the others the
 * same line. 0 when unknown, -1 when lasti is past the table (a frame
 * read while it was being reused: its code and its instruction pointer
 * from two different calls).
 */
int32_t pyline_311(const uint8_t *t, size_t len, int32_t first,
		   int64_t lasti)
{
	int64_t line = first, pos = 0;
	size_t i = 0;

	if (lasti == -1)	/* the frame has not started */
		return first;
	if (lasti < 0)
		return -1;
	while (i < len) {
		uint8_t b = t[i++];
		unsigned code = (b >> 3) & 15;
		int64_t units = (b & 7) + 1;

		if (code == 13 || code == 14) {
			unsigned u = varint(t, len, &i);

			line += u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
		} else if (code >= 10 && code <= 12) {
			line += code - 10;
		}
		if (lasti < pos + units)
			return code == 15 ? 0 : (int32_t)line;
		pos += units;
		while (i < len && !(t[i] & 128))
			i++;
	}
	return -1;
}

/*
 * 3.8 and 3.9's co_lnotab (Objects/lnotab_notes.txt of those versions):
 * pairs of (bytecode offset increment, unsigned; line increment, signed
 * byte), walked as PyCode_Addr2Line() walks them: the line of the last
 * pair whose offset is not past lasti. lasti is a byte offset here, as
 * f_lasti is in those versions; a table gives every offset a line (the
 * last one's past its end).
 */
int32_t pyline_lnotab(const uint8_t *t, size_t len, int32_t first,
		      int64_t lasti)
{
	int64_t line = first, addr = 0;

	if (lasti < -1)
		return -1;
	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > lasti)
			break;
		line += (int8_t)t[i + 1];
	}
	return (int32_t)line;
}

/*
 * 3.10's co_linetable (PEP 626; Objects/lnotab_notes.txt of 3.10):
 * pairs of (length of the range in bytes, unsigned; line delta, signed
 * byte, -128 for "no line"), ranges one after another from offset 0,
 * each line the previous one's plus its delta (a "no line" range adds
 * nothing), as _PyCode_CheckLineNumber() walks them. lasti is the
 * instruction's index (f_lasti of 3.10: code units of 2 bytes). 0 for
 * no line, -1 past the table.
 */
int32_t pyline_310(const uint8_t *t, size_t len, int32_t first,
		   int64_t lasti)
{
	int64_t line = first, end = 0, addr = lasti * 2;

	if (lasti == -1)
		return first;
	if (lasti < 0)
		return -1;
	for (size_t i = 0; i + 1 < len; i += 2) {
		int8_t delta = (int8_t)t[i + 1];
		int64_t start = end;

		end += t[i];
		if (delta != -128)
			line += delta;
		if (addr >= start && addr < end)
			return delta == -128 ? 0 : (int32_t)line;
	}
	return -1;
}
