// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * execer - burns CPU in before_exec for argv[1] seconds, then execs argv[2]
 * (e.g. the burn target) in the same process: a window open across the
 * exec must survive it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void before_exec(double seconds)
{
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink += i;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 <
		 seconds);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	printf("ready\n");
	fflush(stdout);
	before_exec(atof(argv[1]));
	/* the new image prints its own "ready": keep stdout */
	execv(argv[2], &argv[2]);
	perror("execv");
	return 1;
}
