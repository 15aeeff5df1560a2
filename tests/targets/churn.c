// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * churn - creates and ends 1,000 short threads per second while the main
 * thread burns CPU in main_loop: the sampler must follow threads that live
 * a few tens of microseconds without losing its footing.
 *
 * The spawner paces itself on an absolute 1 ms clock (clock_nanosleep
 * TIMER_ABSTIME) and joins each thread LAG creations later, so neither
 * the time a create takes nor a new thread waiting for a CPU on a busy
 * machine lowers the rate. On SIGUSR1 it writes "ended N\n" to stdout, N
 * the number of threads created and joined so far: a test measures the
 * rate it reached. Prints "ready" once running.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PERIOD_NS 1000000L	/* one thread per millisecond */
#define BEHIND_NS 100000000L	/* further behind than this: no catch-up */
#define LAG 64			/* threads alive at most */

static volatile unsigned long sink;
static _Atomic unsigned long ended;

static void *short_life(void *arg)
{
	for (int i = 0; i < 20000; i++)
		sink += i;
	return arg;
}

/* Async-signal-safe: an atomic load, digits by hand, one write. */
static void report(int sig)
{
	unsigned long n = atomic_load(&ended);
	char buf[32], *p = buf + sizeof(buf);
	ssize_t r;

	(void)sig;
	*--p = '\n';
	do
		*--p = '0' + n % 10;
	while ((n /= 10));
	p -= 6;
	memcpy(p, "ended ", 6);
	r = write(1, p, buf + sizeof(buf) - p);
	(void)r;
}

static void tick(struct timespec *next)
{
	struct timespec now;
	long behind;

	next->tv_nsec += PERIOD_NS;
	if (next->tv_nsec >= 1000000000L) {
		next->tv_nsec -= 1000000000L;
		next->tv_sec++;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	behind = (now.tv_sec - next->tv_sec) * 1000000000L +
		 (now.tv_nsec - next->tv_nsec);
	if (behind > BEHIND_NS)
		*next = now;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL))
		;	/* EINTR (the report signal): sleep on to the tick */
}

static void *spawner(void *arg)
{
	pthread_t ring[LAG];
	bool live[LAG] = { false };
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	for (unsigned i = 0;; i = (i + 1) % LAG) {
		if (live[i]) {
			pthread_join(ring[i], NULL);
			atomic_fetch_add(&ended, 1);
		}
		live[i] = !pthread_create(&ring[i], NULL, short_life, NULL);
		tick(&next);
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
	struct sigaction sa;
	pthread_t t;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = report;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_create(&t, NULL, spawner, NULL);
	printf("ready\n");
	fflush(stdout);
	main_loop();
}
