// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bigframe - stacks deeper than a sampler's 8 KiB copy, known by
 * construction: callers with frames of 24 and 32 KiB of locals between
 * main and the code that runs.
 *
 *   bigframe cpu 24|32     main -> frame24|frame32 -> hot, hot forever;
 *                          frame24 writes its array, frame32 leaves
 *                          its pages untouched
 *   bigframe alternate     main -> via_a -> deep_a -> hot for ~1 ms, then
 *                          main -> via_b -> deep_b -> hot, and again:
 *                          via_a and via_b, deep_a and deep_b have frames
 *                          of the same sizes, so a return address read
 *                          from the live stack after the sample may be
 *                          the other path's
 *   bigframe heap          main -> site8000 (an 8000-byte local array)
 *                          -> malloc, 64-4096 bytes, freed at the next
 *                          call, forever
 *
 * Built with -fomit-frame-pointer: only DWARF CFI unwinds it. Prints
 * "ready" once running.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KB 1024
#define KEEP() asm volatile("" ::: "memory")

static volatile unsigned long sink;

__attribute__((noinline)) void hot(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 7;
	KEEP();
}

/*
 * A frame of size bytes of locals that calls hot turns times (0: for
 * ever). With fill, the array is written whole, as a buffer in use is;
 * else only at both ends, and the stack pages between stay untouched -
 * absent, so the kernel's copy of a sample stops at the first of them.
 */
#define FRAME_FN(name, size, fill)					\
	__attribute__((noinline)) void name(unsigned long turns)	\
	{								\
		volatile char buf[size];				\
									\
		for (size_t i = 0; i < sizeof(buf); i += fill ? 1 : 	\
			     sizeof(buf) - 1)				\
			buf[i] = 1;					\
		for (unsigned long t = 0; !turns || t < turns; t++)	\
			hot(20000 + buf[0]);				\
		KEEP();							\
	}

FRAME_FN(frame24, 24 * KB, 1)
FRAME_FN(frame32, 32 * KB, 0)
FRAME_FN(deep_a, 24 * KB, 1)
FRAME_FN(deep_b, 24 * KB, 1)

/* ~1 ms of hot a call, here */
#define TURNS 40

__attribute__((noinline)) void via_a(void)
{
	volatile char pad[64];

	pad[0] = 0;
	deep_a(TURNS + pad[0]);
	KEEP();
}

__attribute__((noinline)) void via_b(void)
{
	volatile char pad[64];

	pad[0] = 0;
	deep_b(TURNS + pad[0]);
	KEEP();
}

static void *last;

__attribute__((noinline)) void site8000(size_t size)
{
	volatile char buf[8000];

	buf[0] = (char)size;
	buf[sizeof(buf) - 1] = 1;
	free(last);
	last = malloc(size + (unsigned char)buf[0] % 2);
	if (last)
		memset(last, 1, 8);
	KEEP();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "cpu";

	printf("ready\n");
	fflush(stdout);
	if (!strcmp(mode, "heap")) {
		for (unsigned long n = 0;; n++)
			site8000(64 + (n * 64) % 4096);
	}
	if (!strcmp(mode, "alternate")) {
		for (;;) {
			via_a();
			via_b();
		}
	}
	if (argc > 2 && !strcmp(argv[2], "32"))
		frame32(0);
	frame24(0);
	return 0;
}
