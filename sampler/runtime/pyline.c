// SPDX-License-Identifier: GPL-2.0-or-later
/* pyline.c - CPython 3.11 location tables -> line numbers. */
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
