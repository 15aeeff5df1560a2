// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libplugin.so - loaded by allocs with dlopen after the heap agent is
 * armed: its allocations show only if the agent follows objects loaded
 * later.
 */
#include <stdlib.h>

/* Not static: the blocks must stay reachable, and the stores stay. */
void *plugin_blocks[4096];

__attribute__((noinline)) long plugin_alloc(long n, long size)
{
	for (long i = 0; i < n && i < 4096; i++)
		plugin_blocks[i] = malloc(size);
	return n;
}
