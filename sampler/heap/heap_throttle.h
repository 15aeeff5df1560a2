/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_throttle.h - how much coarser than its default rate the heap agent
 * samples a process that allocates very fast, so that the samples cost it
 * a bounded share of a CPU.
 *
 * Each sample costs the target about 1.3 us (its stack copied into the
 * ring, the sampled block in the agent's live set, its free told to the
 * daemon): at Go's default rate, 512 KiB, a thread allocating 15 GB/s
 * takes 27,000 samples a second and loses 3-4% to them (docs/performance.md,
 * "What sampling costs"). JFR's allocation sampling caps its events a
 * second for the same reason; perf lowers its sample rate when its
 * interrupts take too long. Here the factor the default rate is multiplied
 * by doubles (or more, at once) while a process takes more than
 * HEAP_THROTTLE_PER_S samples a second, and halves again after a second
 * under a quarter of that. Every sample carries the rate it was drawn at
 * and is weighted by it, so the estimates stay unbiased: they only get
 * noisier, and at the cap a 5 s window still holds 25,000 samples.
 *
 * Only the default rate is throttled: a session that names a rate
 * (heap?rate=N, N = 524288 too) gets it, whatever it costs. An agent
 * keeps one entry per session, the rate it named or 0 for the default
 * (heap_throttle_session_rate()), and samples at the finest
 * (heap_throttle_asked()).
 *
 * The caller feeds the agent's cumulative sample count every few
 * milliseconds. Pure arithmetic: no system calls, no allocation, no
 * errors.
 */
#ifndef PROFFS_HEAP_THROTTLE_H
#define PROFFS_HEAP_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

/* Samples a second a process may take at the default rate: at 1.3 us
 * each, under 0.7% of one CPU. */
#define HEAP_THROTTLE_PER_S 5000ull
#define HEAP_THROTTLE_PERIOD_NS 250000000ull	/* how often it decides */
#define HEAP_THROTTLE_CALM 4			/* quiet periods, then halve */
#define HEAP_THROTTLE_MAX 4096u			/* 512 KiB up to 2 GiB */

struct heap_throttle {
	uint64_t since_ns;	/* the period began */
	uint64_t samples0;	/* the count then */
	uint32_t factor;	/* a power of two; 1: the rate as asked */
	uint32_t calm;		/* periods in a row under a quarter of the
				 * cap */
	uint64_t raises;	/* times the factor went up, since the
				 * struct was zeroed */
};

/* The rate as asked from now on (raises counts on). */
void heap_throttle_start(struct heap_throttle *t, uint64_t now_ns,
			 uint64_t samples);

/* The agent's cumulative sample count at now_ns. True when the factor
 * changed. A count that went back (the agent armed anew) starts over. */
bool heap_throttle_update(struct heap_throttle *t, uint64_t now_ns,
			  uint64_t samples);

/* A session's entry: the rate it named (any but the default counts as
 * named), else 0, the default. A named 0 means every allocation (1). */
uint64_t heap_throttle_session_rate(uint64_t rate, bool named);

/* Of n sessions' entries, the finest rate asked (the default's for a 0,
 * and with none), and whether any named its rate: then no throttle. */
uint64_t heap_throttle_asked(const uint64_t *rates, unsigned n,
			     bool *named);

#endif
