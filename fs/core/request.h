/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * request.h - what a profile file's name asks for (struct proffs_request):
 * its kind, format, window and parameters, as the grammar (name.h) parses
 * them and every layer above reads them. Types only, at the bottom of
 * fs/core/, so that the kinds' table (kinds.h) and the grammar that reads
 * it (name.c) share them without including each other.
 */
#ifndef PROFFS_REQUEST_H
#define PROFFS_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "sampler/heap/agent/heap_ring.h"

enum proffs_kind {
	PROFFS_KIND_CPU,	/* cpu, profile, flame */
	PROFFS_KIND_HEAP,
	PROFFS_KIND_ALLOCS,
	PROFFS_KIND_GOROUTINE,	/* goroutine, threads */
	PROFFS_KIND_WALL,	/* every thread, on and off the CPU */
	PROFFS_KIND_BLOCK,	/* off the CPU, waiting to synchronize */
	PROFFS_KIND_MUTEX,	/* the part of block spent on locks */
	PROFFS_KIND_MEMSTATS,	/* Go's runtime.MemStats, txt only */
	PROFFS_KIND_TRACE,	/* on-CPU stacks over time, json only */
	PROFFS_KIND__COUNT,
};

enum proffs_format {
	PROFFS_FMT_PB_GZ,
	PROFFS_FMT_PB,
	PROFFS_FMT_SVG,
	PROFFS_FMT_TXT,
	PROFFS_FMT_FOLDED,
	PROFFS_FMT_JSON,	/* Chrome trace events (trace) */
	PROFFS_FMT__COUNT,
};

/* base=: what a differential profile compares with (SPEC §10) */
enum proffs_base {
	PROFFS_BASE_NONE,
	PROFFS_BASE_PREV,	/* the window of the same length before */
	PROFFS_BASE_LAST,	/* the recorder's last base_ms, per second */
};

#define PROFFS_SAMPLE_MAX 32
#define PROFFS_DEFAULT_SECONDS 30
#define PROFFS_DEFAULT_HZ 99
/* The heap's: what the agent samples at unless told (Go's MemProfileRate),
 * defined once, with the agent. */
#define PROFFS_DEFAULT_RATE PH_DEFAULT_RATE

struct proffs_request {
	enum proffs_kind kind;
	enum proffs_format format;
	bool has_window;	/* a duration was given (_Ns, _Nms, seconds=) */
	uint64_t window_ms;	/* the window; default 30 s when !has_window */
	uint32_t hz;		/* default 99 */
	uint32_t rate;		/* default 524288 */
	bool rate_named;	/* rate= given: kept as asked, where the
				 * default may be made coarser */
	int debug;		/* default 0 (absent); 1 or 2 when given */
	char sample[PROFFS_SAMPLE_MAX];	/* "" when absent */
	bool kernel;		/* kernel frames where the daemon may see
				 * them: kernel=1 (default), kernel=0 */
	bool last;		/* _lastNs: the past, from the recorder */
	enum proffs_base base;	/* base=: a differential profile */
	uint64_t base_ms;	/* base=lastNs */
};

#endif
