/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * run.h - one profiling session's work: take the profile its kind asks
 * for with the sampler (the run function of the kind's row, kinds.h), and log the session's one line of outcome (pid,
 * kind, window, what was measured, how long it took, the result), as an
 * operator reads them in syslog.
 *
 * Blocking, on the session's thread. The caller owns everything in the
 * context; on success *out is a new profile the caller frees. Errors are
 * the sampler's negative errno values (-ECANCELED when stop was set).
 */
#ifndef PROFFS_RUN_H
#define PROFFS_RUN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/core/request.h"
#include "sampler/offcpu/offcpu.h"

struct dso_cache;
struct heap_agents;
struct kallsyms;
struct pybpf_keep;
struct profile;
struct recorder;

struct run_ctx {
	unsigned id;			/* the session's number, for the log */
	pid_t pid;			/* 0: every process uid may profile */
	uid_t uid;			/* REG_ANY_UID (-1): every process */
	const struct proffs_request *req;	/* kind, window, hz, rate */
	const _Atomic bool *stop;
	struct dso_cache *dsos;
	struct turns *turns;		/* whose turn to ptrace a target */
	struct heap_agents *heap;
	struct kallsyms *ksyms;		/* names kernel frames */
	struct pybpf_keep *pykeep;	/* Python's eBPF readers, kept */
	unsigned max_stacks;
	enum offcpu_method offcpu;	/* how wall, block, mutex are taken */
	struct recorder *rec;		/* NULL without -o record */
};

/* What a session measured, for the daemon's counters; filled on failure
 * too (what was measured before it failed). */
struct run_outcome {
	uint64_t samples;	/* samples the profile holds */
	uint64_t lost;		/* samples dropped (a ring was full) */
	uint64_t elapsed_ms;	/* start to end, window included */
};

/* What a kind reports of itself on the session's line. */
struct run_result {
	char detail[384];	/* "samples=... lost=..." */
	uint64_t window_ms;	/* kinds_window_ms(); 0 for a snapshot */
	uint64_t samples, lost;
	char harm[240];		/* the target was harmed (issue 25): how */
};

/*
 * The kinds' run functions (kind_ops.run, kinds.h): each fills its
 * sampler's options from c, takes the profile and writes r->detail.
 * Called by dispatch_run() alone, r->window_ms already set.
 */
int run_cpu(const struct run_ctx *c, struct profile **out,
	    struct run_result *r);
int run_offcpu(const struct run_ctx *c, struct profile **out,
	       struct run_result *r);	/* wall, block, mutex */
int run_threads(const struct run_ctx *c, struct profile **out,
		struct run_result *r);
int run_heap(const struct run_ctx *c, struct profile **out,
	     struct run_result *r);	/* heap, allocs */
int run_memstats(const struct run_ctx *c, struct profile **out,
		 struct run_result *r);

#endif
