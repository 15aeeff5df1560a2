/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap.h - heap and allocs profiles of running processes (SPEC §3).
 *
 * The first heap or allocs request for a process loads the agent
 * (libproffs-heap.so) into it - or arms an agent that is there already
 * (preloaded, or disarmed after a quiet while) - with every thread held
 * at a safe point (inject.h). From then on a consumer thread of the
 * daemon drains the agent's ring every few milliseconds into a heap model
 * (heap_model.h) and keeps the agent's lease alive while sessions use it
 * and for idle_s seconds after the last one; then the agent disarms itself
 * and the daemon forgets the process.
 *
 * heap_profile() answers one request:
 *   - with a window: the difference over the window (Go's delta profile);
 *   - without one: everything since the agent was armed, at once - except
 *     when this very request armed it, which then waits window_ms (the
 *     request's default 30 s) so there is something to see.
 * While any session runs the agent samples at the smallest rate asked
 * (finer sampling never biases: each sample carries its rate).
 *
 * The uprobe fallback (heap_uprobe.h) answers instead with method
 * HEAP_UPROBE, and with HEAP_AUTO where the agent cannot be loaded (no
 * dlopen in the process: a static binary; no agent file): uprobes and
 * uretprobes on the allocator count every call of a window - always a
 * window, the request's default (30 s) when it names none - until the
 * breaker (heap_breaker.h) ends it early because the probes would slow
 * the process by more than a few percent. Nothing is kept between
 * requests: each one places its probes and takes them out. Its profiles
 * say so in a comment, and heap_stats.uprobe is set. Root only (-EPERM,
 * with a log line, otherwise; heap_agents_check() tells at open).
 *
 * Thread-safe. Errors: -ESRCH (gone), -EPERM / -EACCES (ptrace refused,
 * or uprobes without root), -EBUSY (traced by someone else), -EAGAIN
 * (threads never all safe), -ENOTSUP (no way to load the agent and no
 * fallback), -ENOMEM, -ECANCELED (stop was set).
 */
#ifndef PROFFS_HEAP_H
#define PROFFS_HEAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/heap/heap_request.h"

struct dso_cache;
struct profile;
struct heap_agents;

enum heap_method {
	HEAP_AUTO,	/* the agent; uprobes where it cannot load */
	HEAP_AGENT,	/* the agent only */
	HEAP_UPROBE,	/* uprobes only */
};

struct heap_agents_opts {
	struct dso_cache *cache;	/* shared with other sessions */
	struct turns *turns;		/* the daemon's, or NULL (turns.h) */
	const char *agent_path;		/* libproffs-heap.so; copied */
	unsigned idle_s;		/* lease kept after the last session */
	uint32_t max_stacks;		/* buckets per process (memory) */
	enum heap_method method;
};

int heap_agents_new(const struct heap_agents_opts *o,
		    struct heap_agents **out);

/* Stop every consumer (their agents disarm by themselves once the lease
 * runs out) and free. NULL is a no-op. */
void heap_agents_free(struct heap_agents *a);

/* Whether heap requests can be answered at all, known before any is
 * made: -EPERM when the method is HEAP_UPROBE and the daemon may not
 * place uprobes (not root), else 0. Logs nothing. */
int heap_agents_check(const struct heap_agents *a);

/* Agent loads and arms since heap_agents_new(), and how they ended. */
#define HEAP_ERRNO_MAX 134	/* failed[] by errno, below this */
struct heap_agent_counts {
	unsigned long long loaded;	/* dlopen()ed into a process */
	unsigned long long armed;	/* there already, armed again */
	unsigned long long harmed;	/* the process crashed or spun in
					 * the agent soon after (issue 25) */
	unsigned long long throttled;	/* a process's default rate made
					 * coarser (heap_throttle.h) */
	unsigned long long failed[HEAP_ERRNO_MAX];	/* by errno; [0]: other */
};

/* A snapshot of the counts; thread-safe. */
void heap_agents_counts(struct heap_agents *a, struct heap_agent_counts *c);

int heap_profile(struct heap_agents *a, const struct heap_opts *o,
		 struct profile **out, struct heap_stats *st);

/*
 * Go's runtime.MemStats of o->pid (o->stop and pid only), as the figures
 * of a profile without samples (heap_memstats.h): the agent's counts and
 * estimates since it was armed - loading or arming it first, as
 * heap_profile() does, but answering at once - and what /proc says.
 * Where the agent cannot be loaded (HEAP_AUTO) or is not used
 * (HEAP_UPROBE), /proc's figures alone, and a note saying why. Every
 * heap profile made by heap_profile() carries the same figures.
 */
int heap_memstats(struct heap_agents *a, const struct heap_opts *o,
		  struct profile **out, struct heap_stats *st);

#endif
