/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_fallback.h - a heap or allocs request answered by the uprobe
 * fallback (heap_uprobe.h) instead of the agent, for heap.c: always over
 * a window (the request's), with the MemStats /proc gives and a comment
 * saying why the agent was not used.
 *
 * heap_fallback_refused() is heap=auto's answer when the agent was
 * refused (-EAGAIN: its threads were never all at a safe point). Reading
 * again may not help - a thread that lives where no rule knows it safe
 * is found there every time - so the read is measured by uprobes, saying
 * why, and the next read tries the agent again. Without the right to
 * place uprobes (not root) it stays -EAGAIN, with a log line saying what
 * to do.
 *
 * The cache is borrowed. Returns 0 with *out (the caller's), or a
 * negative errno (heap_uprobe_profile()'s, or -EAGAIN); st is filled as
 * far as the window went. Thread-safe.
 */
#ifndef PROFFS_HEAP_FALLBACK_H
#define PROFFS_HEAP_FALLBACK_H

#include <stdint.h>

#include "sampler/heap/heap_request.h"

struct dso_cache;
struct profile;

int heap_fallback_profile(struct dso_cache *cache, uint32_t max_stacks,
			  const struct heap_opts *o, const char *why,
			  struct profile **out, struct heap_stats *st);

/* why: the refusal's reason ("" when unknown). */
int heap_fallback_refused(struct dso_cache *cache, uint32_t max_stacks,
			  const struct heap_opts *o, const char *why,
			  struct profile **out, struct heap_stats *st);

#endif
