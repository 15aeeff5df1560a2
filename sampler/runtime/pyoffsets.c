// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pyoffsets.c - the CPython layouts python.c reads, per minor version.
 *
 * 3.11: offsetof() of the fields in the 3.11 headers (Py_BUILD_CORE,
 * internal/pycore_runtime.h, pycore_interp.h, pycore_frame.h, cpython/
 * code.h), printed by a program compiled against Debian's python3.11-dev
 * on x86-64. The layout is part of 3.11's ABI: it does not change
 * between its patch releases.
 *
 * 3.12: printed by gdb (ptype/o, &((T *)0)->field) from the DWARF of a
 * pyenv build of 3.12.1's libpython3.12.so, x86-64, checked against
 * 3.12's headers. Its frames are 3.11's in another order; each entry into
 * _PyEval_EvalFrameDefault pushes a shim frame (owner
 * FRAME_OWNED_BY_CSTACK, 3) after the first frame it runs. The GIL is the
 * main interpreter's own (_PyRuntime._main_interpreter._gil): its
 * last_holder, held while locked. cframe->current_frame is at 0.
 *
 * 3.13: not in the table; its runtime publishes _Py_DebugOffsets at the
 * start of _PyRuntime (cookie "xdebugpy", the version, then the offsets
 * of its runtime, interpreter, thread, frame, code and str objects),
 * parsed by pyoffsets_parse(): 3.12's frame model, but no cframe (the
 * thread state points at its current frame) and the frame's code as
 * f_executable, its instr_ptr the instruction being run. Positions
 * inside _Py_DebugOffsets are 3.13's (ptype/o of a 3.13.0 build); other
 * versions of it are refused.
 *
 * 3.8, 3.9, 3.10: printed by gdb (ptype/o struct _frame, PyCodeObject,
 * struct _ts, &((struct pyruntimestate *)0)->ceval.gil.last_holder...)
 * from the DWARF of pyenv builds of 3.8.18, 3.9.18 and 3.10.13
 * (libpython3.X.so.1.0, x86-64). Frames are heap PyFrameObjects linked
 * by f_back, the thread state's frame the innermost, each run by its own
 * call of _PyEval_EvalFrameDefault; f_lasti an int; no co_qualname (the
 * name stands for it); the thread known by its pthread_t (thread_id).
 * The GIL is _PyRuntime.ceval.gil: last_holder, held while locked. 3.9
 * and 3.10 share the runtime's layout; 3.10's frame lost f_stacktop.
 *
 * Other versions are left out until their layout can be checked the same
 * way.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "sampler/bytes.h"
#include "sampler/runtime/pyoffsets.h"

#define OLD(m, gil, instr, table) { \
		.minor = (m), \
		.entry = PY_ENTRY_EVERY, \
		.lines = (table), \
		.fr_lasti = true, \
		.ts_pthread = true, \
		.rt_interp_head = 0x20, \
		.rt_gil_holder = (gil), \
		.rt_gil_locked = (gil) + 8, \
		.is_next = 0, \
		.is_threads_head = 8, \
		.ts_next = 8, \
		.ts_native_tid = 176,	/* thread_id */ \
		.ts_size = 264, \
		.cf_current_frame = 24,	/* the thread state's frame */ \
		.no_cframe = true, \
		.fr_code = 32, \
		.fr_previous = 24,	/* f_back */ \
		.fr_instr = (instr),	/* f_lasti */ \
		.fr_is_entry = 24,	/* none: every frame is one */ \
		.fr_size = (instr) + 8, \
		.co_filename = 104, \
		.co_name = 112, \
		.co_qualname = 112,	/* none: co_name */ \
		.co_linetable = 120,	/* co_lnotab, co_linetable */ \
		.co_firstlineno = 40, \
		.co_size = 128, \
		.ob_size = 16, \
		.bytes_data = 32, \
		.str_length = 16, \
		.str_state = 32, \
		.str_ascii_data = 48, \
		.str_compact_data = 72, \
	}

static const struct py_offsets table[] = {
	OLD(8, 0x488, 104, PY_LINES_LNOTAB),
	OLD(9, 0x168, 104, PY_LINES_LNOTAB),
	OLD(10, 0x168, 96, PY_LINES_310),
	{
		.minor = 11,
		.entry = PY_ENTRY_IS_ENTRY,
		.lines = PY_LINES_311,
		.rt_interp_head = 40,
		.rt_gil_holder = 576,
		.is_next = 0,
		.is_threads_head = 16,
		.ts_next = 8,
		.ts_cframe = 56,
		.ts_native_tid = 160,
		.ts_size = 168,
		.cf_current_frame = 8,
		.fr_code = 32,
		.fr_previous = 48,
		.fr_instr = 56,
		.fr_is_entry = 68,
		.fr_size = 72,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firstlineno = 72,
		.co_code = 184,
		.co_size = 144,
		.ob_size = 16,
		.bytes_data = 32,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 48,
		.str_compact_data = 72,
	},
	{
		.minor = 12,
		.entry = PY_ENTRY_SHIM,
		.lines = PY_LINES_311,
		.rt_interp_head = 40,
		/* _main_interpreter (0x12a68) + _gil (0x410) + 8, + 16 */
		.rt_gil_holder = 0x12a68 + 0x410 + 8,
		.rt_gil_locked = 0x12a68 + 0x410 + 16,
		.is_next = 0,
		.is_threads_head = 72,
		.ts_next = 8,
		.ts_cframe = 56,
		.ts_native_tid = 144,
		.ts_size = 288,
		.cf_current_frame = 0,
		.fr_code = 0,
		.fr_previous = 8,
		.fr_instr = 56,
		.fr_is_entry = 70,	/* owner */
		.fr_size = 72,
		.fr_shim_owner = 3,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firstlineno = 68,
		.co_code = 192,
		.co_size = 144,
		.ob_size = 16,
		.bytes_data = 32,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 40,
		.str_compact_data = 56,
	},
};

