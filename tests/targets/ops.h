/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ops.h - how the benchmark targets (workers, mallocs) say how much work
 * they do: "ready" once their threads run, then "ops TOTAL" every 200 ms,
 * forever, from the main thread.
 */
#ifndef PROFFS_TARGET_OPS_H
#define PROFFS_TARGET_OPS_H

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

static inline _Noreturn void report_ops(_Atomic unsigned long *ops)
{
	struct timespec tick = { 0, 200000000 };

	printf("ready\n");
	fflush(stdout);
	for (;;) {
		nanosleep(&tick, NULL);
		printf("ops %lu\n", atomic_load(ops));
		fflush(stdout);
	}
}

#endif
