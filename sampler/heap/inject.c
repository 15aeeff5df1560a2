// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * inject.c - hold a process's threads at a safe point and call functions
 * in it. The safety rules and the calling convention are in inject.h.
 */
#include <elf.h>
#include <stddef.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <time.h>

#include "dso.h"
#include "inject.h"
#include "log.h"
#include "maps.h"
#include "proc.h"
#include "safepoint.h"
#include "tracee.h"
#include "unwind.h"

#define STACK_MAX (64 * 1024)
#define MAX_FRAMES 256
#define DEFAULT_ROUNDS 200
#define STOP_WAIT_NS 100000000ull	/* for every thread to stop */
#define CALL_WAIT_NS 10000000000ull	/* for a call to come back */
#define RED_ZONE 128
#define SCRATCH 4096
#define XSTATE_MAX 16384

struct held {
	pid_t tid;
	bool stopped;		/* in a ptrace stop now */
	bool gone;
	int sig;		/* to hand back on release */
	int event;		/* of the stop: 0 = signal-delivery stop */
	bool unsafe;
	bool armed;		/* a breakpoint at resume_at is set */
	bool let;		/* let run alone this round */
	uint64_t resume_at;	/* unsafe: where it will be safe again */
	char why[128];		/* unsafe: where it was found */
};

struct injector {
	pid_t pid;
	struct proc_maps *maps;
	struct unwinder *unw;
	struct safepoint *safe;
	unsigned max_rounds;
	struct held *t;
	size_t n, cap;
	uint8_t *stack;
	struct inject_stats *st;
	uint64_t first_stop_ns;
	/* the calling thread and its scratch space */
	struct held *caller;
	uint64_t scratch_top, scratch_used;
	int fn_ret;
	int broken_sig;		/* a call died of it: no more calls */
	int (*fn)(struct injector *, void *);
	void *fn_arg;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void nap(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

/* ---- holding every thread ---- */

static struct held *find_held(struct injector *in, pid_t tid)
{
	for (size_t i = 0; i < in->n; i++)
		if (in->t[i].tid == tid)
			return &in->t[i];
	return NULL;
}

static int add_held(struct injector *in, pid_t tid, struct held **out)
{
	if (in->n == in->cap) {
		size_t cap = in->cap ? 2 * in->cap : 64;
		struct held *v = realloc(in->t, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		in->t = v;
		in->cap = cap;
	}
	*out = &in->t[in->n++];
	**out = (struct held){ .tid = tid };
	return 0;
}

static int seize(struct injector *in, pid_t tid)
{
	struct held *h;
	int ret;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL)) {
		ret = errno == EPERM ? tracee_seize_refused(in->pid, tid) :
				       -errno;
		return ret == -ESRCH ? 0 : ret;	/* gone already, or exiting */
	}
	ret = add_held(in, tid, &h);
	if (ret)
		return ret;	/* released when the tracer thread ends */
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL))
		h->gone = true;
	if (!in->first_stop_ns)
		in->first_stop_ns = now_ns();
	return 0;
}

/* One look at h: false once it stopped (or is gone). */
static bool still_running(struct held *h)
{
	int ret = tracee_poll_stop(h->tid, &h->sig, &h->event);

	if (ret == -EAGAIN)
		return true;
	if (ret)
		h->gone = true;
	else
		h->stopped = true;
	return false;
}

/* Wait (bounded) for every held thread (only_let: every thread let run
 * this round) to report its stop. Threads that do not (asleep in the
 * kernel) stay interrupted: they cannot run user code before they are
 * released. */
static void wait_some_stops(struct injector *in, bool only_let)
{
	uint64_t start = now_ns();
	bool waiting = true;

	while (waiting && now_ns() - start < STOP_WAIT_NS) {
		waiting = false;
		for (size_t i = 0; i < in->n; i++) {
			struct held *h = &in->t[i];

			if (h->gone || h->stopped || (only_let && !h->let))
				continue;
			waiting |= still_running(h);
		}
		if (waiting)
			nap(20000);
	}
}

static void wait_stops(struct injector *in)
{
	wait_some_stops(in, false);
}

/* Seize every thread, again until no new one shows up: a thread being
 * created while we seize its siblings appears in the list late. */
