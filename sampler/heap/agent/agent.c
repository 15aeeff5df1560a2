// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * agent.c - libproffs-heap.so: samples a process's allocations from
 * inside it, at Go's cost (SPEC §3, heap / allocs).
 *
 * Loaded by the daemon (an injected dlopen of a memfd) or at start with
 * LD_PRELOAD, the agent points the GOT entries of malloc & co. of every
 * loaded object at its hooks. A hook calls the real function and counts
 * the bytes down from a per-thread budget drawn from an exponential
 * distribution of mean `rate` (a Poisson process over bytes, as Go and
 * tcmalloc sample); when the budget runs out the allocation is sampled:
 * the registers and the top of the stack are copied into the ring the
 * daemon reads, and the address is remembered so its free is reported.
 * Everything else - unwinding, symbols, the live set's sizes, scaling -
 * happens in the daemon.
 *
 * The agent disarms itself (every GOT entry back as it was, zero cost)
 * when the daemon's heartbeat stops for PH_LEASE_MS: the daemon is gone
 * or no longer wants samples. The daemon arms it again by calling
 * proffs_heap_arm() in the target. A forked child starts disarmed.
 *
 * A hook is never a trap (issue 25). The real functions are found by
 * definition (resolve.c), and none may lead back into the agent: checked
 * before arming and after every redirect, else the agent refuses to arm
 * or disarms. While a hook calls a real function and waits for it, the
 * thread's budget is 0 (guard_enter()), so a hook entered again on that
 * thread - the allocator, or a signal handler, allocating - takes its
 * slow path, and there only counts the call (reentries) and goes on to
 * the real function; one entered from the agent's own code with nothing
 * but jumps between (a loop) disarms. A broken or stuck ring disarms
 * too. ph_shared.why says why the agent disarmed or refused.
 */
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sampler/heap/agent/agent_i.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define REG_RSP 7		/* libunwind's x86-64 numbering */

/* The functions the hooks stand in front of. */
static struct {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	void (*free)(void *);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
} real;


/* Aligned: left and the counts, which every call touches, share a line. */
__thread struct ph_budget ph_tls
	__attribute__((tls_model("initial-exec"), aligned(64)));

static struct ph_shared *sh;
static bool forked;
static pthread_key_t exit_key;	/* its destructor: a thread's end */
static bool exit_key_ok;
static uint32_t scanned_calls;	/* ph_dlopen_calls at the last rescan */
static _Atomic uint64_t seen_hb, seen_hb_ns;
static _Atomic uint32_t next_len;	/* the last sample's record length */

uint64_t agent_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ---- sampling intervals ---- */

