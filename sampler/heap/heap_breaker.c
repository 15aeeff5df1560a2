// SPDX-License-Identifier: GPL-2.0-or-later
/* heap_breaker.c - the uprobe fallback's token bucket (heap_breaker.h). */
#include "sampler/heap/heap_breaker.h"

void heap_breaker_init(struct heap_breaker *b, uint64_t cpu_ns,
		       uint64_t hits)
{
	*b = (struct heap_breaker){
		.tokens_ns = (double)HEAP_BREAKER_BURST_NS,
		.cpu_ns = cpu_ns, .hits = hits,
	};
}

bool heap_breaker_update(struct heap_breaker *b, uint64_t cpu_ns,
			 uint64_t hits)
{
	uint64_t dcpu = cpu_ns > b->cpu_ns ? cpu_ns - b->cpu_ns : 0;
	uint64_t dhits = hits > b->hits ? hits - b->hits : 0;
	double spent = (double)dhits * (double)HEAP_BREAKER_HIT_NS;
	/* The CPU clock counts the traps too: only the rest earns. */
	double other = (double)dcpu > spent ? (double)dcpu - spent : 0;

	if (cpu_ns > b->cpu_ns)
		b->cpu_ns = cpu_ns;
	if (hits > b->hits)
		b->hits = hits;
	if (b->tripped)
		return true;
	/* Net, then capped: a steady rate gives the same verdict however
	 * its time is cut into intervals. */
	b->tokens_ns += other * HEAP_BREAKER_SLOWDOWN - spent;
	if (b->tokens_ns > (double)HEAP_BREAKER_BURST_NS)
		b->tokens_ns = (double)HEAP_BREAKER_BURST_NS;
	if (b->tokens_ns < 0)
		b->tripped = true;
	return b->tripped;
}
