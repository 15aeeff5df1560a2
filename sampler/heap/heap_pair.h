/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_pair.h - allocator calls seen by uprobes and uretprobes, paired
 * into allocations and frees (the uprobe fallback, heap_uprobe.h).
 *
 * The caller feeds, per thread and in time order, each probe's event: the
 * entry of an allocation function (registers, so its arguments, and a
 * copy of the stack to unwind later), the return of one (rax, rsp), the
 * entry of free. Pairing rules:
 *
 *   - An entry at stack pointer S is answered by the return at S + 8 (the
 *     return address popped): the pair is found by stack pointer, so a
 *     record the kernel dropped (a full ring) costs its own call only,
 *     and a return need not say which function it is. Entries deeper
 *     than a return, or at or below a new entry's S, have returned
 *     unseen and are dropped - but for a tail call from one probed
 *     function to another (glibc's realloc(NULL, n) jumps to malloc),
 *     whose entry shares S and finds the return address there already
 *     swapped for the uretprobe trampoline: it is nested in the first.
 *   - Only outermost calls count: glibc's realloc(NULL, n) and memalign
 *     call malloc, realloc(p, 0) calls free - each once for the caller.
 *     A call is nested when an entry of the same thread is pending less
 *     than HEAP_PAIR_NEST_SPAN bytes above it on the stack (farther is a
 *     stale entry of another stack: dropped).
 *   - free(p) and realloc's old block are freed at the entry, before the
 *     allocator can hand the block to another thread; the new block is
 *     allocated at the return, with the entry's registers and stack.
 *   - realloc(p, n) returning q: p freed at the entry (a failed realloc
 *     keeps p, but that is rare and the agent does the same); q
 *     allocated with n bytes. calloc(n, m): n * m bytes.
 *     posix_memalign(pp, a, n) returning 0: the block is *pp, read
 *     through ops->read_ptr (from the process, after the fact).
 *
 * The results go to ops: alloc() with the entry's call (its stack copy
 * valid during the callback only), free() with an address.
 *
 * Not thread-safe: one caller. Memory: per thread seen, up to
 * HEAP_PAIR_MAX_NEST pending calls with their stack copies.
 */
#ifndef PROFFS_HEAP_PAIR_H
#define PROFFS_HEAP_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/unwind/unwind.h"

#define HEAP_PAIR_MAX_NEST 8
#define HEAP_PAIR_NEST_SPAN 65536

enum heap_fn {
	HEAP_FN_MALLOC,
	HEAP_FN_CALLOC,
	HEAP_FN_REALLOC,
	HEAP_FN_FREE,
	HEAP_FN_POSIX_MEMALIGN,
	HEAP_FN_ALIGNED_ALLOC,
	HEAP_FN_MEMALIGN,
	HEAP_FN_VALLOC,
	HEAP_FN_PVALLOC,
	HEAP_FN__COUNT,
};

/* The C name of fn ("malloc"). */
const char *heap_fn_name(enum heap_fn fn);

/* A call waiting for its return. */
struct heap_pair_call {
	enum heap_fn fn;
	uint32_t tid;
	struct unwind_regs regs;	/* at the entry */
	const void *stack;		/* copy from regs RSP up */
	size_t stack_len;
};

struct heap_pair_ops {
	/* An outermost call allocated size bytes at addr. */
	void (*alloc)(void *arg, const struct heap_pair_call *c,
		      uint64_t addr, uint64_t size);
	void (*free)(void *arg, uint64_t addr);
	/* The 8 bytes at where in the process (posix_memalign's *pp); 0 or
	 * a negative errno. May be NULL: the block is then counted with no
	 * address (its free goes unseen). */
	int (*read_ptr)(void *arg, uint64_t where, uint64_t *val);
	/* Whether addr is the uretprobe trampoline's (the [uprobes]
	 * page): a return address the kernel swapped in. May be NULL. */
	bool (*trampoline)(void *arg, uint64_t addr);
};

struct heap_pair_stats {
	uint64_t calls;		/* outermost allocation calls paired */
	uint64_t frees;		/* frees passed on */
	uint64_t nested;	/* calls inside another: not counted */
	uint64_t unpaired;	/* returns with no entry (dropped record) */
	uint64_t dropped;	/* entries whose return was never seen */
};

struct heap_pair;

/* ops is copied; arg is passed to it. -ENOMEM. */
int heap_pair_new(const struct heap_pair_ops *ops, void *arg,
		  struct heap_pair **out);
/* NULL is a no-op. */
void heap_pair_free(struct heap_pair *p);

/*
 * The entry of fn on thread tid: registers at the first instruction (the
 * arguments in rdi, rsi, rdx; rsp at the return address) and the stack
 * copy from rsp (copied if kept). 0 or -ENOMEM (the call is then lost).
 */
int heap_pair_entry(struct heap_pair *p, uint32_t tid, enum heap_fn fn,
		    const struct unwind_regs *regs, const void *stack,
		    size_t stack_len);

/* A return on tid: rsp and rax after it. Which call returned is told by
 * rsp alone. */
void heap_pair_return(struct heap_pair *p, uint32_t tid, uint64_t rsp,
		      uint64_t rax);

void heap_pair_stats(const struct heap_pair *p, struct heap_pair_stats *st);

#endif
