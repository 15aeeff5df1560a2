// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vdso - most of its time in the vDSO: clocks() calls clock_gettime() and
 * tod() gettimeofday(), the same number of times, from main(). The kernel
 * maps the vDSO into every process from no file: its symbols and unwind
 * tables are only in the process's memory. Prints "ready" once running.
 */
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

static volatile long sink;

__attribute__((noinline)) void clocks(void)
{
	struct timespec ts;

	for (int i = 0; i < 1000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += ts.tv_nsec;
	}
}

__attribute__((noinline)) void tod(void)
{
	struct timeval tv;

	for (int i = 0; i < 1000; i++) {
		gettimeofday(&tv, NULL);
		sink += tv.tv_usec;
	}
}

int main(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		clocks();
		tod();
	}
}
