/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_ring.h - the memory the heap agent (libproffs-heap.so, inside the
 * target) shares with the daemon: a header of counters and settings, then
 * a ring of variable-length records.
 *
 * The agent creates it on load as a memfd named PH_RING_NAME, so the daemon
 * finds it among /proc/PID/fd and maps it too; nothing else is exchanged.
 *
 * The ring: many producers (the target's threads), one consumer (the
 * daemon). A producer reserves bytes by a compare-and-swap on head, writes
 * its record, and commits it by storing its commit word last (release):
 * the record's length and its own position (ph_commit()). A record never
 * wraps: one that would is preceded by a PH_REC_PAD record filling the
 * end of the buffer, in the same reservation. The consumer reads records
 * in order from tail while the word at tail names tail's position - what
 * an earlier lap left there names another - then advances tail. Nothing
 * is zeroed: each record's bytes cross between the cores once.
 * Positions are byte counts that only grow; offset = position % ring_size.
 *
 * Who writes what: fields under "agent" only by the agent, under "daemon"
 * only by the daemon. All are naturally aligned 32/64-bit words, accessed
 * with C11 atomics on both sides (lock-free on x86-64).
 *
 * Both sides include this file: it must stay free of library headers but
 * <stdint.h> and <stdatomic.h>.
 */
#ifndef PROFFS_HEAP_RING_H
#define PROFFS_HEAP_RING_H

#include <stdatomic.h>
#include <stdint.h>

#define PH_MAGIC 0x70686666666f7270ull	/* "proffhph" little-endian-ish */
#define PH_VERSION 6
#define PH_RING_NAME "proffs-heap-ring"	/* memfd: /memfd:proffs-heap-ring */
#define PH_AGENT_NAME "proffs-heap"	/* memfd of the injected agent */
#define PH_HEADER_SIZE 4096		/* ring data starts here */
#define PH_RING_SIZE (4u << 20)		/* bytes of records, power of two */
#define PH_RING_MIN (1u << 20)		/* PROFFS_HEAP_RING_MB may choose */
#define PH_RING_MAX (1u << 30)		/* between these */
/* Stack copied per sample at most: as much as the daemon's unwinding of
 * late needed (ph_shared.stack_want), up to the end of the thread's
 * stack, so only deep stacks pay for it. */
#define PH_STACK_BYTES (64 * 1024)
#define PH_LEASE_MS 3000		/* no heartbeat this long: disarm */
#define PH_DEFAULT_RATE 524288		/* Go's MemProfileRate */
#define PH_THREADS 4096			/* threads the daemon can reach */

/* The exported function the daemon calls in the target to arm again. */
#define PH_ARM_SYMBOL "proffs_heap_arm"

enum ph_state {
	PH_DISARMED = 0,	/* GOT entries original: zero cost */
	PH_ARMED = 1,		/* GOT entries point at the agent's hooks */
};

enum ph_rec_type {
	PH_REC_PAD = 1,		/* skip to the end of the buffer */
	PH_REC_ALLOC = 2,	/* struct ph_alloc */
	PH_REC_FREE = 3,	/* struct ph_free */
};

/* ph_shared.count_flags */
#define PH_COUNT_NO_EXIT_HOOK 1	/* no thread-exit hook (no pthread key
				 * left): the counts of threads that ended
				 * are lost */

/* ph_shared.why: why the agent disarmed itself last, or refuses to arm
 * (issue 25: a hook is never a trap) */
enum ph_why {
	PH_WHY_NONE = 0,
	PH_WHY_LEASE = 1,	/* the daemon's heartbeat stopped */
	PH_WHY_NO_REAL = 2,	/* malloc or free has no definition */
	PH_WHY_LOOP = 3,	/* a real function leads back into a hook */
	PH_WHY_RING = 4,	/* the ring's tail is impossible */
	PH_WHY_STUCK = 5,	/* the ring stayed full, its tail still,
				 * for a second of a live daemon's */
};

