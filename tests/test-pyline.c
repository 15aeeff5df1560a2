// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-pyline.c - CPython's line tables (sampler/runtime/pyline.h): 3.11
 * location tables, 3.10 line tables and 3.8/3.9 lnotabs, against the
 * lines the interpreter itself gives each instruction (3.11's:
 * code.co_positions() of Debian's python3.11, for the vectors below):
 * a plain loop, a function with no-location instructions, backward and
 * long-form line deltas, and one starting 300 lines down.
 */
#include <stdbool.h>
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

/*
 * The older tables, printed by the pyenv builds of 3.8.18, 3.9.18 and
 * 3.10.13 (co_lnotab with dis.findlinestarts(): a line per byte offset;
 * co_linetable with co_lines(): a line per instruction, 0 for None)
 * from light() and tricky() above (one line further down), far() 300
 * lines below, and jumpy(), whose line jumps by 201 (more than a signed
 * byte) and back.
 */
static const struct vector vectors_38[] = {
	{ "light", 2, 8, (const uint8_t[]){ 0, 1, 4, 1, 12, 1, 10, 1 },
	  30, (const int32_t[]){ 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4,
		  4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6 } },
	{ "tricky", 9, 26, (const uint8_t[]){ 0, 1, 2, 1, 10, 1, 6, 1,
		  2, 255, 20, 3, 14, 2, 2, 1, 2, 255, 2, 255, 8, 3, 4, 1, 10, 1 },
	  86, (const int32_t[]){ 10, 10, 11, 11, 11, 11, 11, 11, 11,
		  11, 11, 11, 12, 12, 12, 12, 12, 12, 13, 13, 12, 12, 12, 12, 12, 12, 12,
		  12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 15, 15, 15, 15, 15,
		  15, 15, 15, 15, 15, 15, 15, 15, 15, 17, 17, 18, 18, 17, 17, 16, 16, 16,
		  16, 16, 16, 16, 16, 19, 19, 19, 19, 20, 20, 20, 20, 20, 20, 20, 20, 20,
		  20, 21, 21, 21, 21 } },
	{ "far", 323, 0, (const uint8_t[]){ 0 },
	  4, (const int32_t[]){ 323, 323, 323, 323 } },
	{ "jumpy", 326, 12, (const uint8_t[]){ 0, 1, 4, 1, 4, 127, 0,
		  74, 4, 1, 4, 4 },
	  20, (const int32_t[]){ 327, 327, 327, 327, 328, 328, 328,
		  328, 529, 529, 529, 529, 530, 530, 530, 530, 534, 534, 534, 534 } },
};

static const struct vector vectors_39[] = {
	{ "light", 2, 8, (const uint8_t[]){ 0, 1, 4, 1, 12, 1, 10, 1 },
	  30, (const int32_t[]){ 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4,
		  4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6 } },
	{ "tricky", 9, 26, (const uint8_t[]){ 0, 1, 2, 1, 10, 1, 6, 1,
		  2, 255, 40, 3, 12, 2, 2, 1, 2, 255, 2, 255, 8, 3, 4, 1, 10, 1 },
	  104, (const int32_t[]){ 10, 10, 11, 11, 11, 11, 11, 11, 11,
		  11, 11, 11, 12, 12, 12, 12, 12, 12, 13, 13, 12, 12, 12, 12, 12, 12, 12,
		  12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
		  12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 15, 15, 15,
		  15, 15, 15, 15, 15, 15, 15, 15, 15, 17, 17, 18, 18, 17, 17, 16, 16, 16,
		  16, 16, 16, 16, 16, 19, 19, 19, 19, 20, 20, 20, 20, 20, 20, 20, 20, 20,
		  20, 21, 21, 21, 21 } },
	{ "far", 323, 0, (const uint8_t[]){ 0 },
	  4, (const int32_t[]){ 323, 323, 323, 323 } },
	{ "jumpy", 326, 12, (const uint8_t[]){ 0, 1, 4, 1, 4, 127, 0,
		  74, 4, 1, 4, 4 },
	  20, (const int32_t[]){ 327, 327, 327, 327, 328, 328, 328,
		  328, 529, 529, 529, 529, 530, 530, 530, 530, 534, 534, 534, 534 } },
};

static const struct vector vectors_310[] = {
	{ "light", 2, 8, (const uint8_t[]){ 4, 1, 12, 1, 10, 1, 4, 1 },
	  15, (const int32_t[]){ 3, 3, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5,
		  6, 6 } },
	{ "tricky", 9, 34, (const uint8_t[]){ 2, 1, 10, 1, 6, 1, 2, 1,
		  8, 255, 28, 255, 4, 128, 12, 4, 2, 2, 2, 1, 2, 255, 6, 255, 2, 255, 4,
		  4, 8, 1, 4, 255, 4, 2 },
	  53, (const int32_t[]){ 10, 11, 11, 11, 11, 11, 12, 12, 12,
		  13, 12, 12, 12, 12, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11,
		  11, 0, 0, 15, 15, 15, 15, 15, 15, 17, 18, 17, 16, 16, 16, 15, 19, 19,
		  20, 20, 20, 20, 19, 19, 21, 21 } },
	{ "far", 323, 2, (const uint8_t[]){ 4, 0 },
	  2, (const int32_t[]){ 323, 323 } },
	{ "jumpy", 326, 12, (const uint8_t[]){ 4, 1, 4, 1, 0, 127, 4,
		  74, 4, 1, 4, 4 },
	  10, (const int32_t[]){ 327, 327, 328, 328, 529, 529, 530,
		  530, 534, 534 } },
};

typedef int32_t (*line_fn)(const uint8_t *, size_t, int32_t, int64_t);

static void check_old(const char *ver, const struct vector *v, size_t n,
		      line_fn fn, bool ends)
{
	for (size_t k = 0; k < n; k++) {
		const struct vector *t = &v[k];

		for (int64_t i = 0; i < t->units; i++)
			CHECK(fn(t->table, t->len, t->first, i) == t->lines[i],
			      "%s %s: %lld: line %d, not %d", ver, t->name,
			      (long long)i,
			      (int)fn(t->table, t->len, t->first, i),
			      (int)t->lines[i]);
		CHECK(fn(t->table, t->len, t->first, -1) == t->first,
		      "%s %s: lasti -1", ver, t->name);
		CHECK(fn(t->table, t->len, t->first, -2) == -1,
		      "%s %s: before the start", ver, t->name);
		/* 3.10's table ends; an lnotab's last line goes on */
		CHECK(fn(t->table, t->len, t->first, t->units) ==
		      (ends ? -1 : t->lines[t->units - 1]),
		      "%s %s: past the end", ver, t->name);
	}
}

int main(void)
{
	check_old("3.8", vectors_38, sizeof(vectors_38) / sizeof(*vectors_38),
		  pyline_lnotab, false);
	check_old("3.9", vectors_39, sizeof(vectors_39) / sizeof(*vectors_39),
		  pyline_lnotab, false);
	check_old("3.10", vectors_310,
		  sizeof(vectors_310) / sizeof(*vectors_310), pyline_310, true);
	CHECK(pyline_310(vectors_310[0].table, 3, 2, 100) == -1,
	      "3.10 truncated");

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
