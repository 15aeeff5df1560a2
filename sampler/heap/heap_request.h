/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_request.h - what a heap or allocs request asks (struct heap_opts)
 * and what its answer reports (struct heap_stats): the types heap.h's
 * callers fill and read, at the bottom of sampler/heap/, so that the ways
 * heap.c answers by (heap_fallback.h) share them without including heap.h.
 */
#ifndef PROFFS_HEAP_REQUEST_H
#define PROFFS_HEAP_REQUEST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct heap_opts {
	pid_t pid;
	bool allocs;		/* allocs kind: alloc_space by default */
	bool has_window;
	uint64_t window_ms;
	uint64_t rate;		/* mean bytes between samples; 1 = all */
	bool rate_named;	/* asked for: never made coarser; else the
				 * default, which may be (heap_throttle.h) */
	const _Atomic bool *stop;	/* may be NULL */
};

struct heap_stats {
	bool armed_now;		/* this request loaded or armed the agent */
	bool uprobe;		/* measured by the uprobe fallback */
	bool tripped;		/* its breaker ended the window early */
	bool harmed;		/* the agent harmed the process (heap_watch.h) */
	char harm[240];		/* how */
	uint64_t samples;	/* allocation samples in the profile's span */
	uint64_t frees;
	uint64_t lost;		/* records the agent dropped, ever */
	unsigned inject_rounds;
	uint64_t hold_ns;	/* how long the threads were held */
	uint64_t elapsed_ns;
};

#endif
