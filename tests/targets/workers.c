// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * workers - N threads (argv[1], default 1) doing the same CPU work through
 * a 24-deep chain of calls; prints "ops TOTAL" every 200 ms so a benchmark
 * can measure how much a profiler slows it down.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	pthread_t t;

	for (int i = 0; i < n; i++)
		pthread_create(&t, NULL, worker, (void *)(long)i);
	report_ops(&ops, NULL);
}