/* ln(u) for u in (0, 1], without libm: ln(m * 2^e) with m near 1. */
static double ln(double u)
{
	union { double d; uint64_t i; } x = { .d = u };
	int e = (int)((x.i >> 52) & 0x7ff) - 1023;
	double m, z, z2;

	x.i = (x.i & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
	m = x.d;
	if (m > 1.4142135623730951) {
		m *= 0.5;
		e++;
	}
	z = (m - 1) / (m + 1);	/* |z| < 0.172: the series converges fast */
	z2 = z * z;
	return z * (2 + z2 * (2.0 / 3 + z2 * (2.0 / 5 + z2 * (2.0 / 7 +
	       z2 * (2.0 / 9 + z2 * 2.0 / 11))))) +
	       e * 0.6931471805599453;
}

/* Bytes until the next sample: exponential with mean rate (0 if 1). */
static uint64_t draw(struct ph_budget *t)
{
	uint64_t rate = atomic_load_explicit(&sh->rate, memory_order_relaxed);
	uint64_t x = t->rng;
	double u, v;

	t->rate = rate;
	if (rate <= 1)
		return 0;
	if (!x)
		x = ((uint64_t)(uintptr_t)t ^ agent_now_ns()) | 1;
	x ^= x >> 12;	/* xorshift64* */
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	u = (double)(((x * 0x2545f4914f6cdd1dull) >> 11) + 1) * 0x1.0p-53;
	v = -ln(u) * (double)rate;
	return v < 1e15 ? (uint64_t)v : (uint64_t)1e15;
}

/*
 * The allocation fast path: true when size fits in this thread's budget
 * (nothing to do but count the call). Inlined into every hook, and small
 * enough that the hooks need no stack frame on this path. It reads
 * nothing shared - not even the rate, which the daemon changes by zeroing
 * the budgets when it drops (struct ph_budget) - as three loads more cost
 * a bare malloc/free loop 5% of its speed.
 */
static inline bool skip(size_t size)
{
	struct ph_budget *t = &ph_tls;

	if (LIKELY(size < t->left)) {
		t->left -= size;
		t->mallocs++;
		return true;
	}
	return false;
}

static uint32_t my_tid(struct ph_budget *t)
{
	if (!t->tid)
		t->tid = (uint32_t)gettid();
	return t->tid;
}

/*
 * From now on this thread counts in ph_shared, atomically: it has ended,
 * or cannot be listed, so the daemon cannot read its budget. left stays
 * 0 (its budget is kept in parked), so every call takes a slow path,
 * which counts there. fold_seq tells a reader that counts moved.
 */
static void fold(struct ph_budget *t)
{
	if (forked)	/* the ring is the parent's */
		return;
	atomic_fetch_add(&sh->fold_seq, 1);
	atomic_fetch_add(&sh->folded_mallocs, t->mallocs);
	atomic_fetch_add(&sh->folded_frees, 0 - t->frees);
	t->mallocs = 0;
	t->frees = 0;
	if (!t->folded)
		t->parked = t->left;
	t->left = 0;
	t->folded = 1;
	atomic_fetch_add(&sh->fold_seq, 1);
}

/* The thread ends (its pthread key's destructor): fold its counts and
 * give its entry back. What it allocates or frees later, in other
 * destructors and libc's own cleanup, is counted folded. */
static void thread_exit(void *arg)
{
	struct ph_budget *t = arg;
	uint32_t tid = t->tid;

	if (t != &ph_tls || t->folded)
		return;
	fold(t);
	if (t->slot && !forked)
		atomic_compare_exchange_strong(
			&agent_threads[t->slot - 1].tid, &tid, 0);
	t->slot = 0;
}

/*
 * Into agent_threads, at the thread's first call of a hook, so that the
 * daemon can zero its budget when the rate drops and read its counts. A
 * thread that finds no room (or whose end the agent cannot see) counts
 * folded, in ph_shared: slower, still exact. pthread_setspecific may
 * calloc (a key past the first 32): that call comes back through the
 * hooks, and finds self set.
 */
static void enlist(struct ph_budget *t)
{
	uint32_t tid = my_tid(t);

	t->self = (uintptr_t)t;
	for (unsigned k = 0; k < 64; k++) {
		unsigned i = (tid + k) % PH_THREADS;
		struct ph_thread *e = &agent_threads[i];
		uint32_t none = 0;

		if (atomic_compare_exchange_strong(&e->tid, &none, tid)) {
			atomic_store(&e->budget, (uintptr_t)t);
			t->slot = i + 1;
			break;
		}
	}
	if (!t->slot ||
	    (exit_key_ok && pthread_setspecific(exit_key, t)))
		fold(t);
	/* The daemon bumps rate_gen, then reads the list; we write the
	 * list, then read rate_gen: one of us sees the other. */
	atomic_thread_fence(memory_order_seq_cst);
}

/* Sample this allocation? A new rate draws a new budget first; one that
 * fits takes from it (a folded thread's, or one drawn by a call nested in
 * enlist()); else sample and draw the next. */
static bool decide(struct ph_budget *t, size_t size, uint64_t *rate)
{
	uint32_t g = atomic_load_explicit(&sh->rate_gen, memory_order_relaxed);

	if (t->gen != g) {
		t->gen = g;
		t->left = draw(t);
	}
	if (size < t->left) {
		t->left -= size;
		return false;
	}
	*rate = t->rate;
	t->left = draw(t);
	return true;
}

/* The allocation slow path, out of line: count the call (unless count
 * is false: pymem.c's), then decide. A folded thread's budget is parked
 * between calls. */
__attribute__((noinline)) static bool take_as(size_t size, uint64_t *rate,
					      bool count)
{
	struct ph_budget *t = &ph_tls;
	bool sampled;

	if (UNLIKELY(!t->self))
		enlist(t);
	if (LIKELY(!t->folded)) {
		t->mallocs += count;
		return decide(t, size, rate);
	}
	if (count)
		atomic_fetch_add_explicit(&sh->folded_mallocs, 1,
					  memory_order_relaxed);
	t->left = t->parked;
	sampled = decide(t, size, rate);
	t->parked = t->left;
	t->left = 0;
	return sampled;
}
#define take(size, rate) take_as((size), (rate), true)

/* A free of p counted outside free's fast path (realloc's old block,
 * operator delete). */
static void count_free(void *p)
{
	struct ph_budget *t = &ph_tls;

	if (!p)
		return;
	if (UNLIKELY(!t->self))
		enlist(t);
	if (LIKELY(!t->folded))
		t->frees--;
	else
		atomic_fetch_add_explicit(&sh->folded_frees, 1,
					  memory_order_relaxed);
}

/* ---- the lease ---- */

bool daemon_alive(void)
{
	uint64_t hb, now, seen;

	if (!atomic_load_explicit(&sh->daemon_pid, memory_order_relaxed))
		return false;
	hb = atomic_load_explicit(&sh->heartbeat, memory_order_relaxed);
	now = agent_now_ns();
	if (hb != atomic_load_explicit(&seen_hb, memory_order_relaxed)) {
		atomic_store_explicit(&seen_hb, hb, memory_order_relaxed);
		atomic_store_explicit(&seen_hb_ns, now, memory_order_relaxed);
		return true;
	}
	/* Another thread may have seen the beat after our clock read and
	 * stored a later time: that is a live daemon, not a wrapped
	 * difference (which disarmed a busy target at times). */
	seen = atomic_load_explicit(&seen_hb_ns, memory_order_relaxed);
	return now < seen || now - seen <= PH_LEASE_MS * 1000000ull;
}

/* A daemon attached once and has stopped beating: nobody reads us. */
static bool lease_over(void)
{
	return atomic_load_explicit(&sh->daemon_pid, memory_order_relaxed) &&
	       !daemon_alive();
}

/* ---- arming ---- */

static void *h_calloc(size_t n, size_t size);
static void *h_realloc(void *p, size_t n);
static void *h_reallocarray(void *p, size_t n, size_t size);
static int h_posix_memalign(void **pp, size_t align, size_t n);
static void *h_aligned_alloc(size_t align, size_t n);
static void *h_memalign(size_t align, size_t n);
static void *h_valloc(size_t n);
static void *h_pvalloc(size_t n);

/*
 * operator new and delete, every variant, by mangled name. They get hooks
 * only where the object that defines them also defines malloc: tcmalloc,
 * jemalloc and mimalloc allocate in operator new without calling malloc,
 * so a C++ program linked with them showed nothing. libstdc++'s operator
 * new calls malloc, which is hooked already: hooking it too would count
 * each block twice. The extra arguments (alignment, nothrow tag, size)
 * pass through in their registers.
 */
typedef void *(*new_fn)(size_t, uintptr_t, uintptr_t);
typedef void (*delete_fn)(void *, uintptr_t, uintptr_t);

#define NEW_VARIANTS(X)                                                      \
	X(_Znwm) X(_Znam) X(_ZnwmRKSt9nothrow_t) X(_ZnamRKSt9nothrow_t)      \
	X(_ZnwmSt11align_val_t) X(_ZnamSt11align_val_t)                      \
	X(_ZnwmSt11align_val_tRKSt9nothrow_t)                                \
	X(_ZnamSt11align_val_tRKSt9nothrow_t)
#define DELETE_VARIANTS(X)                                                   \
	X(_ZdlPv) X(_ZdaPv) X(_ZdlPvm) X(_ZdaPvm) X(_ZdlPvRKSt9nothrow_t)    \
	X(_ZdaPvRKSt9nothrow_t) X(_ZdlPvSt11align_val_t)                     \
	X(_ZdaPvSt11align_val_t) X(_ZdlPvmSt11align_val_t)                   \
	X(_ZdaPvmSt11align_val_t) X(_ZdlPvSt11align_val_tRKSt9nothrow_t)     \
	X(_ZdaPvSt11align_val_tRKSt9nothrow_t)

#define DECLARE_REAL(name) static void *real_##name;
NEW_VARIANTS(DECLARE_REAL)
DELETE_VARIANTS(DECLARE_REAL)
#undef DECLARE_REAL
#define DECLARE_HOOK(name) static void *h##name(size_t, uintptr_t, uintptr_t);
NEW_VARIANTS(DECLARE_HOOK)
#undef DECLARE_HOOK
#define DECLARE_HOOK(name) static void h##name(void *, uintptr_t, uintptr_t);
DELETE_VARIANTS(DECLARE_HOOK)
#undef DECLARE_HOOK

static struct got_hook hooks[40];
static void **hook_real[40];	/* where each hook's real function is */
static size_t nhooks;
static uintptr_t self_lo, self_hi;	/* the agent's own mappings */
static enum ph_why refused;	/* why malloc or free has no real */

/* The hook of name, if it has a real function that leads elsewhere
 * than the agent. */
static void add_hook(const char *name, void **realp, void *hook)
{
	void *fn = resolve_real(name, (void *)ph_h_malloc);

	if (fn && real_leads_back(fn, self_lo, self_hi))
		fn = NULL;
	*realp = fn;
	if (fn) {
		hook_real[nhooks] = realp;
		hooks[nhooks++] = (struct got_hook){ name, hook };
	}
}

/*
 * Does hook i's real function lead back to it? Followed through its jumps
 * it may enter another hook (an operator delete that jumps to free@plt):
 * then on through that one's real function. A hook met twice, or agent
 * code that is no hook's entry, or code that cannot be read, is a loop.
 */
static bool loops(size_t i)
{
	uint64_t seen = 1ull << i;
	uintptr_t at = real_chase(*hook_real[i], self_lo, self_hi);
	size_t j;

	while (at) {
		for (j = 0; j < nhooks && (uintptr_t)hooks[j].hook != at; j++)
			;
		if (j == nhooks || (seen & (1ull << j)))
			return true;
		seen |= 1ull << j;
		at = real_chase(*hook_real[j], self_lo, self_hi);
	}
	return false;
}

/* Does every hook's real function still lead out of the agent? Checked
 * after GOT entries changed: an entry a real function jumps through may
 * be one of them. */
static bool reals_safe(void)
{
	for (size_t i = 0; i < nhooks; i++)
		if (loops(i))
			return false;
	return true;
}

struct find_obj {
	uintptr_t addr;
	uintptr_t base;		/* found: the object's load address + 1 */
};

static int find_obj_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find_obj *f = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && f->addr >= start &&
		    f->addr - start < ph->p_memsz) {
			f->base = info->dlpi_addr + 1;
			return 1;
		}
	}
	return 0;
}

