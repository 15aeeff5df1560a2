/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pyoffsets.h - where CPython keeps what a sampler reads from outside:
 * the field offsets of its runtime, interpreter, thread, frame, code,
 * bytes and str objects, per minor version.
 *
 * Only versions whose layout was checked are in the table (see
 * pyoffsets.c for how); any other version is unknown and its processes
 * keep their native frames. A read-only table, no state.
 */
#ifndef PROFFS_PYOFFSETS_H
#define PROFFS_PYOFFSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How a frame says the C evaluation loop was entered for it. */
enum py_entry_mark {
	PY_ENTRY_IS_ENTRY,	/* 3.11: a bool field, is_entry */
	PY_ENTRY_SHIM,		/* 3.12: a shim frame (owner fr_shim_owner,
				 * its byte at fr_is_entry) follows it */
	PY_ENTRY_EVERY,		/* 3.8-3.10: every frame (a PyFrameObject)
				 * is run by a call of its own */
};

/* Which line table a code object keeps at co_linetable. */
enum py_lines {
	PY_LINES_311,		/* 3.11+: location table (pyline_311) */
	PY_LINES_310,		/* 3.10: co_linetable (pyline_310) */
	PY_LINES_LNOTAB,	/* 3.8, 3.9: co_lnotab (pyline_lnotab) */
};

struct py_offsets {
	unsigned minor;			/* 3.minor */
	enum py_entry_mark entry;
	enum py_lines lines;
	/* 3.8-3.10: the frame's instruction is its int f_lasti at
	 * fr_instr (a byte offset in 3.8/3.9, an index in 3.10), not a
	 * pointer into co_code; the thread state's id at ts_native_tid is
	 * its thread_id, pthread_self() of the thread, whose kernel tid
	 * is in glibc's struct pthread (pyread.c) */
	bool fr_lasti, ts_pthread;
	/* _PyRuntimeState */
	uint32_t rt_interp_head;	/* interpreters.head */
	uint32_t rt_gil_holder;		/* gilstate.tstate_current (3.11),
					 * the main GIL's last_holder */
	uint32_t rt_gil_locked;		/* 0, or that GIL's locked (u32) */
	/* PyInterpreterState */
	uint32_t is_next, is_threads_head;
	/* PyThreadState, of which ts_size bytes are read */
	uint32_t ts_next, ts_cframe, ts_native_tid, ts_size;
	/* _PyCFrame; no_cframe (3.13): the thread state holds the current
	 * frame itself, at cf_current_frame */
	uint32_t cf_current_frame;
	bool no_cframe;
	/* _PyInterpreterFrame, of which fr_size bytes are read */
	uint32_t fr_code, fr_previous, fr_instr, fr_is_entry, fr_size;
	uint8_t fr_shim_owner;		/* PY_ENTRY_SHIM: FRAME_OWNED_BY_CSTACK */
	/* PyCodeObject, of which co_size bytes are read; co_code is where
	 * the instructions start, inside the object */
	uint32_t co_filename, co_name, co_qualname, co_linetable;
	uint32_t co_firstlineno, co_code, co_size;
	/* PyBytesObject, PyUnicodeObject */
	uint32_t ob_size, bytes_data;
	uint32_t str_length, str_state, str_ascii_data, str_compact_data;
};

/* The offsets of CPython 3.minor, or NULL when they are not known. */
const struct py_offsets *pyoffsets_find(unsigned minor);

#define PY_DEBUG_OFFSETS_LEN 584	/* 3.13's _Py_DebugOffsets */

/*
 * 3.13's offsets from the _Py_DebugOffsets at the start of _PyRuntime
 * (buf, len bytes of it), main_interp the offset of the main interpreter
 * (where interpreters.head points) from _PyRuntime, for its GIL: 0, or
 * -ENOTSUP (no cookie, another version, offsets that do not fit), with
 * why (size bytes) saying what.
 */
int pyoffsets_parse(const uint8_t *buf, size_t len, uint64_t main_interp,
		    struct py_offsets *out, char *why, size_t size);

/* Where interpreters.head is in _PyRuntime, by the same _Py_DebugOffsets:
 * 0, or -ENOTSUP. */
int pyoffsets_interp_head(const uint8_t *buf, size_t len, uint64_t *off);

/* What pythreads.c reads of the objects the threading module keeps, as
 * far as 3.13's _Py_DebugOffsets publishes it: where sys.modules is in
 * an interpreter (interp->imports.modules), an object header's size, a
 * type's tp_flags, a dict's keys and values, an int's tag and digits. */
struct py_obj_offsets {
	uint32_t is_modules, object_size, tp_flags;
	uint32_t dict_keys, dict_values, long_tag, long_digits;
};

/* Those offsets, from 3.13's _Py_DebugOffsets (buf, len bytes of it):
 * 0, or -ENOTSUP (as pyoffsets_parse() refuses it, or values that do not
 * fit). */
int pyoffsets_objects(const uint8_t *buf, size_t len,
		      struct py_obj_offsets *out);

#endif
