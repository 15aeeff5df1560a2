/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_breaker.h - the breaker of the uprobe fallback (SPEC §3): ends a
 * window of allocator probes before they slow the target by more than a
 * few percent.
 *
 * Every probe hit costs the target a trap into the kernel, about
 * HEAP_BREAKER_HIT_NS. The breaker is a token bucket over the target's
 * own CPU time: it starts with HEAP_BREAKER_BURST_NS of probe time, earns
 * HEAP_BREAKER_SLOWDOWN of every nanosecond of CPU time the target spends
 * outside the probes (never holding more than the burst), and spends
 * HEAP_BREAKER_HIT_NS a hit. It trips when it runs dry. So a process is
 * slowed by at most HEAP_BREAKER_SLOWDOWN over the window, plus a one-off
 * HEAP_BREAKER_BURST_NS - which lets a short burst of allocations (a
 * request, a test's workload) be counted whole, while a malloc-heavy loop
 * trips it within a fraction of a second.
 *
 * The caller feeds cumulative counts (CPU time from the process's CPU
 * clock, hits seen plus hits lost). Within one update, work and probes
 * net out before the cap: a steady rate gets the same verdict however
 * its time is cut, but a burst hides behind idle time in the same
 * interval - so updates should come every few milliseconds (the uprobe
 * fallback's come every 10 ms). Pure arithmetic: no system calls, no
 * allocation, no errors.
 */
#ifndef PROFFS_HEAP_BREAKER_H
#define PROFFS_HEAP_BREAKER_H

#include <stdbool.h>
#include <stdint.h>

/*
 * What one probe hit (one record) costs the target, on average. Measured
 * on this VM (kernel 6.18, glibc 2.36) on a thread calling malloc and
 * free in a loop, CPU time per record: malloc's entry 6.0 us, 6.4 us with
 * its 8 KiB stack copy; its return 7.3 us (the uretprobe's second trap);
 * free's entry 20.8 us - free begins with a test, which the kernel must
 * single-step out of line, where malloc's push is emulated. A malloc and
 * its free, three records, average 11.5 us; SPEC §3's 7.5 us was
 * bpftrace counting malloc and free. Rounded up: the breaker errs on the
 * side of the target.
 */
#define HEAP_BREAKER_HIT_NS 12000ull

/*
 * The slowdown allowed: 5% of the target's own CPU time. SPEC §3 says "a
 * few percent". 5% lets a process that makes up to ~2,000 allocator calls
 * per second of its CPU time be profiled for its whole window, and keeps
 * the real slowdown under 7% should HEAP_BREAKER_HIT_NS be off by a third.
 */
#define HEAP_BREAKER_SLOWDOWN 0.05

/*
 * The one-off allowance: 100 ms of probe time, about 8,300 hits (4,000
 * allocations with their returns). Enough for a burst of a few thousand
 * allocations to be counted exactly; the most a target can lose before
 * the rate itself is held to HEAP_BREAKER_SLOWDOWN.
 */
#define HEAP_BREAKER_BURST_NS 100000000ull

struct heap_breaker {
	double tokens_ns;	/* probe time still allowed */
	uint64_t cpu_ns;	/* the last counts fed */
	uint64_t hits;
	bool tripped;
};

/* Start full, at the target's current CPU time and hit count. */
void heap_breaker_init(struct heap_breaker *b, uint64_t cpu_ns,
		       uint64_t hits);

/*
 * Account the target's cumulative CPU time and probe hits. True once the
 * bucket ran dry (and from then on). Counts that go backwards are taken
 * as no change.
 */
bool heap_breaker_update(struct heap_breaker *b, uint64_t cpu_ns,
			 uint64_t hits);

#endif
