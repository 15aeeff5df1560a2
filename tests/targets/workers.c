// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * workers - N threads (argv[1], default 1) doing the same CPU work through
 * a 24-deep chain of calls; prints "ops TOTAL" every 200 ms so a benchmark
 * can measure how much a profiler slows it down. With "deep" (argv[2]),
 * the chain runs under a caller with a 24 KiB frame: a stack deeper than
 * a sampler's 8 KiB copy.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static _Atomic unsigned long ops;

__attribute__((noinline)) unsigned long chain(int depth, unsigned long x)
{
	if (depth == 0) {
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
		return x;
	}
	x = chain(depth - 1, x) ^ depth;
	asm volatile("" ::: "memory");
	return x;
}

static void *worker(void *arg)
{
	unsigned long x = (unsigned long)arg;

	for (;;) {
		x = chain(24, x);
		atomic_fetch_add_explicit(&ops, 1, memory_order_relaxed);
	}
	return NULL;
}

/* The array written whole, as a buffer in use is: its pages present. */
__attribute__((noinline)) static void *deep_worker(void *arg)
{
	volatile char buf[24 * 1024];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)i;
	worker(arg);
	return (void *)(long)buf[0];
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	bool deep = argc > 2 && !strcmp(argv[2], "deep");
	pthread_t t;

	for (int i = 0; i < n; i++)
		pthread_create(&t, NULL, deep ? deep_worker : worker,
			       (void *)(long)i);
	report_ops(&ops, NULL);
}
