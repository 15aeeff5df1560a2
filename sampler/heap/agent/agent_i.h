/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * agent_i.h - the pieces of libproffs-heap.so, the heap sampling agent that
 * runs inside a target process (SPEC §3, heap / allocs).
 *
 *   agent.c  the allocation hooks, Poisson sampling, arming and disarming
 *   fast.c   the fast paths of the malloc and free hooks, in assembly
 *   dlopen.c following objects loaded later (dlopen, dlmopen)
 *   got.c    redirecting GOT entries of every loaded object to the hooks
 *   live.c   the set of sampled addresses still live, probed by free()
 *   resolve.c finding the real functions by definition, and proving
 *            that none leads back into the agent
 *   pymem.c  wrapping CPython's own allocator, pymalloc
 *   ring.c   the producer side of the ring shared with the daemon
 *   stack.c  copying the top of the calling thread's stack
 *
 * Everything here may run inside malloc, in any thread, in a signal handler:
 * no allocation, no blocking lock on the allocation path, no unwinding, no
 * libc call that may allocate. Every symbol is hidden but the arm function.
 * Functions return 0 / true on success; failures are counted in the shared
 * header, never reported to the target.
 */
#ifndef PROFFS_AGENT_I_H
#define PROFFS_AGENT_I_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/heap/agent/heap_ring.h"

#define PH_HIDDEN __attribute__((visibility("hidden")))

/* PREFETCHW is there (CPUID 0x80000001 ECX bit 8: AMD since the K6,
 * Intel since Broadwell); set by ring_create(). */
PH_HIDDEN extern bool ph_prefetchw;

/* A hint that this core will write the line at p soon: it comes owned
 * meanwhile, rather than at the store, with the program waiting. */
static inline void prefetch_for_write(const void *p)
{
	if (ph_prefetchw)
		__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
}

/* ---- got.c ---- */

/* One function whose GOT entries are redirected. */
struct got_hook {
	const char *name;	/* the symbol a relocation names */
	void *hook;		/* what the entry is set to */
};

/*
 * Point every GOT entry (JUMP_SLOT and GLOB_DAT relocations) that names one
 * of hooks[0..n) at its hook, in every loaded object but the one holding
 * self. With all_objects false, objects whose RELRO is still writable (the
 * dynamic loader may be relocating them right now) are left for later and
 * counted in *pending. Returns the number of entries redirected now.
 * Serialized internally; a concurrent caller returns -1 at once.
 */
PH_HIDDEN int got_redirect(const struct got_hook *hooks, size_t n,
			   const void *self, bool all_objects,
			   unsigned *pending);

/* Put back the original value of every entry still pointing at a hook,
 * in objects still loaded. Returns the number restored, -1 when busy. */
PH_HIDDEN int got_restore(const struct got_hook *hooks, size_t n);

/* In a forked child, the only thread: a walk the parent was doing when
 * it forked will never end here. */
PH_HIDDEN void got_after_fork(void);

/* Objects with at least one redirected entry, at the last redirect. */
PH_HIDDEN unsigned got_objects(void);

/* ---- resolve.c ---- */

/* The function the dynamic loader binds name to for a shared object:
 * its first definition in load order, in an object other than the one
 * holding self (never an executable's canonical PLT stub); NULL if
 * none. */
PH_HIDDEN void *resolve_real(const char *name, const void *self);
/* The span of the object holding self, from its first mapping to the
 * end of its last. */
PH_HIDDEN void resolve_self(const void *self, uintptr_t *lo, uintptr_t *hi);
/* Where the code at fn, followed through its jumps (PLT stubs, GOT
 * entries as they are now), enters [lo, hi); 0 when it never does, 1
 * when it cannot be read or the chain is too long. */
PH_HIDDEN uintptr_t real_chase(const void *fn, uintptr_t lo, uintptr_t hi);
/* real_chase() != 0: anything but code of its own, outside [lo, hi). */
PH_HIDDEN bool real_leads_back(const void *fn, uintptr_t lo, uintptr_t hi);

/* ---- live.c ---- */

/* Map the tables; 0 or -1. Called once, before any other live_ call. */
PH_HIDDEN int live_init(void);
/* Forget every address (at arm, when no hook can run). */
PH_HIDDEN void live_reset(void);
/* Remember p; false when the tables have no room for it. */
PH_HIDDEN bool live_insert(uintptr_t p);
/* The counting filter in front of the tables: one byte per bucket, a
 * bucket per 16-byte granule of a 1 MiB window (malloc's alignment), so
 * blocks near each other never share one. In .bss: free() indexes it
 * without loading a pointer first. */
#define LIVE_FILTER_BITS 16
PH_HIDDEN extern _Atomic uint8_t live_filter[1u << LIVE_FILTER_BITS];

static inline size_t live_bucket(uintptr_t p)
{
	return (p >> 4) & ((1u << LIVE_FILTER_BITS) - 1);
}

/* Cheap test, inlined into free(): false means p is certainly not in
 * the set. */
static inline bool live_maybe(uintptr_t p)
{
	return atomic_load_explicit(&live_filter[live_bucket(p)],
				    memory_order_relaxed) != 0;
}
/* p is about to be inserted (prefetch_for_write of its slot). */
PH_HIDDEN void live_prefetch(uintptr_t p);
/* Forget p; true if it was there. */
PH_HIDDEN bool live_remove(uintptr_t p);

/* ---- ring.c ---- */

