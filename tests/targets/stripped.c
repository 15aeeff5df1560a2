// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * stripped - burn with its own function names, shipped the way
 * distributions ship binaries: stripped of every symbol, its debug info in
 * a separate file found by GNU build-id (split-debug.sh). stripped_hot()
 * burns three times the CPU of stripped_sibling(). Prints "ready" once
 * running.
 */
#include <stdio.h>

static volatile unsigned long sink;

/* No inlining, no tail calls: every frame stays on the stack. */
#define KEEP() asm volatile("" ::: "memory")

#define BURN(n)						\
	do {						\
		for (unsigned long i = 0; i < (n); i++)	\
			sink += i * 7;			\
	} while (0)

__attribute__((noinline)) void stripped_hot(void)
{
	BURN(3000000);		/* stripped_hot body */
	KEEP();
}

__attribute__((noinline)) void stripped_sibling(void)
{
	BURN(1000000);
	KEEP();
}

__attribute__((noinline)) void stripped_level2(int which)
{
	if (which)
		stripped_hot();
	else
		stripped_sibling();
	KEEP();
}

__attribute__((noinline)) void stripped_level1(int which)
{
	stripped_level2(which);
	KEEP();
}

int main(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		stripped_level1(1);
		KEEP();
		stripped_level1(0);
		KEEP();
	}
}