/* The object holding fn, as a token (its load address + 1: the program's
 * is 0), 0 if none. dl_iterate_phdr, not dladdr: the agent imports
 * nothing more of the loader than it must (test-agent-imports). */
static uintptr_t object_of(void *fn)
{
	struct find_obj f = { .addr = (uintptr_t)fn };

	if (fn)
		dl_iterate_phdr(find_obj_cb, &f);
	return f.base;
}

static void resolve_cxx(void)
{
	uintptr_t alloc = object_of((void *)real.malloc);

#define HOOK_CXX(name)                                                       \
	if (object_of(resolve_real(#name, (void *)ph_h_malloc)) == alloc)   \
		add_hook(#name, &real_##name, (void *)h##name);
	if (!alloc)
		return;
	NEW_VARIANTS(HOOK_CXX)
	DELETE_VARIANTS(HOOK_CXX)
#undef HOOK_CXX
}

static void resolve(void)
{
#define HOOK(fn) add_hook(#fn, (void **)&real.fn, (void *)h_##fn)
	resolve_self((void *)ph_h_malloc, &self_lo, &self_hi);
	add_hook("malloc", (void **)&real.malloc, (void *)ph_h_malloc);
	HOOK(calloc);
	HOOK(realloc);
	HOOK(reallocarray);
	add_hook("free", (void **)&real.free, (void *)ph_h_free);
	HOOK(posix_memalign);
	HOOK(aligned_alloc);
	HOOK(memalign);
	HOOK(valloc);
	HOOK(pvalloc);
#undef HOOK
	add_hook("dlopen", &ph_real_dlopen, (void *)ph_dlopen_tramp);
	add_hook("dlmopen", &ph_real_dlmopen, (void *)ph_dlmopen_tramp);
	resolve_cxx();
	if (!real.malloc || !real.free)
		refused = resolve_real("malloc", (void *)ph_h_malloc) &&
			  resolve_real("free", (void *)ph_h_malloc) ?
			  PH_WHY_LOOP : PH_WHY_NO_REAL;
}

static void disarm(enum ph_why why)
{
	uint32_t armed = PH_ARMED;

	if (!atomic_compare_exchange_strong(&sh->state, &armed, PH_DISARMED))
		return;
	atomic_store(&sh->why, why);
	/* Another thread is redirecting a new object: wait for it. */
	while (got_restore(hooks, nhooks) < 0)
		sched_yield();
	atomic_fetch_add(&sh->disarms, 1);
}

/* Objects loaded since the last look get the hooks too: right after a
 * dlopen returns, and at the next sample after one that has not. */
void agent_rescan(void)
{
	uint32_t calls = atomic_load(&ph_dlopen_calls);
	unsigned pending = 0;
	int n;

	if (!sh || forked || atomic_load(&sh->state) != PH_ARMED ||
	    calls == scanned_calls)
		return;
	n = got_redirect(hooks, nhooks, (void *)ph_h_malloc, false,
			 &pending);
	if (n < 0)
		return;
	if (!pending)
		scanned_calls = calls;
	atomic_fetch_add(&sh->slots, n);
	atomic_store(&sh->objects, got_objects());
	if (n && !reals_safe())
		disarm(PH_WHY_LOOP);
}

void agent_ring_failed(enum ph_why why)
{
	if (sh && !forked)
		disarm(why);
}

/*
 * Arm: forget the live set of an earlier arming (its frees went unseen),
 * start a new epoch and lease, redirect every object's GOT. The daemon
 * calls this in a stopped process, where no thread is in the allocator
 * or the loader. Returns the GOT entries redirected, or -1.
 */
int proffs_heap_arm(void)
{
	int n;

	if (!sh || forked)
		return -1;
	if (refused) {
		atomic_store(&sh->why, refused);
		return -1;
	}
	if (atomic_load(&sh->state) == PH_ARMED) {
		atomic_store(&sh->py, pymem_arm());
		return (int)atomic_load(&sh->slots);
	}
	live_reset();
	atomic_store(&seen_hb, atomic_load(&sh->heartbeat));
	atomic_store(&seen_hb_ns, agent_now_ns());
	scanned_calls = atomic_load(&ph_dlopen_calls);
	atomic_fetch_add(&sh->epoch, 1);
	atomic_store(&sh->state, PH_ARMED);
	n = got_redirect(hooks, nhooks, (void *)ph_h_malloc, true, NULL);
	if (n < 0) {
		atomic_store(&sh->state, PH_DISARMED);
		return -1;
	}
	atomic_store(&sh->slots, n);
	atomic_store(&sh->objects, got_objects());
	if (!reals_safe()) {
		disarm(PH_WHY_LOOP);
		return -1;
	}
	atomic_store(&sh->why, PH_WHY_NONE);
	/* Python's pymalloc too, once the hooks are in (pymem.c). */
	atomic_store(&sh->py, pymem_arm());
	return n;
}

/* ---- recording ---- */

__attribute__((noinline, cold)) static void sample(void *p, size_t size,
						  uint64_t rate)
{
	struct ph_budget *t = &ph_tls;
	uint64_t regs[PH_NREGS];
	struct ph_alloc *rec;
	uint16_t flags = 0;
	uint32_t len, room, want;
	uint64_t pos;

	if (t->in_hook || forked)
		return;
	t->in_hook = 1;
	live_prefetch((uintptr_t)p);
	if (lease_over()) {
		disarm(PH_WHY_LEASE);
		goto out;
	}
	agent_rescan();
	memset(regs, 0, sizeof(regs));
	ph_capture(regs);
	/* Only as much stack as there is, and as the daemon's unwinding
	 * of late needed: records are as long as that. */
	want = atomic_load_explicit(&sh->stack_want, memory_order_relaxed);
	if (!want || want > sh->stack_bytes)
		want = sh->stack_bytes;
	room = stack_room(regs[REG_RSP], want);
	len = ph_rec_len(sizeof(*rec) + (room ? room : want));
	/* A full ring means the daemon is behind. Sampling at rate 1 the
	 * user asked for every allocation: wait for room. Otherwise wait
	 * within a budget, then drop the sample (counted as lost, said in
	 * the profile) rather than slow the program down to the daemon's
	 * pace. */
	rec = ring_reserve(sh, len, rate <= 1 ? PH_WAIT : PH_WAIT_BUDGET,
			   &pos);
	if (!rec)
		goto out;
	if (!live_insert((uintptr_t)p)) {
		flags = PH_ALLOC_UNTRACKED;
		atomic_fetch_add_explicit(&sh->untracked, 1,
					  memory_order_relaxed);
	}
	memcpy(rec->regs, regs, sizeof(regs));
	if (room)
		memcpy(rec->stack, (const void *)(uintptr_t)regs[REG_RSP],
		       room);
	else
		room = stack_copy_syscall(rec->stack, regs[REG_RSP], want);
	rec->stack_len = room;
	rec->tid = my_tid(t);
	rec->addr = (uintptr_t)p;
	rec->size = size;
	rec->rate = rate;
	ring_commit(rec, pos, len, PH_REC_ALLOC, flags);
	/* Locked: besides counting, it waits here, in the cold path, for the
	 * record's stores to lines the daemon last read. Without it they
	 * drained under the program's own loop, which measured slower (a
	 * bare malloc/free loop: -13..-16% against -9..-10%). */
	atomic_fetch_add_explicit(&sh->samples, 1, memory_order_relaxed);
	atomic_store_explicit(&next_len, len, memory_order_relaxed);
	ring_prefetch(sh, len);
out:
	t->in_hook = 0;
}

/* p was maybe sampled and is being freed: tell the daemon if it was. */
__attribute__((noinline, cold)) static void unsample(void *p)
{
	struct ph_budget *t = &ph_tls;
	struct ph_free *rec;
	uint64_t pos;

	/* NULL shares a filter bucket with live blocks at times */
	if (!p || forked || !live_remove((uintptr_t)p))
		return;
	/* Nested inside a sample (a signal handler): waiting for room could
	 * wait on our own uncommitted record. */
	rec = ring_reserve(sh, ph_rec_len(sizeof(*rec)),
			   t->in_hook ? PH_NO_WAIT : PH_WAIT, &pos);
	if (!rec)
		return;
	rec->tid = my_tid(t);
	rec->pad = 0;
	rec->addr = (uintptr_t)p;
	ring_commit(rec, pos, ph_rec_len(sizeof(*rec)), PH_REC_FREE, 0);
	atomic_fetch_add_explicit(&sh->frees, 1, memory_order_relaxed);
	ring_prefetch(sh, atomic_load_explicit(&next_len,
					       memory_order_relaxed));
}

/* ---- the guard ---- */

/*
 * Around a hook's call of a real function that returns to it (a sampled
 * allocation): budget 0 meanwhile, so that any hook this thread enters
 * before it returns takes its slow path, where in_hook sends it straight
 * on (reentered()). Returns the budget to put back.
 */
static inline uint64_t guard_enter(struct ph_budget *t)
{
	uint64_t left = t->left;

	t->left = 0;
	t->in_hook++;
	t->chained = 0;
	return left;
}

/* The budget back, unless the rate changed meanwhile (the daemon may
 * have zeroed it: the next call draws anew). */
static inline void guard_exit(struct ph_budget *t, uint64_t left)
{
	t->in_hook--;
	if (t->gen == atomic_load_explicit(&sh->rate_gen,
					   memory_order_relaxed))
		t->left = left;
}

/*
 * A hook entered on a thread inside a hook: counted, and the caller goes
 * on to the real function. Entered from the agent's own code (ret, the
 * caller's return address) with nothing but jumps between, a real
 * function led into a hook: fine once or twice (operator new jumping to
 * malloc), a loop if more often than there are hooks: disarm, which puts
 * the GOT entries back, so that the real function called next leads out.
 */
__attribute__((noinline, cold)) static void reentered(const void *ret,
						     bool alloc)
{
	struct ph_budget *t = &ph_tls;

	if (forked)
		return;
	atomic_fetch_add_explicit(&sh->reentries, 1, memory_order_relaxed);
	if (alloc && !t->folded)
		t->mallocs++;
	else if (alloc)
		atomic_fetch_add_explicit(&sh->folded_mallocs, 1,
					  memory_order_relaxed);
	if ((uintptr_t)ret >= self_lo && (uintptr_t)ret < self_hi &&
	    ++t->chained > nhooks)
		disarm(PH_WHY_LOOP);
}

#define GUARD(call, alloc)                                                   \
	do {                                                                 \
		if (UNLIKELY(ph_tls.in_hook)) {                              \
			reentered(__builtin_return_address(0), (alloc));     \
			return call;                                         \
		}                                                            \
	} while (0)

/* ---- the hooks ---- */

/*
 * The hooks decide before they allocate, as Go does, so that the common
 * case ends in a tail call of the real function: the hook costs a
 * thread-local subtraction and nothing else. Only a sampled allocation
 * waits for the result. malloc's and free's fast paths are in fast.c,
 * the others' here.
 */
#define SAMPLED_SLOW(call, n)                                                \
	do {                                                                 \
		uint64_t rate_, left_;                                       \
		void *p_;                                                    \
		GUARD(call, true);                                           \
		if (!take((n), &rate_))                                      \
			return call;                                         \
		left_ = guard_enter(&ph_tls);                                \
		p_ = call;                                                   \
		guard_exit(&ph_tls, left_);                                  \
		if (p_)                                                      \
			sample(p_, (n), rate_);                              \
		return p_;                                                   \
	} while (0)

#define SAMPLED(call, n)                                                     \
	do {                                                                 \
		if (LIKELY(skip(n)))                                         \
			return call;                                         \
		SAMPLED_SLOW(call, n);                                       \
	} while (0)

#define MAYBE_UNSAMPLE(p)                                                    \
	do {                                                                 \
		if (UNLIKELY(live_maybe((uintptr_t)(p))))                    \
			unsample(p);                                         \
	} while (0)

/* Past ph_h_malloc's fast path: the budget ran out, or the rate
 * changed. */
void *ph_malloc_slow(size_t n)
{
	SAMPLED_SLOW(real.malloc(n), n);
}

static void *h_calloc(size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes))
		return real.calloc(n, size);	/* it fails */
	SAMPLED(real.calloc(n, size), bytes);
}

/* The old block is gone (or moved) once realloc returns, and its address
 * may be another thread's new block: report it first. It counts as a
 * free and an allocation; with 0 bytes, glibc's only frees. */
static void *h_realloc(void *old, size_t n)
{
	MAYBE_UNSAMPLE(old);
	count_free(old);
	if (old && !n)
		return real.realloc(old, n);
	SAMPLED(real.realloc(old, n), n);
}

static void *h_reallocarray(void *old, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes))
		return real.reallocarray(old, n, size);	/* it fails */
	MAYBE_UNSAMPLE(old);
	count_free(old);
	if (old && !bytes)
		return real.reallocarray(old, n, size);
	SAMPLED(real.reallocarray(old, n, size), bytes);
}

