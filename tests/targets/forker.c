// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * forker - a process that forks after the heap agent is in it.
 *
 * Prints "ready", then on each SIGUSR1 forks a child that allocates
 * CHILD_N blocks of CHILD_SIZE in site_child and then waits, while the
 * parent allocates PARENT_N blocks of PARENT_SIZE in site_parent; prints
 * "child PID" once the child is done allocating and the parent's JSON line
 * (allocs' format) after its own. The child lives until SIGTERM.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define PARENT_N 300
#define PARENT_SIZE 200
#define CHILD_N 500
#define CHILD_SIZE 300

void *parent_blocks[PARENT_N], *child_blocks[CHILD_N];

__attribute__((noinline, noclone)) static void site_parent(void)
{
	for (int i = 0; i < PARENT_N; i++)
		parent_blocks[i] = malloc(PARENT_SIZE);
}

__attribute__((noinline, noclone)) static void site_child(void)
{
	for (int i = 0; i < CHILD_N; i++)
		child_blocks[i] = malloc(CHILD_SIZE);
}

int main(void)
{
	sigset_t set;
	int pipefd[2], sig;
	pid_t child;
	char c;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		if (sigwait(&set, &sig) || pipe(pipefd))
			return 1;
		child = fork();
		if (child == 0) {
			site_child();
			if (write(pipefd[1], "x", 1) != 1)
				_exit(1);
			sigprocmask(SIG_UNBLOCK, &set, NULL);
			for (;;)
				pause();
		}
		if (read(pipefd[0], &c, 1) != 1)
			return 1;
		close(pipefd[0]);
		close(pipefd[1]);
		printf("child %d\n", (int)child);
		site_parent();
		printf("{\"site_parent\": [%d, %d, %d, %d, %d]}\n", PARENT_N,
		       PARENT_N * PARENT_SIZE, PARENT_N, PARENT_N * PARENT_SIZE,
		       PARENT_SIZE);
		fflush(stdout);
	}
}