static int seize_all(struct injector *in)
{
	for (int pass = 0; pass < 16; pass++) {
		unsigned added = 0;
		pid_t *tids;
		size_t n;
		int ret;

		ret = proc_tasks(in->pid, &tids, &n);
		if (ret)
			return ret == -ENOENT ? -ESRCH : ret;
		for (size_t i = 0; i < n && !ret; i++) {
			if (find_held(in, tids[i]))
				continue;
			ret = seize(in, tids[i]);
			added++;
		}
		free(tids);
		if (ret)
			return ret;
		wait_stops(in);
		if (!added)
			return 0;
	}
	return -EAGAIN;
}

/* ---- is a thread somewhere a call could deadlock on? ---- */

/* Registers, and the system call the thread is in (-1: none). */
static int thread_regs(struct injector *in, struct held *h,
		       struct unwind_regs *r, long *sysno)
{
	struct user_regs_struct u;

	if (!h->stopped)	/* asleep in the kernel, interrupt pending */
		return tracee_syscall_regs(in->pid, h->tid, sysno, r);
	if (ptrace(PTRACE_GETREGS, h->tid, NULL, &u))
		return -errno;
	tracee_regs(&u, r);
	/* interrupted in a system call: its number stays in orig_rax */
	*sysno = (long)u.orig_rax;
	return 0;
}

/* Unwind h and look at every frame. */
static void classify(struct injector *in, struct held *h)
{
	uint64_t pcs[MAX_FRAMES];
	struct unwind_regs r;
	long sysno = -1;
	size_t len;
	int n;

	h->unsafe = false;
	h->resume_at = 0;
	if (thread_regs(in, h, &r, &sysno)) {
		h->unsafe = h->stopped;
		snprintf(h->why, sizeof(h->why), "registers unreadable");
		return;
	}
	len = tracee_copy_stack(in->pid, in->maps, r.r[UREG_RSP], in->stack,
				STACK_MAX);
	unwind_stack(in->unw, &r, in->stack, len, pcs, MAX_FRAMES, &n);
	h->unsafe = safepoint_unsafe(in->safe, pcs, n,
				     unwind_last_complete(in->unw), sysno,
				     &h->resume_at, h->why, sizeof(h->why));
}

/*
 * An execution breakpoint in the thread's own debug registers at addr
 * (0: none). Nothing of the target's code is written, and no other thread
 * sees it.
 */
static int hw_break(pid_t tid, uint64_t addr)
{
	const size_t dr = offsetof(struct user, u_debugreg);

	if (addr && ptrace(PTRACE_POKEUSER, tid, (void *)dr, (void *)addr))
		return -errno;
	/* DR7: local enable of DR0, as an instruction breakpoint */
	if (ptrace(PTRACE_POKEUSER, tid, (void *)(dr + 7 * sizeof(long)),
		   (void *)(long)(addr ? 1 : 0)))
		return -errno;
	return 0;
}

/* Wait until every let-go thread with a breakpoint stopped on its own
 * (reached it, or met a signal), or the time is up. */
static void wait_armed(struct injector *in, uint64_t budget_ns)
{
	uint64_t start = now_ns();
	bool waiting = true;

	while (waiting && now_ns() - start < budget_ns) {
		waiting = false;
		for (size_t i = 0; i < in->n; i++) {
			struct held *h = &in->t[i];

			if (h->gone || h->stopped || !h->let)
				continue;
			if (!h->armed) {
				waiting = true;	/* only time ends its run */
				continue;
			}
			waiting |= still_running(h);
		}
		if (waiting)
			nap(20000);
	}
}

/*
 * Clear the breakpoint. A stop at it is not the target's SIGTRAP: the
 * signal is dropped, and the stop turned into an interrupt stop like the
 * others' (calls are made from those), before the thread runs a single
 * instruction.
 */
static void disarm(struct held *h)
{
	struct user_regs_struct u;
	uint64_t start;
	int ret;

	if (!h->armed || h->gone)
		return;
	h->armed = false;
	hw_break(h->tid, 0);
	if (h->sig != SIGTRAP || h->event ||
	    ptrace(PTRACE_GETREGS, h->tid, NULL, &u) || u.rip != h->resume_at)
		return;
	h->sig = 0;
	if (ptrace(PTRACE_INTERRUPT, h->tid, NULL, NULL) ||
	    ptrace(PTRACE_CONT, h->tid, NULL, NULL)) {
		h->gone = true;
		return;
	}
	h->stopped = false;
	start = now_ns();
	do {
		ret = tracee_poll_stop(h->tid, &h->sig, &h->event);
		if (ret == -EAGAIN)
			nap(20000);
	} while (ret == -EAGAIN && now_ns() - start < STOP_WAIT_NS);
	if (ret && ret != -EAGAIN)
		h->gone = true;
	h->stopped = !ret;
}