/* ph_shared.py: CPython's own allocator (pymalloc), wrapped or not
 * (agent/pymem.c) */
enum ph_py {
	PH_PY_UNSEEN = 0,	/* not looked for yet */
	PH_PY_NONE = 1,		/* no CPython in the process */
	PH_PY_FOUND = 2,	/* CPython, not initialized: not queued yet */
	PH_PY_QUEUED = 3,	/* the pending call that wraps it is queued */
	PH_PY_WRAPPED = 4,	/* pymalloc's blocks are sampled too */
	PH_PY_NOT_PYMALLOC = 5,	/* another allocator (PYTHONMALLOC, debug
				 * hooks, tracemalloc): malloc's hooks see
				 * its blocks already */
};

/* ph_alloc.flags */
#define PH_ALLOC_UNTRACKED 1	/* the live table was full: no free will
				 * be reported for this address */

/* Registers in libunwind's x86-64 numbering (see sampler/unwind.h). */
#define PH_NREGS 17

struct ph_rec {
	_Atomic uint64_t commit;	/* ph_commit(position, length) */
	uint16_t type;		/* enum ph_rec_type */
	uint16_t flags;
	uint32_t pad;
};

/*
 * The commit word of a record of len bytes (PH_ALIGN-aligned, < 2^24) at
 * position pos: 40 bits of pos / 8 - a tag that repeats only after 8 TiB
 * of records - above the length.
 */
static inline uint64_t ph_commit(uint64_t pos, uint32_t len)
{
	return ((pos >> 3) & ((1ull << 40) - 1)) << 24 | len;
}

static inline uint32_t ph_commit_len(uint64_t commit)
{
	return (uint32_t)(commit & ((1u << 24) - 1));
}

struct ph_alloc {
	struct ph_rec h;
	uint32_t tid;
	uint32_t stack_len;	/* bytes of stack[] that are valid */
	uint64_t addr;
	uint64_t size;		/* bytes asked for */
	uint64_t rate;		/* the sampling rate it was taken at */
	uint64_t regs[PH_NREGS];	/* at the capture point in the agent */
	uint8_t stack[];	/* copied from regs[RSP] upwards */
};

struct ph_free {
	struct ph_rec h;
	uint32_t tid;
	uint32_t pad;
	uint64_t addr;
};

/*
 * A thread's sampling budget and its counts of calls, in its thread-local
 * storage. The hooks' fast path reads only left, never the shared rate: a
 * thread that drew its budget at a higher rate keeps it after the rate
 * drops. So when the rate drops the daemon zeroes left in every thread
 * whose gen is older (sampler/heap_budget.c), and each draws anew, at the
 * new rate, at its next allocation. The daemon reaches the budgets through
 * the agent's list of threads (ph_shared.threads): a thread enters it at
 * its first call of a hook, and leaves it when it ends. The daemon writes
 * nothing here but left, and only where self and tid say the memory is
 * still that thread's budget.
 *
 * mallocs and frees count every call, in the thread that makes it, with
 * plain increments (sampler/heap_counts.c sums them). frees counts down:
 * the borrow out of 0 of the free fast path's subtraction is how it sees
 * a thread's first free (it enlists the thread). When a
 * thread ends, or cannot be listed, its counts are folded into
 * ph_shared.folded_* and it counts there from then on (folded).
 */
struct ph_budget {
	uint64_t left;		/* bytes until the next sample */
	uint64_t mallocs;	/* allocation calls (malloc & co., new) */
	uint64_t frees;		/* minus the frees of a block (not NULL) */
	uint64_t self;		/* its own address, once listed */
	uint32_t gen;		/* ph_shared.rate_gen left was drawn under */
	uint32_t tid;
	uint64_t rate;		/* the rate left was drawn at */
	uint64_t rng;
	uint32_t in_hook;	/* sampling now: a nested call does not */
	uint32_t folded;	/* counts go to ph_shared.folded_* */
	uint64_t parked;	/* folded: the budget (left stays 0, so
				 * every call takes the slow path) */
	uint32_t slot;		/* its entry in the list + 1; 0: none */
	uint32_t chained;	/* hooks entered by jumps from a hook's call
				 * of a real function (agent.c's guard) */
};

