// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * parked - threads parked in known functions, for thread dumps:
 *   condwaiter  pthread_cond_wait in park_cond
 *   sleeper     nanosleep in park_sleep
 *   reader      read on a pipe nobody writes, in park_read
 *   spinner     a busy loop in spin_forever (counts in /proc utime)
 *   vforker     vfork in park_vfork, whose child never execs: the thread
 *               waits in an uninterruptible ("disk sleep") state that a
 *               ptrace interrupt cannot stop
 * Prints "ready" once every thread is named and about to park.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int pipe_fds[2];
static _Atomic int parked;
static _Atomic unsigned long spins;

__attribute__((noinline)) void park_cond(void)
{
	pthread_mutex_lock(&lock);
	for (;;)
		pthread_cond_wait(&never, &lock);
}

__attribute__((noinline)) void park_sleep(void)
{
	struct timespec t = { 100000, 0 };

	for (;;)
		nanosleep(&t, NULL);
}

__attribute__((noinline)) void park_read(void)
{
	char c;

	for (;;)
		if (read(pipe_fds[0], &c, 1) <= 0)
			return;
}

__attribute__((noinline)) void spin_forever(void)
{
	for (;;) {
		atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
		asm volatile("" ::: "memory");
	}
}

__attribute__((noinline)) void park_vfork(void)
{
	struct timespec t = { 100000, 0 };
	pid_t parent = getpid();

	if (vfork() == 0) {
		/* Die with the thread that waits for us. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		for (;;)
			nanosleep(&t, NULL);
	}
}

static void *run(void *arg)
{
	void (*park)(void) = arg;

	atomic_fetch_add(&parked, 1);
	park();
	return NULL;
}

static const struct {
	const char *name;
	void (*park)(void);
} parkers[] = {
	{ "condwaiter", park_cond },
	{ "sleeper", park_sleep },
	{ "reader", park_read },
	{ "spinner", spin_forever },
	{ "vforker", park_vfork },
};

int main(void)
{
	struct timespec tick = { 0, 1000000 };
	const int n = sizeof(parkers) / sizeof(parkers[0]);
	pthread_t t;

	if (pipe(pipe_fds))
		return 1;
	for (int i = 0; i < n; i++) {
		if (pthread_create(&t, NULL, run, (void *)parkers[i].park))
			return 1;
		pthread_setname_np(t, parkers[i].name);
	}
	while (atomic_load(&parked) < n)
		nanosleep(&tick, NULL);
	/* Let the last one reach its call. */
	tick.tv_nsec = 50000000;
	nanosleep(&tick, NULL);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
