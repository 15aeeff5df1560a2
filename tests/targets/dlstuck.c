// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dlstuck - a process the heap agent must never be loaded into: one
 * thread sleeps forever inside dl_iterate_phdr (its callback blocks on a
 * pipe nobody writes), holding the loader's lock a dlopen would wait on.
 * The main thread allocates and frees a block every millisecond
 * (site_dlstuck), for the uprobe fallback to count. Prints "ready" once
 * the thread is inside.
 */
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int pipe_fds[2];
static int entered[2];

static int block_here(struct dl_phdr_info *info, size_t size, void *arg)
{
	char c;

	(void)info;
	(void)size;
	(void)arg;
	if (write(entered[1], "x", 1) != 1)
		abort();
	for (;;)
		if (read(pipe_fds[0], &c, 1) <= 0)
			return 1;
}

static void *stuck(void *arg)
{
	(void)arg;
	dl_iterate_phdr(block_here, NULL);
	return NULL;
}

__attribute__((noinline)) void *site_dlstuck(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 1, n);
	return p;
}

int main(void)
{
	struct timespec ms = { 0, 1000000 };
	pthread_t t;
	char c;

	if (pipe(pipe_fds) || pipe(entered) ||
	    pthread_create(&t, NULL, stuck, NULL) ||
	    read(entered[0], &c, 1) != 1)
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		free(site_dlstuck(4096));
		nanosleep(&ms, NULL);
	}
}
