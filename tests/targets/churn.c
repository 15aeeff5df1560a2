// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * churn - creates and ends about 1,000 short threads per second while the
 * main thread burns CPU in main_loop: the sampler must follow threads that
 * live a millisecond without losing its footing.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

static void *short_life(void *arg)
{
	for (int i = 0; i < 20000; i++)
		sink += i;
	return arg;
}

static void *spawner(void *arg)
{
	struct timespec ms = { 0, 1000000 };

	for (;;) {
		pthread_t t;

		if (!pthread_create(&t, NULL, short_life, NULL))
			pthread_join(t, NULL);
		nanosleep(&ms, NULL);
	}
	return arg;
}

__attribute__((noinline)) void main_loop(void)
{
	for (;;)
		sink++;
}

int main(void)
{
	pthread_t t;

	pthread_create(&t, NULL, spawner, NULL);
	printf("ready\n");
	fflush(stdout);
	main_loop();
}
