// SPDX-License-Identifier: GPL-2.0-or-later
/*

 * stripped - the burn target, shipped stripped with a separate debug file:
 * a CPU profile known by construction: stripped_hot() burns three times the
 * CPU of stripped_sibling(), both reached only through level1() -> level2(). Built
 * with -fomit-frame-pointer, so only DWARF CFI can unwind it.
 */
#include <stdio.h>

static volatile unsigned long sink;

#define KEEP() asm volatile("" ::: "memory")	/* no inlining, no tail calls */

__attribute__((noinline)) static void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 7;
	KEEP();
}

__attribute__((noinline)) void stripped_hot(void)
{
	spin(3000000);
	KEEP();
}

__attribute__((noinline)) void stripped_sibling(void)
{
	spin(1000000);
	KEEP();
}

__attribute__((noinline)) void level2(int which)
{
	if (which)
		stripped_hot();
	else
		stripped_sibling();
	KEEP();
}

__attribute__((noinline)) void level1(int which)
{
	level2(which);
	KEEP();
}

int main(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		level1(1);
		level1(0);
	}
}
