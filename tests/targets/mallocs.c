// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mallocs - N threads (argv[1], default 8) allocating and freeing as fast
 * as they can: batches of 64 blocks of mixed small sizes, freed in the
 * reverse order; prints "ops TOTAL" (blocks allocated and freed) every
 * 200 ms, so a benchmark can measure what a heap profiler costs, and so a
 * test can load the agent into a process busy in malloc on every thread.
 * With "fill" (argv[2]) each block is written whole before it is freed,
 * as a program that uses its memory would; else one byte.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

#define BATCH 64

static _Atomic unsigned long ops;

static int fill;

__attribute__((noinline)) static void batch(void **p, unsigned seed)
{
	for (int i = 0; i < BATCH; i++) {
		size_t size = 16 + ((seed + i * 7u) & 15) * 16;

		p[i] = malloc(size);
		if (fill)
			memset(p[i], i, size);
		*(volatile char *)p[i] = 1;
	}
	for (int i = BATCH - 1; i >= 0; i--)
		free(p[i]);
}

static void *worker(void *arg)
{
	void *p[BATCH];
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (;;) {
		batch(p, seed++);
		atomic_fetch_add_explicit(&ops, BATCH, memory_order_relaxed);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	pthread_t t;

	fill = argc > 2 && !strcmp(argv[2], "fill");
	for (int i = 0; i < n; i++)
		pthread_create(&t, NULL, worker, (void *)(uintptr_t)i);
	report_ops(&ops);
}
