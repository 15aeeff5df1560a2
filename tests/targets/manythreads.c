// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * manythreads - N threads (argv[1], default 1000) asleep in park_many;
 * prints "ready" once all of them are started. With "spin" as argv[2] the
 * main thread then burns CPU in spin_forever (its utime shows it running)
 * instead of sleeping in pause().
 *
 * With "exit" as argv[2] the threads end in the middle of the first
 * thread dump: the main thread waits in epoll_wait, which a ptrace
 * interrupt ends with EINTR (signal(7)); so once a dump has stopped and
 * released it, it ends every other thread (a signal whose handler exits
 * the thread alone). A dump takes the threads in the order /proc lists
 * them, the main one first: those after it are gone when it gets there.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
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

/* The thread alone, now: no unwinding, no cleanup (pthread_exit would
 * do both from inside nanosleep's signal handler). */
static void end_thread(int sig)
{
	(void)sig;
	syscall(SYS_exit, 0);
}

/* Wait for a ptrace interrupt, then end every thread but this one. */
static void exit_on_dump(pthread_t *threads, int n)
{
	struct epoll_event ev;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	while (epoll_wait(ep, &ev, 1, -1) < 0 && errno != EINTR)
		;
	for (int i = 0; i < n; i++)
		pthread_kill(threads[i], SIGUSR2);
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
	const char *mode = argc > 2 ? argv[2] : "";
	pthread_t *threads = calloc(n > 0 ? n : 1, sizeof(*threads));
	pthread_attr_t attr;

	if (!threads)
		return 1;
	if (!strcmp(mode, "exit"))
		signal(SIGUSR2, end_thread);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int i = 0; i < n; i++)
		if (pthread_create(&threads[i], &attr, run, NULL))
			return 1;
	while (atomic_load(&started) < n)
		nanosleep(&tick, NULL);
	tick.tv_nsec = 50000000;
	nanosleep(&tick, NULL);
	printf("ready\n");
	fflush(stdout);
	if (!strcmp(mode, "spin"))
		spin_forever();
	if (!strcmp(mode, "exit"))
		exit_on_dump(threads, n);
	for (;;)
		pause();
}
