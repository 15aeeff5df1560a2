// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sleepwork - N threads (argv[1], default 100), each doing a fixed piece
 * of CPU work (argv[3] rounds of a multiply-add chain, default 20000)
 * then sleeping argv[2] microseconds (default 10000), forever; prints
 * "ops TOTAL" every 200 ms (ops.h), TOTAL the pieces of work done. The
 * benchmark of the off-CPU kinds measures its work per second of its
 * own CPU time, profiled and not.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ops.h"

static _Atomic unsigned long ops;
static long sleep_us = 10000, rounds = 20000;

__attribute__((noinline)) unsigned long work(unsigned long x)
{
	for (long i = 0; i < rounds; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

__attribute__((noinline)) void nap(void)
{
	struct timespec t = { sleep_us / 1000000, sleep_us % 1000000 * 1000 };

	nanosleep(&t, NULL);
}

static void *worker(void *arg)
{
	unsigned long x = (unsigned long)arg;

	for (;;) {
		x = work(x);
		asm volatile("" : : "r"(x) : "memory");
		atomic_fetch_add_explicit(&ops, 1, memory_order_relaxed);
		nap();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	pthread_t th;

	if (argc > 2)
		sleep_us = atol(argv[2]);
	if (argc > 3)
		rounds = atol(argv[3]);
	for (int i = 0; i < n; i++)
		if (pthread_create(&th, NULL, worker, (void *)(long)i))
			return 1;
	report_ops(&ops, NULL);
}
