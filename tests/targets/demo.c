// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * demo - a toy request loop for contrib/run.sh: parse_request,
 * compress_block and checksum take about 20%, 50% and 30% of its time.
 */
#include <stdio.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void work(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink ^= i * 2654435761u;
	asm volatile("" ::: "memory");
}

__attribute__((noinline)) void parse_request(void) { work(200000); }
__attribute__((noinline)) void compress_block(void) { work(500000); }
__attribute__((noinline)) void checksum(void) { work(300000); }

__attribute__((noinline)) void handle_request(void)
{
	parse_request();
	compress_block();
	checksum();
	asm volatile("" ::: "memory");
}

int main(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;)
		handle_request();
}
