// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pymem.c - Python's own objects in the heap profile (issue 25, item 5).
 *
 * CPython hands most objects out of pymalloc's arenas, memory it maps
 * itself and carves without calling malloc: the malloc hooks saw a Python
 * program's heap as nearly empty. So in a CPython target (the symbols
 * below defined by the executable, as Debian's statically linked
 * python3.11 does, or by a libpython) the agent also wraps the
 * interpreter's allocator of the PYMEM_DOMAIN_MEM and PYMEM_DOMAIN_OBJ
 * domains, the way tracemalloc does: PyMem_GetAllocator() the original,
 * PyMem_SetAllocator() a wrapper whose context is that original.
 *
 * Those two domains may only be used and changed with the GIL held, so
 * the wrapper is installed by the interpreter itself: the agent queues
 * py_install() with Py_AddPendingCall(), which CPython runs in the main
 * thread, in its eval loop, with the GIL held. Py_AddPendingCall needs
 * neither the GIL nor a Python thread state (3.11: it falls back to the
 * main interpreter); it takes the pending-calls lock for a few
 * instructions, which no thread holds while it is stopped for a load but
 * one inside Py_AddPendingCall or make_pending_calls; CPython 3.11 itself
 * never queues pending calls (signals go another way), and the agent
 * queues once per process, so that lock is free whenever the daemon
 * stops the target to load or arm the agent, which is when this runs.
 * It is queued only when the interpreter is initialized and not
 * finalizing (the lock exists then), judged while every thread is
 * stopped.
 *
 * The wrapper is installed only over pymalloc itself
 * (_PyMem_GetCurrentAllocatorName() is "pymalloc": not under
 * PYTHONMALLOC=malloc, the debug hooks or tracemalloc, where blocks come
 * from malloc, which the malloc hooks count already). pymalloc serves
 * requests of 1..512 bytes from its arenas and passes the rest to
 * PyMem_RawMalloc, i.e. malloc: so the wrapper counts only the former,
 * by the same per-thread Poisson budget as the malloc hooks, and records
 * a sample into the same ring (agent.c: agent_py_*). A block freed
 * through it is reported if it was sampled. (A block pymalloc got from
 * malloc, reallocated to 512 bytes or less, goes on to realloc: those
 * bytes count in both budgets, so such a call is about twice as likely
 * to be sampled.)
 * Calls are not counted in
 * the malloc and free call counts (memstats' Mallocs are malloc calls).
 *
 * Disarming never removes it: the wrapper stays installed and, while the
 * agent is not armed (or in a forked child), is a pure pass-through to
 * the original. Blocks allocated through it are freed through it. The
 * agent is never unloaded (-z nodelete, meson.build), so the
 * interpreter never points at unloaded code.
 *
 * Native frames only: a sample's stack is the C stack at the wrapper,
 * as for malloc.
 */
#include <stdatomic.h>
#include <string.h>

#include "sampler/heap/agent/agent_i.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

#define PY_SMALL 512	/* pymalloc's SMALL_REQUEST_THRESHOLD (3.8+) */

enum { PY_DOMAIN_RAW, PY_DOMAIN_MEM, PY_DOMAIN_OBJ };

/* PyMemAllocatorEx */
struct py_allocator {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t size);
	void (*free)(void *ctx, void *ptr);
};

static struct {
	int (*add_pending)(int (*)(void *), void *);
	void (*get)(int, struct py_allocator *);
	void (*set)(int, struct py_allocator *);
	const char *(*name)(void);
	int (*initialized)(void);
	int (*finalizing)(void);
} py;

/* The originals, by domain (MEM, OBJ): the wrappers' contexts. */
static struct py_allocator orig[2];

static _Atomic uint32_t py_state;	/* enum ph_py */

/* ---- the wrapper ---- */

/*
 * Each call costs what a malloc hook's fast path does: a thread-local
 * subtraction from the budget the malloc hooks draw on (a block of 1..512
 * bytes), the free's filter byte, then a tail call of the original; the
 * rest is out of line. Measured on a loop building tuples and strings,
 * the first version (a call per allocation, frames) cost it 23%, this
 * one 9%.
 */

/* The budget ran out (or the agent is not armed: agent_py_take() then
 * refills it, so a disarmed wrapper stays on this fast path). */
__attribute__((noinline, cold)) static void *
malloc_slow(const struct py_allocator *o, size_t n)
{
	uint64_t rate, left;
	void *p;

	if (!agent_py_take(n, &rate))
		return o->malloc(o->ctx, n);
	left = agent_py_guard_enter();
	p = o->malloc(o->ctx, n);
	agent_py_guard_exit(left);
	if (p)
		agent_py_sample(p, n, rate);
	return p;
}

/* Within budget: true, and counted down. pymalloc's own sizes only. */
static inline bool fits(size_t n)
{
	struct ph_budget *t = &ph_tls;

	if (LIKELY(n < t->left)) {
		t->left -= n;
		return true;
	}
	return false;
}

static void *w_malloc(void *ctx, size_t n)
{
	const struct py_allocator *o = ctx;

	if (LIKELY(n - 1 >= PY_SMALL) || LIKELY(fits(n)))
		return o->malloc(o->ctx, n);
	return malloc_slow(o, n);
}

