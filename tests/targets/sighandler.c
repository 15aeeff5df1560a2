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
 * every target. Prints "ready" once the timer runs, then "restorer ADDR",
 * the signal restorer the handler returns to (libc's __restore_rt).
 *
 * The handler's turns are counted at start for half a millisecond on this
 * CPU: a fixed 300,000 took 150 us on an AMD EPYC (its store forwarding
 * runs the volatile add in 2 cycles), and with the timer delivering ~550
 * signals a second there, the handler had 7-9% of the samples, not half.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;
static unsigned long turns = 300000;

#define KEEP() asm volatile("" ::: "memory")

__attribute__((noinline)) static void in_handler(void)
{
	for (unsigned long i = 0; i < turns; i++)
		sink += i;
	KEEP();
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Turns of in_handler()'s loop that take 500 us here: the fastest of
 * five timings, so a preemption does not count. */
static unsigned long calibrate(void)
{
	double best = 0;

	for (int k = 0; k < 5; k++) {
		double t0 = now_us();

		in_handler();
		double dt = now_us() - t0;

		if (!best || dt < best)
			best = dt;
	}
	return best > 0 ? (unsigned long)(turns * 500.0 / best) : turns;
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

	turns = calibrate();
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &every, NULL))
		return 1;
	/* where the kernel returns a handler to (libc's restorer, which
	 * libc puts in sa_restorer): the frame a profile must name by its
	 * first byte */
	struct sigaction cur;

	if (sigaction(SIGALRM, NULL, &cur))
		return 1;
	printf("ready\nrestorer %p\n", (void *)cur.sa_restorer);
	fflush(stdout);
	outer();
}