const struct py_offsets *pyoffsets_find(unsigned minor)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].minor == minor)
			return &table[i];
	return NULL;
}

/* Positions in 3.13's _Py_DebugOffsets */
enum {
	DO_VERSION = 8, DO_FREE_THREADED = 16,
	DO_INTERPRETERS_HEAD = 40,
	DO_IS_NEXT = 64, DO_IS_THREADS_HEAD = 72,
	DO_IS_GIL_LOCKED = 136, DO_IS_GIL_HOLDER = 144,
	DO_TS_SIZE = 152, DO_TS_NEXT = 168, DO_TS_CURRENT_FRAME = 184,
	DO_TS_NATIVE_TID = 200,
	DO_FR_SIZE = 224, DO_FR_PREVIOUS = 232, DO_FR_EXECUTABLE = 240,
	DO_FR_INSTR_PTR = 248, DO_FR_OWNER = 264,
	DO_CO_FILENAME = 280, DO_CO_NAME = 288, DO_CO_QUALNAME = 296,
	DO_CO_LINETABLE = 304, DO_CO_FIRSTLINENO = 312,
	DO_CO_CODE_ADAPTIVE = 344,
	DO_BYTES_OB_SIZE = 520, DO_BYTES_OB_SVAL = 528,
	DO_STR_STATE = 544, DO_STR_LENGTH = 552, DO_STR_ASCII_SIZE = 560,
};

#define FRAME_OWNED_BY_CSTACK 3	/* 3.13's pycore_frame.h */
#define MAX_OFF 0x100000	/* of any field: a sanity bound */

static int check_header(const uint8_t *buf, size_t len)
{
	uint64_t v;

	if (len < PY_DEBUG_OFFSETS_LEN || memcmp(buf, "xdebugpy", 8))
		return -ENOTSUP;
	v = ld_u64(buf, DO_VERSION);
	if (v >> 24 != 3 || ((v >> 16) & 0xff) != 13)
		return -ENOTSUP;
	return 0;
}

int pyoffsets_interp_head(const uint8_t *buf, size_t len, uint64_t *off)
{
	if (check_header(buf, len))
		return -ENOTSUP;
	*off = ld_u64(buf, DO_INTERPRETERS_HEAD);
	return *off < MAX_OFF ? 0 : -ENOTSUP;
}

int pyoffsets_parse(const uint8_t *buf, size_t len, uint64_t main_interp,
		    struct py_offsets *out, char *why, size_t size)
{
	static const unsigned pos[] = {
		DO_INTERPRETERS_HEAD, DO_IS_NEXT, DO_IS_THREADS_HEAD,
		DO_IS_GIL_LOCKED, DO_IS_GIL_HOLDER, DO_TS_SIZE, DO_TS_NEXT,
		DO_TS_CURRENT_FRAME, DO_TS_NATIVE_TID, DO_FR_SIZE,
		DO_FR_PREVIOUS, DO_FR_EXECUTABLE, DO_FR_INSTR_PTR,
		DO_FR_OWNER, DO_CO_FILENAME, DO_CO_NAME, DO_CO_QUALNAME,
		DO_CO_LINETABLE, DO_CO_FIRSTLINENO, DO_CO_CODE_ADAPTIVE,
		DO_BYTES_OB_SIZE, DO_BYTES_OB_SVAL, DO_STR_STATE,
		DO_STR_LENGTH, DO_STR_ASCII_SIZE,
	};
	uint32_t co_max = 0;