/*
 * Let the unsafe threads run alone, each until it returns from its
 * outermost unsafe frame (a breakpoint at that return address) or a
 * moment passes, then interrupt those still running. Waiting for the
 * return, not a fixed time, matters for a thread that spends most of its
 * time inside the allocator: stopped again after a fixed time it is
 * nearly always found there again.
 */
static void let_go(struct injector *in, unsigned round)
{
	for (size_t i = 0; i < in->n; i++) {
		struct held *h = &in->t[i];

		if (h->gone || !h->stopped || !h->unsafe)
			continue;
		h->armed = h->resume_at && !hw_break(h->tid, h->resume_at);
		if (ptrace(PTRACE_CONT, h->tid, NULL, (void *)(long)h->sig)) {
			h->gone = true;
			continue;
		}
		h->stopped = false;
		h->sig = 0;
		h->let = true;
	}
	wait_armed(in, round < 20 ? 1000000 : 5000000);
	for (size_t i = 0; i < in->n; i++) {
		struct held *h = &in->t[i];

		if (!h->gone && !h->stopped && h->let &&
		    ptrace(PTRACE_INTERRUPT, h->tid, NULL, NULL))
			h->gone = true;
	}
	/* Only the threads let go: one that never stopped (asleep in the
	 * kernel since it was seized) must not cost every round the wait. */
	wait_some_stops(in, true);
	for (size_t i = 0; i < in->n; i++) {
		if (in->t[i].stopped)
			disarm(&in->t[i]);
		in->t[i].let = false;
	}
}

/*
 * A thread let run with a breakpoint that stopped only after its round
 * (asleep in the kernel when interrupted) still has it: clear it before
 * the thread is judged, and before any call could run into it (a call
 * stopped by that SIGTRAP at the old resume address, in the stress run).
 */
static void disarm_stopped(struct injector *in)
{
	for (size_t i = 0; i < in->n; i++)
		if (in->t[i].stopped && in->t[i].armed)
			disarm(&in->t[i]);
}

static int make_safe(struct injector *in)
{
	char last_why[sizeof(in->t->why)] = "";

	for (unsigned round = 0; round < in->max_rounds; round++) {
		unsigned unsafe = 0;
		int ret;

		disarm_stopped(in);
		for (size_t i = 0; i < in->n; i++) {
			struct held *h = &in->t[i];

			if (h->gone)
				continue;
			classify(in, h);
			if (h->unsafe) {
				unsafe++;
				memcpy(last_why, h->why, sizeof(last_why));
			}
		}
		in->st->unsafe += unsafe;
		if (!unsafe)
			return 0;
		pr_debug("inject: pid %d: %u threads unsafe (e.g. %s), "
			 "round %u", (int)in->pid, unsafe, last_why, round);
		in->st->rounds++;
		let_go(in, round);
		ret = seize_all(in);	/* they may have made new threads */
		if (ret)
			return ret;
	}
	pr_warn("inject: pid %d: threads never all at a safe point in %u "
		"rounds (last seen: %s); refused", (int)in->pid,
		in->max_rounds, last_why);
	return -EAGAIN;
}

/* The thread calls run on: stopped by our interrupt, the main one if it
 * can. */
static struct held *pick_caller(struct injector *in)
{
	struct held *best = NULL;

	for (size_t i = 0; i < in->n; i++) {
		struct held *h = &in->t[i];

		if (h->gone || !h->stopped || h->event != PTRACE_EVENT_STOP ||
		    h->armed)
			continue;
		if (!best || h->tid == in->pid)
			best = h;
	}
	return best;
}

/*
 * A breakpoint left in a thread's debug registers outlives the detach and
 * would kill it with SIGTRAP: a thread still armed but not yet stopped
 * (its interrupt came while it slept in the kernel) is waited for. */
static void disarm_late(struct injector *in, struct held *h)
{
	uint64_t start = now_ns();
	int ret = -EAGAIN;

	while (ret == -EAGAIN && now_ns() - start < CALL_WAIT_NS) {
		ret = tracee_poll_stop(h->tid, &h->sig, &h->event);
		if (ret == -EAGAIN)
			nap(1000000);
	}
	if (!ret) {
		h->stopped = true;
		disarm(h);
	} else if (ret == -EAGAIN) {
		pr_err("inject: pid %d: thread %d never stopped to have its "
		       "breakpoint cleared", (int)in->pid, (int)h->tid);
	}
}

