// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * demo - a toy request loop for contrib/run.sh: parse_request,
 * compress_block and checksum burn about 20%, 50% and 30% of its CPU, each
 * in its own body, so `go tool pprof -top` shows exactly those three.
 * Prints "ready" once running.
 */
#include <stdio.h>

static volatile unsigned long sink;

#define KEEP() asm volatile("" ::: "memory")

#define WORK(n)							\
	do {							\
		for (unsigned long i = 0; i < (n); i++)		\
			sink ^= i * 2654435761u;		\
	} while (0)

__attribute__((noinline)) void parse_request(void)
{
	WORK(200000);
	KEEP();
}

__attribute__((noinline)) void compress_block(void)
{
	WORK(500000);
	KEEP();
}

__attribute__((noinline)) void checksum(void)
{
	WORK(300000);
	KEEP();
}

__attribute__((noinline)) void handle_request(void)
{
	parse_request();
	compress_block();
	checksum();
	KEEP();
}

int main(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		handle_request();
		KEEP();
	}
}