	if (check_header(buf, len)) {
		snprintf(why, size, "no _Py_DebugOffsets of 3.13 at the start "
			 "of _PyRuntime");
		return -ENOTSUP;
	}
	if (ld_u64(buf, DO_FREE_THREADED)) {
		snprintf(why, size, "a free-threaded build");
		return -ENOTSUP;
	}
	for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++)
		if (ld_u64(buf, pos[i]) >= MAX_OFF) {
			snprintf(why, size, "_Py_DebugOffsets out of range");
			return -ENOTSUP;
		}
	if (main_interp >= MAX_OFF) {
		snprintf(why, size, "main interpreter not in _PyRuntime");
		return -ENOTSUP;
	}
	*out = (struct py_offsets){
		.minor = 13,
		.entry = PY_ENTRY_SHIM,
		.rt_interp_head = ld_u64(buf, DO_INTERPRETERS_HEAD),
		.rt_gil_holder = main_interp + ld_u64(buf, DO_IS_GIL_HOLDER),
		.rt_gil_locked = main_interp + ld_u64(buf, DO_IS_GIL_LOCKED),
		.is_next = ld_u64(buf, DO_IS_NEXT),
		.is_threads_head = ld_u64(buf, DO_IS_THREADS_HEAD),
		.ts_next = ld_u64(buf, DO_TS_NEXT),
		.ts_native_tid = ld_u64(buf, DO_TS_NATIVE_TID),
		.ts_size = ld_u64(buf, DO_TS_SIZE),
		.cf_current_frame = ld_u64(buf, DO_TS_CURRENT_FRAME),
		.no_cframe = true,
		.fr_code = ld_u64(buf, DO_FR_EXECUTABLE),
		.fr_previous = ld_u64(buf, DO_FR_PREVIOUS),
		.fr_instr = ld_u64(buf, DO_FR_INSTR_PTR),
		.fr_is_entry = ld_u64(buf, DO_FR_OWNER),
		.fr_shim_owner = FRAME_OWNED_BY_CSTACK,
		.co_filename = ld_u64(buf, DO_CO_FILENAME),
		.co_name = ld_u64(buf, DO_CO_NAME),
		.co_qualname = ld_u64(buf, DO_CO_QUALNAME),
		.co_linetable = ld_u64(buf, DO_CO_LINETABLE),
		.co_firstlineno = ld_u64(buf, DO_CO_FIRSTLINENO),
		.co_code = ld_u64(buf, DO_CO_CODE_ADAPTIVE),
		.ob_size = ld_u64(buf, DO_BYTES_OB_SIZE),
		.bytes_data = ld_u64(buf, DO_BYTES_OB_SVAL),
		.str_length = ld_u64(buf, DO_STR_LENGTH),
		.str_state = ld_u64(buf, DO_STR_STATE),
		.str_ascii_data = ld_u64(buf, DO_STR_ASCII_SIZE),
		/* PyCompactUnicodeObject: utf8_length and utf8 after */
		.str_compact_data = ld_u64(buf, DO_STR_ASCII_SIZE) + 16,
	};
	/* python.c reads a frame's fr_size bytes into 128, a str's header
	 * into 80: the fields must be inside them */
	out->fr_size = out->fr_is_entry + 1;
	if (out->fr_code + 8 > out->fr_size)
		out->fr_size = out->fr_code + 8;
	if (out->fr_previous + 8 > out->fr_size)
		out->fr_size = out->fr_previous + 8;
	if (out->fr_instr + 8 > out->fr_size)
		out->fr_size = out->fr_instr + 8;
	co_max = out->co_filename;
	co_max = out->co_name > co_max ? out->co_name : co_max;
	co_max = out->co_qualname > co_max ? out->co_qualname : co_max;
	co_max = out->co_linetable > co_max ? out->co_linetable : co_max;
	co_max = out->co_firstlineno > co_max ? out->co_firstlineno : co_max;
	out->co_size = co_max + 8;
	if (out->fr_size > 128 || out->str_compact_data > 80 ||
	    out->co_size > 1024) {
		snprintf(why, size, "_Py_DebugOffsets past what is read");
		return -ENOTSUP;
	}
	return 0;
}

/* Positions in 3.13's _Py_DebugOffsets of the objects pythreads.c reads */
enum {
	DO_IS_IMPORTS_MODULES = 88, DO_OBJECT_SIZE = 352,
	DO_TYPE_FLAGS = 392, DO_DICT_KEYS = 456, DO_DICT_VALUES = 464,
	DO_LONG_TAG = 496, DO_LONG_DIGITS = 504,
};

int pyoffsets_objects(const uint8_t *buf, size_t len,
		      struct py_obj_offsets *out)
{
	static const unsigned pos[] = {
		DO_IS_IMPORTS_MODULES, DO_OBJECT_SIZE, DO_TYPE_FLAGS,
		DO_DICT_KEYS, DO_DICT_VALUES, DO_LONG_TAG, DO_LONG_DIGITS,
	};

	if (check_header(buf, len) || ld_u64(buf, DO_FREE_THREADED))
		return -ENOTSUP;
	for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++)
		if (ld_u64(buf, pos[i]) >= MAX_OFF)
			return -ENOTSUP;
	*out = (struct py_obj_offsets){
		.is_modules = ld_u64(buf, DO_IS_IMPORTS_MODULES),
		.object_size = ld_u64(buf, DO_OBJECT_SIZE),
		.tp_flags = ld_u64(buf, DO_TYPE_FLAGS),
		.dict_keys = ld_u64(buf, DO_DICT_KEYS),
		.dict_values = ld_u64(buf, DO_DICT_VALUES),
		.long_tag = ld_u64(buf, DO_LONG_TAG),
		.long_digits = ld_u64(buf, DO_LONG_DIGITS),
	};
	return 0;
}
