/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ops.h - how the benchmark targets (workers, mallocs) say how much work
 * they do: "ready" once their threads run, then "ops TOTAL" every 200 ms,
 * forever, from the main thread. A target with more to say passes more(),
 * which prints the rest of the line (" key value..."): readers match the
 * line's start, so fields after TOTAL never break them.
 */
#ifndef PROFFS_TARGET_OPS_H
#define PROFFS_TARGET_OPS_H

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

static inline _Noreturn void report_ops(_Atomic unsigned long *ops,
					void (*more)(void))
{
	struct timespec tick = { 0, 200000000 };

	printf("ready\n");
	fflush(stdout);
	for (;;) {
		nanosleep(&tick, NULL);
		printf("ops %lu", atomic_load(ops));
		if (more)
			more();
		printf("\n");
		fflush(stdout);
	}
}

#endif