/* Create and map the shared memfd; NULL on failure. */
PH_HIDDEN struct ph_shared *ring_create(void);
/* The threads the daemon can reach (ph_shared.threads): enlisted by
 * agent.c, at their first budget. */
PH_HIDDEN extern struct ph_thread agent_threads[PH_THREADS];
/* What a record may do when the ring is full. */
enum ph_wait {
	PH_NO_WAIT,	/* drop it (nested in a sample: we might wait on
			 * our own uncommitted record) */
	PH_WAIT,	/* wait for the daemon, up to a second */
	PH_WAIT_BUDGET,	/* likewise, out of a budget of 10% of the time */
};

/*
 * Reserve len bytes (ph_rec_len()) for one record at *pos. When the ring is
 * full, waits as wait allows while daemon_alive() holds; else (or then)
 * counts the record as lost and returns NULL.
 */
PH_HIDDEN void *ring_reserve(struct ph_shared *sh, uint32_t len,
			     enum ph_wait wait, uint64_t *pos);
/* The next len bytes of the ring are wanted soon (prefetch_for_write). */
PH_HIDDEN void ring_prefetch(struct ph_shared *sh, uint32_t len);
/* Publish a reserved record: type and flags, then its commit word. */
PH_HIDDEN void ring_commit(void *rec, uint64_t pos, uint32_t len,
			   uint16_t type, uint16_t flags);

/* ---- dlopen.c ---- */

/* The trampolines the GOT entries of dlopen and dlmopen point at. */
PH_HIDDEN void ph_dlopen_tramp(void);
PH_HIDDEN void ph_dlmopen_tramp(void);
/* The real functions, set by agent.c; dlopen calls so far. */
PH_HIDDEN extern void *ph_real_dlopen, *ph_real_dlmopen;
PH_HIDDEN extern _Atomic uint32_t ph_dlopen_calls;
/* Once, at load: may the trampolines return through the caller's code? */
PH_HIDDEN void dlopen_init(void);

/* ---- stack.c ---- */

/* Bytes from sp up to at most max that memcpy may copy (the end of this
 * thread's stack mapping); 0 when unknown: use stack_copy_syscall(). */
PH_HIDDEN uint32_t stack_room(uintptr_t sp, uint32_t max);
/* Copy up to max bytes from sp, stopping at the first unmapped page;
 * returns the bytes copied. A system call. */
PH_HIDDEN uint32_t stack_copy_syscall(uint8_t *dst, uintptr_t sp,
				      uint32_t max);

/* ph_capture(regs): the registers of its caller as they are after the
 * call returns (callee-saved ones, rsp and rip), for the daemon's
 * unwinding. */
PH_HIDDEN void ph_capture(uint64_t *regs);

/* ---- fast.c ---- */

/* The hooks of malloc and free; their fast paths. */
PH_HIDDEN void *ph_h_malloc(size_t n);
PH_HIDDEN void ph_h_free(void *p);
/*
 * Set where the two hooks go on (the real malloc and free), and make
 * their exits direct jumps where that can be done. Once, before any GOT
 * entry points at them. Returns how many exits are direct (0-2).
 */
PH_HIDDEN unsigned fast_direct(void *malloc_fn, void *free_fn);

/* ---- pymem.c ---- */

/* In a CPython target, queue the wrapping of pymalloc (once, while the
 * process is stopped for an arm). Returns enum ph_py. */
PH_HIDDEN uint32_t pymem_arm(void);

/* ---- agent.c ---- */

/* For pymem.c's wrapper, GIL held: sample a pymalloc block of n bytes?
 * False when not armed, nested, or within this thread's budget. */
PH_HIDDEN bool agent_py_take(size_t n, uint64_t *rate);
/* Around the sampled call of the original allocator (agent.c's guard). */
PH_HIDDEN uint64_t agent_py_guard_enter(void);
PH_HIDDEN void agent_py_guard_exit(uint64_t left);
/* Record the sample; p, maybe sampled, is freed (armed only). */
PH_HIDDEN void agent_py_sample(void *p, size_t n, uint64_t rate);
PH_HIDDEN void agent_py_free(void *p);
/* pymem.c's state changed (enum ph_py): into ph_shared.py. */
PH_HIDDEN void agent_py_publish(uint32_t state);


/* This thread's budget and counts; the fast paths read left, its first
 * field, and count in the next two. */
PH_HIDDEN extern __thread struct ph_budget ph_tls
	__attribute__((tls_model("initial-exec"), aligned(64)));
/* The rest of malloc and free past their fast paths (sampling, or a
 * maybe-sampled block freed); ph_free_first: free found its count at 0
 * (the thread's first free, or its counts are folded), counted already. */
PH_HIDDEN void *ph_malloc_slow(size_t n);
PH_HIDDEN void ph_free_slow(void *p);
PH_HIDDEN void ph_free_first(void *p);

/* Redirect objects loaded since the last look (armed only). */
PH_HIDDEN void agent_rescan(void);

/* The one exported function (PH_ARM_SYMBOL): arm again after a disarm.
 * Returns the GOT entries redirected, or -1. */
__attribute__((visibility("default"))) int proffs_heap_arm(void);

/* The ring cannot be used (enum ph_why): disarm. */
PH_HIDDEN void agent_ring_failed(enum ph_why why);

/* A daemon is attached and its heartbeat is fresh. */
PH_HIDDEN bool daemon_alive(void);

/* monotonic nanoseconds, from the vDSO */
PH_HIDDEN uint64_t agent_now_ns(void);

#endif
