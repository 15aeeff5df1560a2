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
 * Other versions are left out until their layout can be checked the same
 * way: 3.8-3.10 keep their frames as PyFrameObjects with another line
 * table, and 3.13 publishes _Py_DebugOffsets, which a reader must parse
 * rather than trust a table.
 */
#include <stddef.h>

#include "sampler/runtime/pyoffsets.h"

static const struct py_offsets table[] = {
	{
		.minor = 11,
		.entry = PY_ENTRY_IS_ENTRY,
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