static void release_all(struct injector *in)
{
	for (size_t i = 0; i < in->n; i++) {
		struct held *h = &in->t[i];

		if (h->armed && !h->gone && !h->stopped)
			disarm_late(in, h);
		else if (h->armed && !h->gone)
			disarm(h);

		/* Not stopped: the kernel detaches it when this thread
		 * ends. */
		if (!h->gone && h->stopped)
			ptrace(PTRACE_DETACH, h->tid, NULL,
			       (void *)(long)h->sig);
	}
	if (in->first_stop_ns)
		in->st->hold_ns = now_ns() - in->first_stop_ns;
}

static void *tracer_main(void *arg)
{
	struct injector *in = arg;
	int ret;

	ret = seize_all(in);
	if (!ret)
		ret = make_safe(in);
	if (!ret) {
		in->caller = pick_caller(in);
		ret = in->caller ? 0 : -EAGAIN;
	}
	for (size_t i = 0; i < in->n; i++)
		in->st->threads += !in->t[i].gone;
	if (!ret) {
		in->scratch_top = 0;
		ret = in->fn(in, in->fn_arg);
	}
	release_all(in);
	in->fn_ret = ret;
	return NULL;
}

int inject_run(const struct inject_opts *o, inject_fn fn, void *arg,
	       struct inject_stats *st)
{
	struct injector in = {
		.pid = o->pid, .maps = o->maps, .st = st, .fn = fn,
		.fn_arg = arg,
		.max_rounds = o->max_rounds ? o->max_rounds : DEFAULT_ROUNDS,
	};
	pid_t tracer;
	pthread_t th;
	int ret;

	memset(st, 0, sizeof(*st));
	ret = tracee_tracer_of(o->pid, ".", &tracer);
	if (ret)
		return ret == -ENOENT ? -ESRCH : ret;
	if (tracer)
		return -EBUSY;
	in.stack = malloc(STACK_MAX);
	ret = in.stack ? unwinder_new(o->maps, &in.unw) : -ENOMEM;
	if (!ret)
		ret = safepoint_new(o->pid, o->maps, &in.safe);
	if (!ret)
		ret = -pthread_create(&th, NULL, tracer_main, &in);
	if (!ret) {
		pthread_join(th, NULL);
		ret = in.fn_ret;
	}
	safepoint_free(in.safe);
	unwinder_free(in.unw);
	free(in.stack);
	free(in.t);
	return ret;
}

/* ---- calls ---- */

/* Everything a call changes, to put back. */
struct saved {
	struct user_regs_struct regs;
	uint8_t xstate[XSTATE_MAX];
	struct iovec xiov;
	uint64_t sigmask;
};

static int save(pid_t tid, struct saved *s)
{
	if (ptrace(PTRACE_GETREGS, tid, NULL, &s->regs))
		return -errno;
	s->xiov = (struct iovec){ s->xstate, sizeof(s->xstate) };
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &s->xiov))
		return -errno;
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(s->sigmask),
		   &s->sigmask))
		return -errno;
	return 0;
}

static void restore(pid_t tid, struct saved *s)
{
	if (ptrace(PTRACE_SETREGS, tid, NULL, &s->regs) ||
	    ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &s->xiov) ||
	    ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(s->sigmask),
		   &s->sigmask)) {
		/* Killed meanwhile: nothing left to restore. */
		if (errno == ESRCH)
			pr_info("inject: thread %d died during a call",
				(int)tid);
		else
			pr_err("inject: thread %d: state not restored: %s",
			       (int)tid, strerror(errno));
	}
}

/* Where a call's stack starts: below the red zone and the scratch area,
 * 16-byte aligned before the (zero) return address is pushed. */
static uint64_t call_sp(const struct saved *s)
{
	uint64_t low = s->regs.rsp - RED_ZONE - SCRATCH;

	return ((low - 64) & ~15ull) - 8;
}

/* A call that never came back: stop the thread where it is, so its
 * state can at least be put back. */
static int abandon(struct injector *in, pid_t tid)
{
	uint64_t start = now_ns();
	int sig, event;

	pr_err("inject: pid %d: call did not return in %llu s; abandoned",
	       (int)in->pid, CALL_WAIT_NS / 1000000000ull);
	ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
	while (now_ns() - start < STOP_WAIT_NS) {
		if (tracee_poll_stop(tid, &sig, &event) != -EAGAIN)
			break;
		nap(50000);
	}
	return -ETIMEDOUT;
}

