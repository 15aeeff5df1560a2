// SPDX-License-Identifier: GPL-2.0-or-later
/* heap_counts.c - sum the agent's counts of calls (heap_counts.h). */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "sampler/heap/heap_counts.h"
#include "sampler/heap/heap_threads.h"

#define TRIES 20
#define TRY_GAP_NS 1000000l	/* a fold takes a few instructions */

/* One sum; false when a fold moved counts meanwhile. */
static int sum_once(pid_t pid, const struct ph_shared *sh,
		    struct heap_counts *c, bool *settled)
{
	/* The header is shared memory the target writes: read it as such. */
	struct ph_shared *h = (struct ph_shared *)sh;
	uint32_t seq = atomic_load(&h->fold_seq);
	struct heap_threads t;
	int ret;

	memset(c, 0, sizeof(*c));
	*settled = false;
	if (seq & 1)
		return 0;
	c->mallocs = atomic_load(&h->folded_mallocs);
	c->frees = atomic_load(&h->folded_frees);
	ret = heap_threads_read(pid, sh->threads, &t);
	if (ret)
		return ret;
	for (unsigned i = 0; i < PH_THREADS; i++) {
		struct ph_budget b;
		uint64_t addr;

		if (!heap_threads_alive(&t, atomic_load(&t.list[i].tid)) ||
		    heap_threads_budget(&t, i, &b, &addr))
			continue;
		c->mallocs += b.mallocs;
		c->frees += 0 - b.frees;
		c->threads++;
	}
	heap_threads_free(&t);
	c->lossy = atomic_load(&h->count_flags) & PH_COUNT_NO_EXIT_HOOK;
	*settled = atomic_load(&h->fold_seq) == seq;
	return 0;
}

int heap_counts_read(pid_t pid, const struct ph_shared *sh,
		     struct heap_counts *c)
{
	struct timespec gap = { 0, TRY_GAP_NS };
	bool settled;

	for (unsigned k = 0; k < TRIES; k++) {
		int ret = sum_once(pid, sh, c, &settled);

		if (ret || settled)
			return ret;
		nanosleep(&gap, NULL);
	}
	return -EAGAIN;
}