/* Past ph_h_free's fast path: p's filter byte is set (p may be NULL,
 * whose byte always is). It counts here. */
void ph_free_slow(void *p)
{
	count_free(p);
	unsample(p);
	if (UNLIKELY(ph_tls.in_hook))
		reentered(__builtin_return_address(0), false);
	real.free(p);
}

/* free found this thread's count at 0 (and counted it, to -1): its first
 * free, to be listed; or its counts are folded, and the -1 moves there.
 * p's filter byte is 0. */
void ph_free_first(void *p)
{
	struct ph_budget *t = &ph_tls;

	if (!t->self)
		enlist(t);
	if (t->folded) {
		atomic_fetch_add_explicit(&sh->folded_frees, 0 - t->frees,
					  memory_order_relaxed);
		t->frees = 0;
	}
	if (UNLIKELY(t->in_hook))
		reentered(__builtin_return_address(0), false);
	real.free(p);
}

static int h_posix_memalign(void **pp, size_t align, size_t n)
{
	uint64_t rate, left;
	int ret;

	if (LIKELY(skip(n)))
		return real.posix_memalign(pp, align, n);
	GUARD(real.posix_memalign(pp, align, n), true);
	if (!take(n, &rate))
		return real.posix_memalign(pp, align, n);
	left = guard_enter(&ph_tls);
	ret = real.posix_memalign(pp, align, n);
	guard_exit(&ph_tls, left);
	if (!ret)
		sample(*pp, n, rate);
	return ret;
}

