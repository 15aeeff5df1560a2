// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * heap_comments.c - the comments of a heap or allocs profile made by the
 * agent (heap_comments.h).
 */
#include <stdio.h>

#include "sampler/heap/agent/heap_ring.h"
#include "sampler/heap/heap_comments.h"
#include "sampler/heap/heap_throttle.h"
#include "sampler/log.h"
#include "sampler/model/profile.h"
#include "sampler/window.h"

/*
 * An empty profile should say why (issue 16: C++ programs on tcmalloc
 * gave "samples=0 result=ok" and nothing else): no allocation function
 * hooked at all, or none of the hooked ones called in the window.
 */
static int add_empty_comment(struct profile *p,
			     const struct heap_comment_info *c)
{
	char text[240];

	if (c->slots && c->samples)
		return 0;
	if (!c->slots)
		snprintf(text, sizeof(text), "proffs: the agent found no call "
			 "of an allocation function it hooks (malloc & co., "
			 "operator new of an allocator other than libstdc++) "
			 "in any loaded object: nothing can be sampled");
	else
		snprintf(text, sizeof(text), "proffs: no allocation was "
			 "sampled (%u call sites hooked in %u objects): the "
			 "process allocated less than the rate, or not through "
			 "malloc & co. or operator new", c->slots, c->objects);
	pr_notice("heap: pid %d: %s", (int)c->pid, text + 8);
	return profile_add_comment(p, text);
}

/* What became of CPython's own allocator (agent/pymem.c), in a CPython
 * process; NULL elsewhere. */
static const char *py_note(uint32_t py)
{
	switch (py) {
	case PH_PY_WRAPPED:
		return "proffs: CPython's own allocator (pymalloc) is sampled "
		       "too; stacks carry native frames only";
	case PH_PY_QUEUED:
		return "proffs: CPython's pymalloc is not sampled yet: its "
		       "main thread has not run Python code since the agent "
		       "asked it to wrap its allocator";
	case PH_PY_FOUND:
		return "proffs: CPython's pymalloc is not sampled: the "
		       "interpreter was not running when the agent armed";
	case PH_PY_NOT_PYMALLOC:
		return "proffs: CPython allocates through another allocator "
		       "than pymalloc here (PYTHONMALLOC, debug hooks or "
		       "tracemalloc): only what reaches malloc is sampled";
	default:
		return NULL;
	}
}

int heap_add_comments(struct profile *p, const struct heap_comment_info *c)
{
	char text[320];
	int ret = 0;

	if (c->harm) {
		snprintf(text, sizeof(text), "proffs: ERROR: the process was "
			 "harmed after the heap agent was loaded into it: %s",
			 c->harm);
		ret = profile_add_comment(p, text);
	}
	snprintf(text, sizeof(text), "proffs: sampled inside the process by "
		 "libproffs-heap, one allocation per %llu bytes on average",
		 (unsigned long long)c->rate);
	if (!ret)
		ret = profile_add_comment(p, text);
	if (!ret && c->throttled) {
		snprintf(text, sizeof(text), "proffs: the process allocated "
			 "so fast that the default rate (%llu bytes) would take "
			 "more than %llu samples a second, so it was made "
			 "coarser (now %llu); every sample is weighted by its "
			 "own rate, so the figures stay unbiased: %llu samples",
			 (unsigned long long)c->asked, HEAP_THROTTLE_PER_S,
			 (unsigned long long)c->rate,
			 (unsigned long long)c->samples);
		ret = profile_add_comment(p, text);
	}
	if (!ret && c->lost) {
		snprintf(text, sizeof(text), "proffs: %llu samples were dropped "
			 "(%.1f%%): the daemon fell behind, or the ring filled "
			 "before the first read; totals are low by as much",
			 (unsigned long long)c->lost,
			 100.0 * c->lost / (c->lost + c->samples));
		ret = profile_add_comment(p, text);
	}
	if (!ret && py_note(c->py))
		ret = profile_add_comment(p, py_note(c->py));
	if (!ret)
		ret = window_note_exit(c->window, p, c->elapsed_ns);
	if (!ret)
		ret = add_empty_comment(p, c);
	return ret;
}
