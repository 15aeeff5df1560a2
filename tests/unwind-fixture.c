// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * unwind-fixture.c - two frames for test-unwind whose CFI is only in
 * .debug_frame: built -g -fno-asynchronous-unwind-tables -fno-unwind-tables
 * (tests/meson.build), linked into the test.
 */
#include "unwind-fixture.h"

#define KEEP() asm volatile("" ::: "memory")

__attribute__((noinline)) void fixture_inner(void (*cb)(void))
{
	cb();
	KEEP();
}

__attribute__((noinline)) void fixture_outer(void (*cb)(void))
{
	fixture_inner(cb);
	KEEP();
}
