// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * manystacks - one thread on the CPU whose every sample is a new stack:
 * it descends 64 to 127 calls deep through four functions (way_a..way_d),
 * each picking the next from a xorshift sequence, spins ~20 µs at the
 * bottom (in bottom), and climbs back. 4^64 paths and more: at any
 * sampling rate nearly every stack is distinct, what the flight
 * recorder's memory bound (record_mem=) is tested with.
 * Prints "ready" once running.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static uint64_t seed = 88172645463325252ull;
static volatile uint64_t sink;

static unsigned next(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return (unsigned)seed;
}

__attribute__((noinline)) void bottom(void)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 200; i++)
			sink += (uint64_t)i * sink + 1;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000000l +
		 (b.tv_nsec - a.tv_nsec) < 20000);
}

void way_a(int depth);
void way_b(int depth);
void way_c(int depth);
void way_d(int depth);

static void (*const ways[4])(int) = { way_a, way_b, way_c, way_d };

#define WAY(name)						\
	__attribute__((noinline)) void name(int depth)		\
	{							\
		if (!depth)					\
			bottom();				\
		else						\
			ways[next() & 3](depth - 1);		\
		sink++;						\
	}

WAY(way_a)
WAY(way_b)
WAY(way_c)
WAY(way_d)

int main(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;)
		ways[next() & 3](64 + (next() & 63));
}