__attribute__((noinline, cold)) static void *
calloc_slow(const struct py_allocator *o, size_t nelem, size_t size,
	    size_t n)
{
	uint64_t rate, left;
	void *p;

	if (!agent_py_take(n, &rate))
		return o->calloc(o->ctx, nelem, size);
	left = agent_py_guard_enter();
	p = o->calloc(o->ctx, nelem, size);
	agent_py_guard_exit(left);
	if (p)
		agent_py_sample(p, n, rate);
	return p;
}

static void *w_calloc(void *ctx, size_t nelem, size_t size)
{
	const struct py_allocator *o = ctx;
	size_t n;

	if (__builtin_mul_overflow(nelem, size, &n) || n - 1 >= PY_SMALL ||
	    LIKELY(fits(n)))
		return o->calloc(o->ctx, nelem, size);
	return calloc_slow(o, nelem, size, n);
}

/* The old block is gone (or moved) once realloc returns: reported
 * first, as the malloc hooks do. */
__attribute__((noinline, cold)) static void *
realloc_slow(const struct py_allocator *o, void *old, size_t n)
{
	uint64_t rate, left;
	void *p;

	if (live_maybe((uintptr_t)old))
		agent_py_free(old);
	if (n - 1 >= PY_SMALL || fits(n) || !agent_py_take(n, &rate))
		return o->realloc(o->ctx, old, n);
	left = agent_py_guard_enter();
	p = o->realloc(o->ctx, old, n);
	agent_py_guard_exit(left);
	if (p)
		agent_py_sample(p, n, rate);
	return p;
}

static void *w_realloc(void *ctx, void *old, size_t n)
{
	const struct py_allocator *o = ctx;

	if (UNLIKELY(live_maybe((uintptr_t)old)) ||
	    (n - 1 < PY_SMALL && !fits(n)))
		return realloc_slow(o, old, n);
	return o->realloc(o->ctx, old, n);
}

__attribute__((noinline, cold)) static void
free_slow(const struct py_allocator *o, void *p)
{
	agent_py_free(p);
	o->free(o->ctx, p);
}

static void w_free(void *ctx, void *p)
{
	const struct py_allocator *o = ctx;

	if (UNLIKELY(live_maybe((uintptr_t)p)))
		free_slow(o, p);
	else
		o->free(o->ctx, p);
}

/* ---- installing it ---- */

/* Run by the interpreter, GIL held (a pending call). Always 0: a
 * nonzero return without an exception set is a SystemError there. */
static int py_install(void *arg)
{
	static const int domains[2] = { PY_DOMAIN_MEM, PY_DOMAIN_OBJ };
	const char *name;

	(void)arg;
	if (atomic_load(&py_state) != PH_PY_QUEUED)
		return 0;
	name = py.name();
	if (!name || strcmp(name, "pymalloc")) {
		atomic_store(&py_state, PH_PY_NOT_PYMALLOC);
		agent_py_publish(PH_PY_NOT_PYMALLOC);
		return 0;
	}
	for (int i = 0; i < 2; i++)
		py.get(domains[i], &orig[i]);
	for (int i = 0; i < 2; i++) {
		struct py_allocator w = {
			.ctx = &orig[i], .malloc = w_malloc,
			.calloc = w_calloc, .realloc = w_realloc,
			.free = w_free,
		};

		py.set(domains[i], &w);
	}
	atomic_store(&py_state, PH_PY_WRAPPED);
	agent_py_publish(PH_PY_WRAPPED);
	return 0;
}

/* The symbol's definition, if it leads out of the agent. */
static void *find(const char *name, uintptr_t lo, uintptr_t hi)
{
	void *fn = resolve_real(name, (const void *)find);

	return fn && !real_leads_back(fn, lo, hi) ? fn : NULL;
}

uint32_t pymem_arm(void)
{
	uint32_t s = atomic_load(&py_state);
	uintptr_t lo, hi;

	if (s == PH_PY_UNSEEN) {
		resolve_self((const void *)find, &lo, &hi);
		py.add_pending = find("Py_AddPendingCall", lo, hi);
		py.get = find("PyMem_GetAllocator", lo, hi);
		py.set = find("PyMem_SetAllocator", lo, hi);
		py.name = find("_PyMem_GetCurrentAllocatorName", lo, hi);
		py.initialized = find("Py_IsInitialized", lo, hi);
		py.finalizing = find("_Py_IsFinalizing", lo, hi);
		s = py.add_pending && py.get && py.set && py.name &&
		    py.initialized && py.finalizing ? PH_PY_FOUND :
		    PH_PY_NONE;
		atomic_store(&py_state, s);
	}
	if (s != PH_PY_FOUND)
		return s;
	/* Not yet initialized (a load at the interpreter's start), or
	 * going: the next arm tries again. */
	if (!py.initialized() || py.finalizing())
		return s;
	atomic_store(&py_state, PH_PY_QUEUED);
	if (py.add_pending(py_install, NULL))
		atomic_store(&py_state, PH_PY_FOUND);	/* queue full */
	return atomic_load(&py_state);
}
