/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * clock.h - the kernel's clocks in nanoseconds, for windows, deadlines and
 * CPU time: one reader for every module of the sampler.
 *
 * Stateless. clock_gettime() cannot fail for the clocks passed here (the
 * monotonic, real-time and CPU-time clocks of the calling thread or
 * process), so there is no error to return.
 */
#ifndef PROFFS_CLOCK_H
#define PROFFS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* For intervals and deadlines: never jumps. */
static inline uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

#endif