/*
 * Run the call to its end: the fault at address 0 when it returns.
 * Other stops: an interrupt or group stop is resumed; any other signal
 * (an abort, a fault) is the call's own and ends it with -EIO. Then the
 * target's state is not what it was: the call may have changed its heap
 * or hold a lock halfway. Putting the registers back would resume the
 * thread on that state as if nothing had happened, so the thread is left
 * where the signal stopped it and gets the signal when released: the
 * target fails as it would have failed on its own, not later and
 * somewhere else.
 */
static int wait_return(struct injector *in, pid_t tid, uint64_t *ret)
{
	uint64_t start = now_ns();
	struct user_regs_struct u;
	int sig, event, r;

	for (;;) {
		r = tracee_poll_stop(tid, &sig, &event);
		if (r == -EAGAIN) {
			if (now_ns() - start > CALL_WAIT_NS)
				return abandon(in, tid);
			nap(50000);
			continue;
		}
		if (r)
			return r;
		if (event) {	/* not a signal: go on */
			ptrace(PTRACE_CONT, tid, NULL, NULL);
			continue;
		}
		if (ptrace(PTRACE_GETREGS, tid, NULL, &u))
			return -errno;
		if (sig == SIGSEGV && u.rip == 0) {
			*ret = u.rax;
			return 0;
		}
		pr_err("inject: pid %d: thread %d: the injected call was "
		       "stopped by signal %d (%s) at 0x%llx; the thread gets "
		       "the signal where it stopped", (int)in->pid, (int)tid,
		       sig, strsignal(sig), (unsigned long long)u.rip);
		in->broken_sig = sig;
		return -EIO;
	}
}

int inject_call(struct injector *in, uint64_t fn, const uint64_t *args,
		unsigned nargs, uint64_t *ret)
{
	pid_t tid = in->caller->tid;
	uint64_t mask, zero = 0, sp;
	struct user_regs_struct u;
	struct saved *s;
	int r;

	if (nargs > 6)
		return -EINVAL;
	if (in->broken_sig)
		return -EIO;
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = save(tid, s);
	if (r)
		goto out;
	u = s->regs;
	sp = call_sp(s);
	r = proc_mem_write(in->pid, sp, &zero, sizeof(zero));
	if (r)
		goto out;
	u.rsp = sp;
	u.rip = fn;
	u.rax = 0;
	u.orig_rax = -1;	/* no system call restart in our frame */
	u.rdi = nargs > 0 ? args[0] : 0;
	u.rsi = nargs > 1 ? args[1] : 0;
	u.rdx = nargs > 2 ? args[2] : 0;
	u.rcx = nargs > 3 ? args[3] : 0;
	u.r8 = nargs > 4 ? args[4] : 0;
	u.r9 = nargs > 5 ? args[5] : 0;
	/* Asynchronous signals wait; faults stay deliverable (a blocked
	 * fault would reset its handler). */
	mask = ~0ull & ~((1ull << (SIGSEGV - 1)) | (1ull << (SIGBUS - 1)) |
			 (1ull << (SIGILL - 1)) | (1ull << (SIGFPE - 1)) |
			 (1ull << (SIGTRAP - 1)));
	if (ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(mask), &mask) ||
	    ptrace(PTRACE_SETREGS, tid, NULL, &u) ||
	    ptrace(PTRACE_CONT, tid, NULL, NULL)) {
		r = -errno;
		restore(tid, s);
		goto out;
	}
	in->caller->stopped = false;
	r = wait_return(in, tid, ret);
	in->caller->stopped = true;
	if (r == -EIO && in->broken_sig) {
		in->caller->sig = in->broken_sig;	/* see wait_return */
		goto out;
	}
	restore(tid, s);
	in->caller->sig = 0;	/* the fault at 0 is ours: not delivered */
out:
	free(s);
	return r;
}

int inject_push(struct injector *in, const void *data, size_t len,
		uint64_t *addr)
{
	struct user_regs_struct u;
	uint64_t a;
	int ret;

	if (in->broken_sig)
		return -EIO;
	if (in->scratch_used + len > SCRATCH)
		return -ENOSPC;
	if (ptrace(PTRACE_GETREGS, in->caller->tid, NULL, &u))
		return -errno;
	in->scratch_used = (in->scratch_used + len + 15) & ~15ull;
	a = u.rsp - RED_ZONE - in->scratch_used;
	ret = proc_mem_write(in->pid, a, data, len);
	if (ret)
		return ret;
	*addr = a;
	return 0;
}

int inject_read(struct injector *in, uint64_t addr, void *buf, size_t len)
{
	return proc_mem_read(in->pid, addr, buf, len);
}
