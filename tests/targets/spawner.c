// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * spawner - a busy main thread that starts a thread named "latecomer"
 * after argv[1] seconds (default 1): a profile window that is open when
 * the thread starts must follow it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void late_work(void)
{
	for (;;)
		sink++;
}

static void *latecomer(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "latecomer");
	late_work();
	return NULL;
}

__attribute__((noinline)) void main_work(void)
{
	for (unsigned long i = 0; i < 10000000; i++)
		sink += i;
	asm volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double delay = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec t0, now;
	pthread_t t;
	int started = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		main_work();
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!started && (now.tv_sec - t0.tv_sec) +
				(now.tv_nsec - t0.tv_nsec) / 1e9 >= delay) {
			pthread_create(&t, NULL, latecomer, NULL);
			started = 1;
		}
	}
}