static void *h_aligned_alloc(size_t align, size_t n)
{
	SAMPLED(real.aligned_alloc(align, n), n);
}

static void *h_memalign(size_t align, size_t n)
{
	SAMPLED(real.memalign(align, n), n);
}

static void *h_valloc(size_t n)
{
	SAMPLED(real.valloc(n), n);
}

static void *h_pvalloc(size_t n)
{
	SAMPLED(real.pvalloc(n), n);
}

/* operator new: size first; may throw, through this frame (it has CFI). */
#define NEW_HOOK(name)                                                       \
	static void *h##name(size_t n, uintptr_t a, uintptr_t b)             \
	{                                                                    \
		SAMPLED(((new_fn)real_##name)(n, a, b), n);                  \
	}
NEW_VARIANTS(NEW_HOOK)
#undef NEW_HOOK

#define DELETE_HOOK(name)                                                    \
	static void h##name(void *p, uintptr_t a, uintptr_t b)               \
	{                                                                    \
		MAYBE_UNSAMPLE(p);                                           \
		count_free(p);                                               \
		if (UNLIKELY(ph_tls.in_hook))                                \
			reentered(__builtin_return_address(0), false);       \
		((delete_fn)real_##name)(p, a, b);                           \
	}
DELETE_VARIANTS(DELETE_HOOK)
#undef DELETE_HOOK

/* ---- pymem.c's wrapper of pymalloc, GIL held ---- */

static bool armed_here(void)
{
	return sh && !forked &&
	       atomic_load_explicit(&sh->state, memory_order_relaxed) ==
	       PH_ARMED;
}

/* take() without counting the call (not a malloc call): the same budget
 * and Poisson rule. Not armed: a new budget (a fresh exponential draw:
 * sampling after an arm is as unbiased), and no sample. */
bool agent_py_take(size_t n, uint64_t *rate)
{
	struct ph_budget *t = &ph_tls;

	if (!sh || forked)
		t->left = UINT64_MAX;	/* never armed again */
	else if (!t->in_hook && !armed_here() && !t->folded)
		t->left = draw(t);
	if (!armed_here() || t->in_hook)
		return false;
	if (n < t->left) {
		t->left -= n;
		return false;
	}
	return take_as(n, rate, false);
}

uint64_t agent_py_guard_enter(void) { return guard_enter(&ph_tls); }
void agent_py_guard_exit(uint64_t left) { guard_exit(&ph_tls, left); }
void agent_py_sample(void *p, size_t n, uint64_t r) { sample(p, n, r); }

void agent_py_free(void *p)
{
	if (armed_here())
		unsample(p);
}

void agent_py_publish(uint32_t state)
{
	if (sh && !forked)
		atomic_store(&sh->py, state);
}

/* ---- life cycle ---- */

/* The child shares the ring with its parent: it must never write there. */
static void atfork_child(void)
{
	forked = true;
	got_after_fork();
	got_restore(hooks, nhooks);
}

static uint64_t env_rate(void)
{
	const char *s = getenv("PROFFS_HEAP_RATE");
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return PH_DEFAULT_RATE;
	v = strtoull(s, &end, 10);
	return *end || !v ? PH_DEFAULT_RATE : v;
}

__attribute__((constructor)) static void agent_init(void)
{
	resolve();
	dlopen_init();
	if (live_init())
		return;
	/* Even without malloc or free: the ring tells the daemon why the
	 * agent refuses to arm. */
	sh = ring_create();
	if (!sh)
		return;
	atomic_store(&sh->rate, env_rate());
	if (refused) {
		atomic_store(&sh->why, refused);
		return;
	}
	atomic_store(&sh->direct,
		     fast_direct((void *)real.malloc, (void *)real.free));
	pthread_atfork(NULL, NULL, atfork_child);
	/* Once, here: a thread's end is where its counts must be folded. */
	exit_key_ok = !pthread_key_create(&exit_key, thread_exit);
	if (!exit_key_ok)
		atomic_fetch_or(&sh->count_flags, PH_COUNT_NO_EXIT_HOOK);
	proffs_heap_arm();
}
