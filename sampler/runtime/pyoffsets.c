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
 * Other versions are left out until their layout can be checked the same
 * way: 3.8-3.10 keep their frames as PyFrameObjects with another line
 * table, 3.12 marks entry frames by owner, and 3.13 publishes
 * _Py_DebugOffsets, which a reader must parse rather than trust a table.
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
};

const struct py_offsets *pyoffsets_find(unsigned minor)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].minor == minor)
			return &table[i];
	return NULL;
}
