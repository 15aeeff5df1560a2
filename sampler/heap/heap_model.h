/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_model.h - sampled allocations of one process, aggregated the way
 * Go's runtime keeps its memory profile, and turned into heap / allocs
 * profiles (SPEC §3, §4).
 *
 * Each allocation sample (registers and a stack copy, address, size, the
 * rate it was sampled at) is unwound, its leading frames inside the heap
 * agent dropped, symbolized, and counted in the bucket of its (stack,
 * size), as Go buckets by stack and size. It counts with Go's weight: an
 * allocation of s bytes sampled at mean rate r stands for
 * 1 / (1 - exp(-s / r)) allocations (1 when r <= 1). The sampled address
 * is remembered with its bucket and weight until its free, which takes
 * the same weight back: in use = allocated - freed, per bucket.
 *
 * Snapshots copy the per-bucket counters; a profile is made from one
 * snapshot (everything since the model was reset) or the difference of
 * two (a window, like Go's delta profiles). Sample types are Go's:
 * alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes; period type space/bytes; numeric label "bytes" = the
 * allocation size.
 *
 * Memory grows with distinct buckets and with sampled allocations still
 * live, both bounded by max_buckets. Not thread-safe: the caller
 * serializes. Errors are negative errno values; a sample that cannot be
 * unwound still counts, under an "[unknown]" frame.
 */
#ifndef PROFFS_HEAP_MODEL_H
#define PROFFS_HEAP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_maps;
struct profile;
struct unwind_regs;
struct heap_model;
struct heap_snap;

/*
 * maps is borrowed and must outlive the model. max_buckets bounds memory:
 * past it, new buckets count under one "[max_stacks reached]" frame, and
 * at most HEAP_MODEL_LIVE_PER_STACK times as many sampled blocks are kept
 * live: while that many are, a new tracked sample is dropped (counted by
 * heap_model_dropped() and said in the profile's comments). 0 = no bound.
 */
#define HEAP_MODEL_LIVE_PER_STACK 10
int heap_model_new(pid_t pid, struct proc_maps *maps, uint32_t max_buckets,
		   struct heap_model **out);
void heap_model_free(struct heap_model *m);

/*
 * Unwind past the samples' stack copies with the process's live stack,
 * as CPU profiles do (unwinder_read_live()): for samplers whose copies
 * the kernel cuts (the uprobe fallback's). 0 or -ENOMEM.
 */
int heap_model_read_live(struct heap_model *m);

/* Forget every count and live address; symbols stay. */
void heap_model_reset(struct heap_model *m);

struct heap_alloc_sample {
	const struct unwind_regs *regs;
	const void *stack;	/* copy of the stack from regs RSP */
	size_t stack_len;
	uint64_t addr;
	uint64_t size;
	uint64_t rate;
	bool tracked;		/* its free will be reported */
	unsigned drop_leaf;	/* frames to drop after the agent's */
};

int heap_model_alloc(struct heap_model *m, const struct heap_alloc_sample *s);

/* A sampled address freed: its bucket's in-use counts go down by what its
 * allocation added. Returns true if the address was known. */
bool heap_model_free_addr(struct heap_model *m, uint64_t addr);

/* Counters since the last reset. */
int heap_model_snapshot(struct heap_model *m, struct heap_snap **out);
void heap_snap_free(struct heap_snap *s);

struct heap_profile_info {
	bool allocs;		/* default sample type alloc_space, else
				 * inuse_space */
	int64_t period;		/* the rate, for pprof's period */
	int64_t time_nanos;
	int64_t duration_nanos;
};

/*
 * The profile of `to` minus `from` (from may be NULL: everything in to).
 * Buckets whose four values are all zero are left out. On success *out
 * is a new profile the caller frees.
 */
int heap_model_profile(struct heap_model *m, const struct heap_snap *from,
		       const struct heap_snap *to,
		       const struct heap_profile_info *info,
		       struct profile **out);

/*
 * How many bytes of stack the samples of late needed for their whole
 * unwind, with some slack: the most recent samples' largest use, 0 when
 * unknown or when one ran past its copy (copy all you may). A hint for
 * the agent, which copies no more than that.
 */
size_t heap_model_stack_want(const struct heap_model *m);

/* The four values summed over every bucket since the last reset: Go's
 * estimates of everything allocated, and of what is in use. */
struct heap_totals {
	int64_t alloc_objects, alloc_bytes, inuse_objects, inuse_bytes;
};
void heap_model_totals(const struct heap_model *m, struct heap_totals *t);

/* Allocation samples counted since the last reset, frees matched. */
uint64_t heap_model_samples(const struct heap_model *m);
uint64_t heap_model_frees(const struct heap_model *m);
/* Tracked samples dropped since the last reset: the live set was full. */
uint64_t heap_model_dropped(const struct heap_model *m);

#endif
