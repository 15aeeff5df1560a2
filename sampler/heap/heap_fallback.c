// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * heap_fallback.c - a heap request answered by uprobes instead of the
 * agent. See heap_fallback.h.
 */
#include <errno.h>
#include <stdio.h>

#include "sampler/heap/heap_fallback.h"
#include "sampler/heap/heap_memstats.h"
#include "sampler/heap/uprobe/heap_uprobe.h"
#include "sampler/log.h"
#include "sampler/model/profile.h"

int heap_fallback_profile(struct dso_cache *cache, uint32_t max_stacks,
			  const struct heap_opts *o, const char *why,
			  struct profile **out, struct heap_stats *st)
{
	struct heap_uprobe_opts uo = {
		.pid = o->pid, .window_ms = o->window_ms, .stop = o->stop,
		.cache = cache, .max_stacks = max_stacks,
		.allocs = o->allocs, .why = why,
	};
	struct heap_memstats ms = { 0 };
	struct heap_uprobe_stats us;
	char no_agent[280];
	int ret;

	st->uprobe = true;
	ret = heap_uprobe_profile(&uo, out, &us);
	st->samples = us.samples;
	st->frees = us.frees;
	st->lost = us.lost;
	st->tripped = us.tripped;
	if (ret)
		return ret;
	snprintf(no_agent, sizeof(no_agent), "measured by uprobes over the "
		 "window: %s", why);
	ms.no_agent = no_agent;
	ms.mem_err = heap_mem_read(o->pid, &ms.mem);
	ret = heap_memstats_add(*out, &ms);
	if (ret) {
		profile_free(*out);
		*out = NULL;
	}
	return ret;
}

int heap_fallback_refused(struct dso_cache *cache, uint32_t max_stacks,
			  const struct heap_opts *o, const char *why,
			  struct profile **out, struct heap_stats *st)
{
	char because[240];

	if (!why[0])
		why = "its threads were never all at a safe point";
	if (heap_uprobe_allowed()) {
		pr_warn("heap: pid %d: the agent was refused (%s); no uprobe "
			"fallback without root: start the program with "
			"LD_PRELOAD=libproffs-heap.so, or run proffs as root",
			(int)o->pid, why);
		return -EAGAIN;
	}
	pr_info("heap: pid %d: the agent was refused (%s): uprobes for %llu "
		"ms instead", (int)o->pid, why,
		(unsigned long long)o->window_ms);
	snprintf(because, sizeof(because), "the agent was refused: %s", why);
	return heap_fallback_profile(cache, max_stacks, o, because, out, st);
}