struct ph_thread {
	_Atomic uint32_t tid;	/* 0: free (the agent takes it at a
				 * thread's first call, gives it back at
				 * the thread's end) */
	uint32_t pad;
	_Atomic uint64_t budget;	/* the thread's struct ph_budget */
};

struct ph_shared {
	/* constant after creation */
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;	/* PH_HEADER_SIZE */
	uint64_t ring_size;	/* PH_RING_SIZE */
	int32_t pid;		/* the process that created it */
	uint32_t stack_bytes;	/* PH_STACK_BYTES */
	uint64_t threads;	/* the agent's struct ph_thread[PH_THREADS],
				 * in its memory, not in this one */

	/* agent */
	_Atomic uint64_t head __attribute__((aligned(64)));
	_Atomic uint64_t lost;		/* records dropped: ring full */
	_Atomic uint64_t untracked;	/* allocations whose free is unseen */
	_Atomic uint64_t samples;	/* allocation records written */
	_Atomic uint64_t frees;		/* free records written */
	_Atomic uint32_t state;		/* enum ph_state */
	_Atomic uint32_t epoch;		/* bumped by every arm */
	_Atomic uint32_t disarms;	/* times the agent disarmed itself */
	_Atomic uint32_t objects;	/* objects whose GOT it redirected */
	_Atomic uint32_t slots;		/* GOT entries it redirected */
	_Atomic uint32_t direct;	/* hooks leaving by a direct jump (0-2) */

	/* agent: the counts of threads that no longer count in their
	 * budget (ended, or never listed). A fold moves a thread's counts
	 * here with fold_seq odd: a reader that saw it change (or odd)
	 * read while counts moved, and reads again. */
	_Atomic uint64_t folded_mallocs __attribute__((aligned(64)));
	_Atomic uint64_t folded_frees;
	_Atomic uint32_t fold_seq;
	_Atomic uint32_t count_flags;	/* PH_COUNT_* */
	/* agent: a hook entered on a thread already inside a hook's call
	 * of the real function (the allocator or a signal handler
	 * allocating): it called the real function and nothing else */
	_Atomic uint64_t reentries;
	_Atomic uint32_t why;		/* enum ph_why */
	_Atomic uint32_t py;		/* enum ph_py */

	/* daemon */
	_Atomic uint64_t tail __attribute__((aligned(64)));
	_Atomic uint64_t rate;		/* mean bytes between samples */
	_Atomic uint32_t rate_gen;	/* bumped on every rate change */
	_Atomic int32_t daemon_pid;	/* 0 until a daemon attaches */
	_Atomic uint64_t heartbeat;	/* bumped while samples are wanted */
	_Atomic uint32_t stack_want;	/* stack to copy per sample, at most
					 * stack_bytes; 0 = stack_bytes */
};

_Static_assert(sizeof(struct ph_shared) <= PH_HEADER_SIZE,
	       "header fits its page");
/*
 * Records are multiples of PH_ALIGN long, so every record starts on such
 * a boundary and the space left at the end of the buffer, when there is
 * any, holds at least a header (for the PAD record).
 */
#define PH_ALIGN 16
_Static_assert(sizeof(struct ph_rec) <= PH_ALIGN, "a header fits the end");
_Static_assert(sizeof(struct ph_free) % PH_ALIGN == 0, "aligned records");

/* The length of a record of n bytes. */
static inline uint32_t ph_rec_len(uint64_t n)
{
	return (uint32_t)((n + PH_ALIGN - 1) & ~(uint64_t)(PH_ALIGN - 1));
}

#endif
