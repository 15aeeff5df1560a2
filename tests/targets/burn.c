// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * burn - a CPU profile known by construction: hot() burns three times the
 * CPU of sibling(), in their own bodies (so flat and cumulative shares
 * agree), both reached only through main() -> level1() -> level2(). The
 * two calls alternate in a short loop, so any window sees the 3:1 ratio.
 * Built with -fomit-frame-pointer: only DWARF CFI unwinds it correctly.
 * Prints "ready" once running. With -DFAR_TEXT, hot() and level2() go in
 * a section of their own, which a linker told where to put it
 * (--section-start=far_text=ADDR) loads as a second code segment.
 */
#include <stdio.h>

#ifdef FAR_TEXT
#define FAR __attribute__((section("far_text")))
#else
#define FAR
#endif

static volatile unsigned long sink;

/* No inlining, no tail calls: every frame stays on the stack. */
#define KEEP() asm volatile("" ::: "memory")

#define BURN(n)						\
	do {						\
		for (unsigned long i = 0; i < (n); i++)	\
			sink += i * 7;			\
	} while (0)

FAR __attribute__((noinline)) void hot(void)
{
	BURN(3000000);
	KEEP();
}

__attribute__((noinline)) void sibling(void)
{
	BURN(1000000);
	KEEP();
}

FAR __attribute__((noinline)) void level2(int which)
{
	if (which)
		hot();
	else
		sibling();
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
		KEEP();
		level1(0);
		KEEP();
	}
}
