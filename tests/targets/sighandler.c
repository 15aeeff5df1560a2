// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sighandler - CPU burnt in a signal handler, on top of a known stack:
 * main() -> outer() -> spin(), where spin() never returns, so outer()'s
 * call to it is its last instruction and its return address is the first
 * byte past outer(). A timer (SIGALRM every millisecond) runs on_alarm()
 * -> in_handler(), which burns about half a millisecond. An unwinder must
 * name the interrupted frame at its exact pc (it called nothing) and the
 * frames above it one byte before their return addresses: else outer()
 * is named for whatever follows it. Built with -fomit-frame-pointer, as
 * every target. Prints "ready" once the timer runs.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>

static volatile unsigned long sink;

#define KEEP() asm volatile("" ::: "memory")

__attribute__((noinline)) static void in_handler(void)
{
	for (unsigned long i = 0; i < 300000; i++)
		sink += i;
	KEEP();
}

static void on_alarm(int sig)
{
	(void)sig;
	in_handler();
	KEEP();
}

__attribute__((noinline, noreturn)) static void spin(void)
{
	for (;;)
		sink++;
}

__attribute__((noinline, noreturn)) static void outer(void)
{
	spin();
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval every = { { 0, 1000 }, { 0, 1000 } };

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &every, NULL))
		return 1;
	printf("ready\n");
	fflush(stdout);
	outer();
}
