// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-pyoffsets.c - the CPython layouts (sampler/runtime/pyoffsets.h):
 * 3.13's _Py_DebugOffsets parsed from the values a 3.13.0 build
 * (pyenv, x86-64) carries at the start of its _PyRuntime (printed by gdb,
 * print/x _PyRuntime.debug_offsets), and refused when its cookie, its
 * version, its build (free-threaded) or its values are not what the
 * reader knows; the 3.8-3.12 tables hold what python.c reads, 3.8-3.10
 * with their own frame model; the object offsets pythreads.c takes from
 * 3.13's _Py_DebugOffsets.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "sampler/runtime/pyoffsets.h"

static void put(uint8_t *buf, unsigned off, uint64_t v)
{
	memcpy(buf + off, &v, sizeof(v));
}

/* 3.13.0's _Py_DebugOffsets, the fields the reader uses and some not */
static void debug_offsets_3130(uint8_t *b)
{
	static const struct { unsigned off; uint64_t v; } f[] = {
		{ 8, 0x30d00f0 }, { 16, 0 },
		{ 24, 0x452b8 }, { 32, 0x260 }, { 40, 0x278 },
		{ 48, 0x2f998 }, { 56, 0x1c68 }, { 64, 0x1c60 },
		{ 72, 0x1cb0 }, { 112, 0x10 }, { 120, 0x1e48 },
		{ 128, 0 }, { 136, 0x1e58 }, { 144, 0x1e50 },
		{ 152, 0x130 }, { 160, 0 }, { 168, 8 }, { 176, 0x10 },
		{ 184, 0x48 }, { 192, 0x98 }, { 200, 0xa0 },
		{ 224, 0x50 }, { 232, 8 }, { 240, 0 }, { 248, 0x38 },
		{ 256, 0x48 }, { 264, 0x46 },
		{ 272, 0xd0 }, { 280, 0x70 }, { 288, 0x78 }, { 296, 0x80 },
		{ 304, 0x88 }, { 312, 0x44 }, { 344, 0xc8 },
		{ 512, 0x28 }, { 520, 0x10 }, { 528, 0x20 },
		{ 536, 0x40 }, { 544, 0x20 }, { 552, 0x10 }, { 560, 0x28 },
	};

	memset(b, 0, PY_DEBUG_OFFSETS_LEN);
	memcpy(b, "xdebugpy", 8);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		put(b, f[i].off, f[i].v);
}

static void test_parse_313(void)
{
	uint8_t b[PY_DEBUG_OFFSETS_LEN];
	struct py_offsets o;
	char why[100] = "";
	uint64_t head;

	debug_offsets_3130(b);
	CHECK(!pyoffsets_interp_head(b, sizeof(b), &head) && head == 0x278,
	      "head %llx", (unsigned long long)head);
	/* the main interpreter at 0x15920 in _PyRuntime, as in 3.13.0 */
	CHECK(!pyoffsets_parse(b, sizeof(b), 0x15920, &o, why, sizeof(why)),
	      "%s", why);
	CHECK(o.minor == 13 && o.entry == PY_ENTRY_SHIM && o.no_cframe, "kind");
	CHECK(o.rt_interp_head == 0x278 && o.is_next == 0x1c60 &&
	      o.is_threads_head == 0x1cb0, "interpreters");
	CHECK(o.rt_gil_holder == 0x15920 + 0x1e50 &&
	      o.rt_gil_locked == 0x15920 + 0x1e58, "gil %x %x",
	      o.rt_gil_holder, o.rt_gil_locked);
	CHECK(o.ts_next == 8 && o.ts_native_tid == 0xa0 &&
	      o.cf_current_frame == 0x48, "thread state");
	CHECK(o.fr_code == 0 && o.fr_previous == 8 && o.fr_instr == 0x38 &&
	      o.fr_is_entry == 0x46 && o.fr_shim_owner == 3 &&
	      o.fr_size == 0x47, "frame %u", o.fr_size);
	CHECK(o.co_filename == 0x70 && o.co_name == 0x78 &&
	      o.co_qualname == 0x80 && o.co_linetable == 0x88 &&
	      o.co_firstlineno == 0x44 && o.co_code == 0xc8 &&
	      o.co_size == 0x90, "code %u", o.co_size);
	CHECK(o.ob_size == 0x10 && o.bytes_data == 0x20, "bytes");
	CHECK(o.str_length == 0x10 && o.str_state == 0x20 &&
	      o.str_ascii_data == 0x28 && o.str_compact_data == 0x38, "str");
}

