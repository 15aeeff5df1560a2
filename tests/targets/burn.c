// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * burn - a CPU profile known by construction: hot() burns three times the
 * CPU of sibling(), in their own bodies (so flat and cumulative shares
 * agree), both reached only through main() -> level1() -> level2(). The
 * two calls alternate in a short loop, so any window sees the 3:1 ratio.
 * Each turn's length varies (0.5 to 1.5 times the base, the same for both
 * calls, so the 3:1 holds): a fixed turn near a multiple of the sampler's
 * period (999 Hz is ~1 ms) is sampled at nearly the same phase turn after
 * turn, and two profilers reading one window then differ by several
 * points (as shapes.cc and shapes.rs found before).
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
static volatile unsigned long turn = 1000000;	/* this turn's length */

/* No inlining, no tail calls: every frame stays on the stack. */
#define KEEP() asm volatile("" ::: "memory")

#define BURN(n)						\
	do {						\
		for (unsigned long i = 0; i < (n); i++)	\
			sink += i * 7;			\
	} while (0)

/* The two counts are read, not constants: gcc made hot()'s loop of 3 *
 * turn one instruction longer than sibling()'s (it folded sibling's
 * count into the induction variable), and an AMD EPYC ran it slower a
 * turn: perf measured hot at 82%, not 75%. Read, they compile to the same
 * loop, at the same place in a cache line (both functions start on
 * one), and the 3:1 holds in CPU time on any core. */
static volatile unsigned long hot_turns = 3, sibling_turns = 1;

FAR __attribute__((noinline, aligned(64))) void hot(void)
{
	unsigned long n = hot_turns * turn;

	BURN(n);
	KEEP();
}

__attribute__((noinline, aligned(64))) void sibling(void)
{
	unsigned long n = sibling_turns * turn;

	BURN(n);
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
	for (unsigned long r = 1;;) {
		r = r * 6364136223846793005UL + 1442695040888963407UL;
		turn = 500000 + (r >> 33) % 1000000;
		level1(1);
		KEEP();
		level1(0);
		KEEP();
	}
}
