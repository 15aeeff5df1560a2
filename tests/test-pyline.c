// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-pyline.c - CPython 3.11 location tables (sampler/runtime/pyline.h)
 * against the lines the interpreter itself gives each instruction
 * (code.co_positions() of Debian's python3.11, for the vectors below):
 * a plain loop, a function with no-location instructions, backward and
 * long-form line deltas, and one starting 300 lines down.
 */
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "sampler/runtime/pyline.h"

struct vector {
	const char *name;
	int32_t first;
	size_t len;
	const uint8_t *table;
	int64_t units;
	const int32_t *lines;	/* per code unit; 0: no line */
};

/* Printed by python3.11 from:
 *
 *   def light(n):                 def tricky(a, b):
 *       x = 0                         try:
 *       for i in range(n):                with open(a) as f:
 *           x ^= i                            y = [v
 *       return x                                   for v in f
 *                                                  if v]
 *                                     except OSError:
 *                                         y = (
 *                                             b +
 *                                             1)
 *                                     while a:
 *                                         a -= 1
 *                                     return y
 *
 * and "def far(): return 1" 300 lines further down.
 */
static const struct vector vectors[] = {
	{ "light", 2, 44, (const uint8_t[]){
		  128, 0, 216, 8, 9, 128, 65, 221, 13, 18, 144, 49, 137,
		  88, 140, 88, 240, 0, 1, 5, 15, 240, 0, 1, 5, 15, 136, 1,
		  216, 8, 9, 136, 81, 137, 6, 136, 1, 136, 1, 216, 11, 12,
		  128, 72
	  },
	  28, (const int32_t[]){
		  2, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
		  4, 5, 5, 5, 5, 5, 5, 6, 6
	  } },
	{ "tricky", 8, 215, (const uint8_t[]){
		  128, 0, 240, 2, 8, 5, 15, 221, 13, 17, 144, 33, 137, 87,
		  140, 87, 240, 0, 3, 9, 23, 152, 1, 240, 2, 2, 17, 23,
		  240, 0, 2, 17, 23, 216, 26, 27, 240, 3, 2, 17, 23, 241,
		  0, 2, 17, 23, 244, 0, 2, 17, 23, 136, 65, 240, 3, 3, 9,
		  23, 240, 0, 3, 9, 23, 240, 0, 3, 9, 23, 241, 0, 3, 9,
		  23, 244, 0, 3, 9, 23, 240, 0, 3, 9, 23, 240, 0, 3, 9,
		  23, 240, 0, 3, 9, 23, 240, 0, 3, 9, 23, 240, 0, 3, 9,
		  23, 240, 0, 3, 9, 23, 248, 248, 248, 240, 0, 3, 9, 23,
		  240, 0, 3, 9, 23, 240, 0, 3, 9, 23, 240, 0, 3, 9, 23,
		  248, 248, 245, 8, 0, 12, 19, 240, 0, 3, 5, 15, 240, 0,
		  3, 5, 15, 240, 0, 3, 5, 15, 224, 12, 13, 216, 12, 13,
		  241, 3, 1, 13, 14, 240, 3, 0, 9, 10, 136, 1, 136, 1,
		  240, 3, 3, 5, 15, 248, 248, 248, 240, 8, 0, 11, 12, 240,
		  0, 1, 5, 15, 216, 8, 9, 136, 81, 137, 6, 136, 1, 240, 3,
		  0, 11, 12, 240, 0, 1, 5, 15, 224, 11, 12, 128, 72
	  },
	  86, (const int32_t[]){
		  8, 9, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10,
		  10, 10, 10, 10, 11, 11, 12, 11, 11, 11, 11, 11, 11, 11,
		  11, 11, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10,
		  10, 10, 10, 10, 0, 0, 0, 10, 10, 10, 10, 0, 0, 14, 14,
		  14, 14, 14, 14, 14, 14, 14, 16, 17, 16, 16, 15, 15, 15,
		  14, 0, 0, 0, 18, 18, 19, 19, 19, 19, 19, 18, 18, 20, 20
	  } },
	{ "far", 322, 7, (const uint8_t[]){ 128, 0, 216, 11, 12, 136, 49 },
	  3, (const int32_t[]){ 322, 323, 323 } },
};

int main(void)
{
	for (size_t v = 0; v < sizeof(vectors) / sizeof(vectors[0]); v++) {
		const struct vector *t = &vectors[v];

		for (int64_t i = 0; i < t->units; i++)
			CHECK(pyline_311(t->table, t->len, t->first, i) ==
			      t->lines[i], "%s: unit %lld: line %d, not %d",
			      t->name, (long long)i,
			      (int)pyline_311(t->table, t->len, t->first, i),
			      (int)t->lines[i]);
		/* a frame not started is on its first line; past the end,
		 * before the start: none (a torn read) */
		CHECK(pyline_311(t->table, t->len, t->first, -1) == t->first,
		      "%s: lasti -1", t->name);
		CHECK(pyline_311(t->table, t->len, t->first, t->units) == -1,
		      "%s: past the end", t->name);
		CHECK(pyline_311(t->table, t->len, t->first, -2) == -1,
		      "%s: before the start", t->name);
	}
	/* a truncated table ends without reading past it */
	CHECK(pyline_311(vectors[0].table, 3, 2, 100) == -1, "truncated");
	CHECK(pyline_311(NULL, 0, 7, 0) == -1, "empty");
	if (failures)
		return 1;
	printf("pyline: ok\n");
	return 0;
}