static void test_refused(void)
{
	uint8_t b[PY_DEBUG_OFFSETS_LEN];
	struct py_offsets o;
	char why[100];
	uint64_t head;

	debug_offsets_3130(b);
	b[0] = 'y';
	CHECK(pyoffsets_parse(b, sizeof(b), 0x15920, &o, why, sizeof(why)) ==
	      -ENOTSUP && strstr(why, "_Py_DebugOffsets"), "cookie: %s", why);
	CHECK(pyoffsets_interp_head(b, sizeof(b), &head) == -ENOTSUP,
	      "cookie head");
	debug_offsets_3130(b);
	put(b, 8, 0x30e00a0);	/* 3.14: another _Py_DebugOffsets */
	CHECK(pyoffsets_parse(b, sizeof(b), 0x15920, &o, why, sizeof(why)) ==
	      -ENOTSUP, "3.14");
	debug_offsets_3130(b);
	put(b, 16, 1);
	CHECK(pyoffsets_parse(b, sizeof(b), 0x15920, &o, why, sizeof(why)) ==
	      -ENOTSUP && strstr(why, "free-threaded"), "free: %s", why);
	debug_offsets_3130(b);
	put(b, 264, 0x4000);	/* an owner past the frame read */
	CHECK(pyoffsets_parse(b, sizeof(b), 0x15920, &o, why, sizeof(why)) ==
	      -ENOTSUP, "frame too big");
	debug_offsets_3130(b);
	put(b, 304, 1ull << 40);
	CHECK(pyoffsets_parse(b, sizeof(b), 0x15920, &o, why, sizeof(why)) ==
	      -ENOTSUP, "out of range");
	debug_offsets_3130(b);
	CHECK(pyoffsets_parse(b, sizeof(b) - 1, 0x15920, &o, why,
			      sizeof(why)) == -ENOTSUP, "short");
	CHECK(pyoffsets_parse(b, sizeof(b), 1ull << 32, &o, why,
			      sizeof(why)) == -ENOTSUP, "interpreter");
}

/* 3.13.0's _Py_DebugOffsets with the object fields pythreads.c reads
 * (print/x _PyRuntime.debug_offsets of the same build) */
static void debug_offsets_objects_3130(uint8_t *b)
{
	debug_offsets_3130(b);
	put(b, 88, 0x1de8);	/* interpreter_state.imports_modules */
	put(b, 352, 0x10);	/* pyobject.size */
	put(b, 392, 0xa8);	/* type_object.tp_flags */
	put(b, 456, 0x20);	/* dict_object.ma_keys */
	put(b, 464, 0x28);	/* dict_object.ma_values */
	put(b, 496, 0x10);	/* long_object.lv_tag */
	put(b, 504, 0x18);	/* long_object.ob_digit */
}

static void test_objects_313(void)
{
	uint8_t b[PY_DEBUG_OFFSETS_LEN];
	struct py_obj_offsets o;

	debug_offsets_objects_3130(b);
	CHECK(!pyoffsets_objects(b, sizeof(b), &o), "objects");
	CHECK(o.is_modules == 0x1de8 && o.object_size == 0x10 &&
	      o.tp_flags == 0xa8 && o.dict_keys == 0x20 &&
	      o.dict_values == 0x28 && o.long_tag == 0x10 &&
	      o.long_digits == 0x18, "objects %x %x", o.is_modules,
	      o.tp_flags);
	b[0] = 'y';
	CHECK(pyoffsets_objects(b, sizeof(b), &o) == -ENOTSUP, "cookie");
	debug_offsets_objects_3130(b);
	put(b, 8, 0x30e00a0);	/* 3.14 */
	CHECK(pyoffsets_objects(b, sizeof(b), &o) == -ENOTSUP, "3.14");
	debug_offsets_objects_3130(b);
	put(b, 16, 1);
	CHECK(pyoffsets_objects(b, sizeof(b), &o) == -ENOTSUP, "free");
	debug_offsets_objects_3130(b);
	put(b, 88, 1ull << 40);
	CHECK(pyoffsets_objects(b, sizeof(b), &o) == -ENOTSUP, "range");
	debug_offsets_objects_3130(b);
	CHECK(pyoffsets_objects(b, sizeof(b) - 1, &o) == -ENOTSUP, "short");
}

/* What python.c reads of a frame (fr_size bytes into 128) and of a code
 * object (co_size) holds every field it takes from them. */
static void test_tables(void)
{
	CHECK(!pyoffsets_find(7), "3.7 has no table");
	for (unsigned minor = 8; minor <= 14; minor++) {
		const struct py_offsets *o = pyoffsets_find(minor);

		if (minor > 12) {
			CHECK(!o, "3.%u has no table", minor);
			continue;
		}
		CHECK(o && o->minor == minor, "3.%u", minor);
		if (!o)
			continue;
		CHECK(o->fr_size <= 128 && o->fr_code + 8 <= o->fr_size &&
		      o->fr_previous + 8 <= o->fr_size &&
		      o->fr_instr + 8 <= o->fr_size &&
		      o->fr_is_entry < o->fr_size, "3.%u frame", minor);
		CHECK(o->co_filename + 8 <= o->co_size &&
		      o->co_linetable + 8 <= o->co_size &&
		      o->co_firstlineno + 4 <= o->co_size, "3.%u code", minor);
		CHECK(o->str_state < o->str_compact_data &&
		      o->str_compact_data <= 80, "3.%u str", minor);
		CHECK((o->entry == PY_ENTRY_SHIM) == (minor == 12) &&
		      (o->entry == PY_ENTRY_EVERY) == (minor <= 10) &&
		      o->no_cframe == (minor <= 10), "3.%u entry", minor);
		/* 3.8-3.10: an int f_lasti, a pthread_t, their line tables */
		CHECK(o->fr_lasti == (minor <= 10) &&
		      o->ts_pthread == (minor <= 10) &&
		      o->lines == (minor <= 9 ? PY_LINES_LNOTAB :
				   minor == 10 ? PY_LINES_310 : PY_LINES_311),
		      "3.%u frames", minor);
	}
}

int main(void)
{
	test_parse_313();
	test_refused();
	test_tables();
	test_objects_313();
	if (failures)
		return 1;
	printf("pyoffsets: ok\n");
	return 0;
}
