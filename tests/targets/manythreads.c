// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * manythreads - N threads (argv[1], default 1000) asleep in park_many;
 * prints "ready" once all of them are started. With "spin" as argv[2] the
 * main thread then burns CPU in spin_forever (its utime shows it running)
 * instead of sleeping in pause().
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int started;
static volatile unsigned long spins;

__attribute__((noinline)) void spin_forever(void)
{
	for (;;)
		spins++;
}

__attribute__((noinline)) void park_many(void)
{
	struct timespec t = { 100000, 0 };

	for (;;)
		nanosleep(&t, NULL);
}

static void *run(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	park_many();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	struct timespec tick = { 0, 1000000 };
	pthread_attr_t attr;
	pthread_t t;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t, &attr, run, NULL))
			return 1;
	while (atomic_load(&started) < n)
		nanosleep(&tick, NULL);
	tick.tv_nsec = 50000000;
	nanosleep(&tick, NULL);
	printf("ready\n");
	fflush(stdout);
	if (argc > 2 && !strcmp(argv[2], "spin"))
		spin_forever();
	for (;;)
		pause();
}
