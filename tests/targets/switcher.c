// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * switcher - a CPU profile that changes at a known moment: burns in
 * before() for argv[1] seconds of wall-clock time (default 5), prints
 * "switched", then burns in after(). For
 * differential profiles (base=): the window after the switch against
 * the one before has after() grown and before() shrunk. Prints "ready"
 * once running.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

#define KEEP() asm volatile("" ::: "memory")

__attribute__((noinline)) void before(void)
{
	for (unsigned long i = 0; i < 1000000; i++)
		sink += i * 7;
	KEEP();
}

__attribute__((noinline)) void after(void)
{
	for (unsigned long i = 0; i < 1000000; i++)
		sink += i * 5;
	KEEP();
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char *argv[])
{
	double limit = argc > 1 ? atof(argv[1]) : 5, t0 = now();
	unsigned n = 0;

	printf("ready\n");
	fflush(stdout);
	for (;;) {
		before();
		KEEP();
		if (++n % 16 == 0 && now() - t0 >= limit)
			break;
	}
	printf("switched\n");
	fflush(stdout);
	for (;;) {
		after();
		KEEP();
	}
}
