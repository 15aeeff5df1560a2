/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * clock.h - the kernel's clocks in nanoseconds, for windows, deadlines and
 * CPU time: one reader for every module of the sampler.
 *
 * Stateless. clock_gettime() cannot fail for the clocks clock_ns() is
 * passed (the monotonic, real-time and CPU-time clocks of the calling
 * thread or process), so there is no error to return; another process's
 * CPU clock can fail, and says so.
 */
#ifndef PROFFS_CLOCK_H
#define PROFFS_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>
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

/* The same in milliseconds, for session times and caches. */
static inline uint64_t now_ms(void)
{
	return now_ns() / 1000000ull;
}

/* The time of day, for a profile's time_nanos: may jump. */
static inline int64_t wall_ns(void)
{
	return (int64_t)clock_ns(CLOCK_REALTIME);
}

/* The CPU time of process pid, every thread's: 0 and *ns, or -errno
 * when the kernel will not say (the process is gone, or not ours to
 * see). */
static inline int clock_process_cpu_ns(pid_t pid, uint64_t *ns)
{
	struct timespec ts;
	clockid_t clk;
	int ret;

	ret = -clock_getcpuclockid(pid, &clk);
	if (!ret && clock_gettime(clk, &ts))
		ret = -errno;
	if (!ret)
		*ns = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	return ret;
}

/* The period of a sampling rate of hz (> 0) per second. */
static inline uint64_t clock_period_ns(uint32_t hz)
{
	return 1000000000ull / hz;
}

#endif
