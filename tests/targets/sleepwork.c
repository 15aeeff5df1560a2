// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sleepwork - N threads (argv[1], default 100), each doing a fixed piece
 * of CPU work (argv[3] rounds of a multiply-add chain, default 20000)
 * then sleeping argv[2] microseconds (default 10000), forever: in nap
 * (nanosleep), or with argv[4] "cond" in nap_cond, a wait of that long
 * for a condition never signalled (pthread_cond_timedwait: a block, where
 * a sleep is not), each thread its own condition; prints
 * "ops TOTAL cpu_ns NS" every 200 ms (ops.h), TOTAL the pieces of work
 * done, NS the process's CPU time to the nanosecond at that moment. The
 * benchmark of the off-CPU kinds measures its work per second of its
 * own CPU time, profiled and not: at 1% of a CPU, /proc's 10 ms ticks
 * and a CPU time read apart from the count were noise of several %.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

__attribute__((noinline)) void nap_cond(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += sleep_us % 1000000 * 1000;
	t.tv_sec += sleep_us / 1000000 + t.tv_nsec / 1000000000;
	t.tv_nsec %= 1000000000;
	pthread_mutex_lock(&m);
	while (pthread_cond_timedwait(&c, &m, &t) == 0)
		;	/* spurious: wait on to the deadline */
	pthread_mutex_unlock(&m);
}

static void cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	printf(" cpu_ns %lld", (long long)t.tv_sec * 1000000000 + t.tv_nsec);
}

static void *worker(void *arg)
{
	void (*rest)(void) = arg ? nap_cond : nap;
	unsigned long x = (unsigned long)pthread_self();

	for (;;) {
		x = work(x);
		asm volatile("" : : "r"(x) : "memory");
		atomic_fetch_add_explicit(&ops, 1, memory_order_relaxed);
		rest();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	bool cond = argc > 4 && !strcmp(argv[4], "cond");
	pthread_t th;

	if (argc > 2)
		sleep_us = atol(argv[2]);
	if (argc > 3)
		rounds = atol(argv[3]);
	for (int i = 0; i < n; i++)
		if (pthread_create(&th, NULL, worker, cond ? &ops : NULL))
			return 1;
	report_ops(&ops, cpu_now);
}
