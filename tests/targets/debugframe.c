// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * debugframe - burn's shape, built without .eh_frame for its own code
 * (-fno-asynchronous-unwind-tables -fno-unwind-tables -g): the only CFI
 * of df_hot(), its callers and main() is in .debug_frame. df_hot() burns
 * three times the CPU of df_sibling(), both reached only through main()
 * -> df_level1() -> df_level2(). The callers keep a value across their
 * calls and move RSP (CFA = RSP + 16 while they call): a guess of
 * CFA = RSP + 8 does not unwind them. Prints "ready" once running.
 */
#include <stdio.h>

static volatile unsigned long sink;

/* No inlining, no tail calls: every frame stays on the stack. */
#define KEEP() asm volatile("" ::: "memory")

__attribute__((noinline)) unsigned long df_hot(unsigned long seed)
{
	volatile unsigned long buf[8];

	for (unsigned long i = 0; i < 3000000; i++)
		buf[i & 7] = i * seed;
	KEEP();
	return buf[seed & 7];
}

/* df_hot's loop, a third as long: the 3:1 share holds on any CPU (a
 * loop over a global sink cost three times df_hot's on one, and df_hot
 * fell to 31%). */
__attribute__((noinline)) unsigned long df_sibling(unsigned long seed)
{
	volatile unsigned long buf[8];

	for (unsigned long i = 0; i < 1000000; i++)
		buf[i & 7] = i * seed;
	KEEP();
	return buf[seed & 7];
}

__attribute__((noinline)) unsigned long df_level2(unsigned long which)
{
	unsigned long r = which ? df_hot(which) : df_sibling(which + 7);

	KEEP();
	return r + which;
}

__attribute__((noinline)) unsigned long df_level1(unsigned long which)
{
	unsigned long r = df_level2(which);

	KEEP();
	return r ^ which;
}

int main(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		sink += df_level1(1);
		KEEP();
		sink += df_level1(0);
		KEEP();
	}
}
