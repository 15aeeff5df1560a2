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
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <time.h>
#include <unistd.h>

#include "sampler/unwind/dso.h"
#include "sampler/heap/inject.h"
#include "sampler/heap/inject_i.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/proc.h"
#include "sampler/heap/safepoint.h"
#include "sampler/tracee.h"
#include "sampler/turns.h"
#include "sampler/unwind/unwind.h"

#define STACK_MAX (64 * 1024)
#define MAX_FRAMES 256
#define DEFAULT_ROUNDS 200
#define LET_WAIT_NS 100000000ull	/* an unsafe thread's turn, at most */
#define STEP_WAIT_NS 2000000ull		/* a step longer than this blocked */
#define STEP_OUT_NS 200000000ull	/* stepping one thread out, at most */
#define STEP_AFTER_ROUNDS 10		/* free rounds before stepping */

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

/*
 * A trap of our own stepping, not the target's: a step's (TRAP_TRACE,
 * TRAP_BRANCH), or the one a step over a system call reports when the call
 * returns (TRAP_BRKPT). The target's own int3 is SI_KERNEL.
 */
static bool step_trap(pid_t tid)
{
	siginfo_t si;

	return !ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) &&
	       si.si_signo == SIGTRAP &&
	       (si.si_code == TRAP_TRACE || si.si_code == TRAP_BRANCH ||
		si.si_code == TRAP_BRKPT);
}

/*
 * One look at h's wait status (tracee_poll_stop). A trap of our stepping
 * is never handed back: the trap of a step that blocked in a system call
 * comes when the call returns, maybe rounds later.
 */
static int poll_held(struct held *h)
{
	int ret = tracee_poll_stop(h->tid, &h->sig, &h->event);

	if (!ret && h->stepped && h->sig == SIGTRAP && !h->event &&
	    step_trap(h->tid))
		h->sig = 0;
	return ret;
}

/*
 * The signal to resume h with. A thread is let run only while it is
 * unsafe: inside the allocator, maybe holding its lock. An asynchronous
 * signal it stopped with is held back (its siginfo kept) and sent again
 * on release, at a safe point: delivered now, a handler that allocates
 * (not async-signal-safe, but common) would deadlock on that lock, and
 * holding a thread inside the allocator makes that likely where it was
 * rare (the stress suite's 1 kHz timer). Faults and traps are delivered:
 * the instruction would only fault again.
 */
static bool synchronous(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
	       sig == SIGFPE || sig == SIGTRAP || sig == SIGSYS;
}

static int pass_sig(struct held *h)
{
	int sig = h->sig;

	if (!sig || !h->unsafe || synchronous(sig))
		return sig;
	/* A standard signal already held back is one pending signal, as
	 * the kernel keeps it for a thread that blocks it: a 1 kHz timer
	 * must not fill the list (and then be delivered). */
	for (unsigned i = 0; sig < SIGRTMIN && i < h->ndefer; i++)
		if (h->defer[i].si_signo == sig)
			return 0;
	if (h->ndefer == NDEFER ||
	    ptrace(PTRACE_GETSIGINFO, h->tid, NULL, &h->defer[h->ndefer]))
		return sig;
	h->ndefer++;
	return 0;
}

/*
 * Send h's held-back signals again, now that it is released where it may
 * take them: with their own siginfo where the kernel lets a process queue
 * it (timers, sigqueue), else as from tgkill (si_code SI_TKILL).
 */
static void requeue_deferred(struct injector *in, struct held *h)
{
	for (unsigned i = 0; i < h->ndefer; i++) {
		siginfo_t *si = &h->defer[i];

		if ((si->si_code >= 0 || si->si_code == SI_TKILL ||
		     syscall(SYS_rt_tgsigqueueinfo, in->pid, h->tid,
			     si->si_signo, si)) &&
		    syscall(SYS_tgkill, in->pid, h->tid, si->si_signo))
			pr_err("inject: pid %d: thread %d: signal %d held "
			       "back could not be sent again: %s",
			       (int)in->pid, (int)h->tid, si->si_signo,
			       strerror(errno));
	}
	h->ndefer = 0;
}

/* One look at h: false once it stopped (or is gone). */
static bool still_running(struct held *h)
{
	int ret = poll_held(h);

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
		size_t added;
		pid_t *tids;
		size_t n;
		int ret;

		ret = proc_tasks(in->pid, &tids, &n);
		if (ret)
			return ret == -ENOENT ? -ESRCH : ret;
		added = in->n;
		for (size_t i = 0; i < n && !ret; i++)
			if (!find_held(in, tids[i]))
				ret = seize(in, tids[i]);
		/* an exiting thread stays listed while it cannot be seized:
		 * only a thread seized counts as new */
		added = in->n - added;
		free(tids);
		if (ret)
			return ret;
		wait_stops(in);
		if (!added)
			return 0;
	}
	snprintf(in->st->why, sizeof(in->st->why), "new threads kept "
		 "appearing while its threads were held");
	pr_warn("inject: pid %d: %s; refused", (int)in->pid, in->st->why);
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

/* A thread that exited, or is exiting: nothing to judge. */
static bool task_gone(pid_t pid, pid_t tid)
{
	uint64_t run;
	char state;

	return proc_task_sched(pid, tid, &run, &state) ||
	       state == 'Z' || state == 'X' || state == 'x';
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
	/*
	 * Not stopped and not asleep where /proc shows it: on a CPU this
	 * instant (a runnable thread the busy machine had not run in time
	 * to take its interrupt). It stops before it runs any more of its
	 * code, but where is not known: it may be inside the allocator.
	 */
	if (thread_regs(in, h, &r, &sysno)) {
		h->unsafe = !task_gone(in->pid, h->tid);
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

/* Wait up to ns for h to stop; false if it is still running (or gone). */
static bool wait_held(struct held *h, uint64_t ns)
{
	uint64_t start = now_ns();
	int ret;

	while ((ret = poll_held(h)) == -EAGAIN && now_ns() - start < ns)
		nap(20000);
	if (ret && ret != -EAGAIN)
		h->gone = true;
	h->stopped = !ret;
	return h->stopped;
}

/* Resume h with the signal its stop holds (pass_sig), and take its next
 * stop. */
static void resume_until_stop(struct held *h)
{
	if (ptrace(PTRACE_CONT, h->tid, NULL, (void *)(long)pass_sig(h))) {
		h->gone = true;
		return;
	}
	h->stopped = false;
	h->sig = 0;
	wait_held(h, STOP_WAIT_NS);
}

/*
 * Turn h's stop (a step's trap) into an interrupt stop like the others'
 * (calls are made from those): interrupt, resume with no signal, and
 * take the stop the pending interrupt makes before the thread runs an
 * instruction.
 */
static void reinterrupt(struct held *h)
{
	if (ptrace(PTRACE_INTERRUPT, h->tid, NULL, NULL))
		h->gone = true;
	else
		resume_until_stop(h);
}

/*
 * Has a step of h, begun at start, blocked? Once it took STEP_WAIT_NS and
 * h sleeps (a system call that waits: maybe for a lock a thread we hold
 * has), or STEP_OUT_NS in any case. A runnable thread is only waiting for
 * a CPU on a busy machine.
 */
static bool step_blocked(struct injector *in, struct held *h,
			 uint64_t start)
{
	uint64_t took = now_ns() - start, run;
	char state;

	if (took < STEP_WAIT_NS)
		return false;
	if (took >= STEP_OUT_NS ||
	    proc_task_sched(in->pid, h->tid, &run, &state))
		return true;
	return state != 'R' && state != 'D';
}

/*
 * One step of h: 1 when it stopped after it, 0 when the step blocked (a
 * system call that waits, maybe for a thread we hold: h is interrupted)
 * or a signal of the target's came (kept in h->sig for the release).
 */
static int step_once(struct injector *in, struct held *h, int *req)
{
	uint64_t start = now_ns();
	int ret;

	while (ptrace(*req, h->tid, NULL, NULL)) {
		if (errno != EIO || *req == PTRACE_SINGLESTEP) {
			h->gone = true;
			return 0;
		}
		*req = PTRACE_SINGLESTEP;	/* no block stepping here */
	}
	h->stopped = false;
	h->stepped = true;
	while ((ret = poll_held(h)) == -EAGAIN && !step_blocked(in, h, start))
		nap(5000);
	if (ret == -EAGAIN) {
		if (ptrace(PTRACE_INTERRUPT, h->tid, NULL, NULL))
			h->gone = true;
		return 0;
	}
	if (ret) {
		h->gone = true;
		return 0;
	}
	h->stopped = true;
	/* poll_held took our trap back: a stop with no signal and no event
	 * is a step's end; anything else ends the stepping */
	return !h->event && !h->sig;
}

/*
 * Step h out of its unsafe frame: run it, a branch at a time, until it
 * returns to resume_at. Exact, where letting it run a moment is not: an
 * interrupt takes effect when a system call returns, and a thread that
 * grows the heap through sbrk makes its system calls inside the
 * allocator, so after any pause it is found there again. (An execution
 * breakpoint at resume_at would do the same in one stop, but debug
 * registers are not there on every machine: on this project's VMs gdb's
 * hbreak never fires.) True when it got there; else it is left
 * interrupted (or stopped by a signal of its own) where it is.
 */
static bool step_out(struct injector *in, struct held *h)
{
	int req = PTRACE_SINGLEBLOCK;
	uint64_t start = now_ns();
	struct user_regs_struct u;

	if (pass_sig(h))
		return false;	/* a fault to deliver first */
	h->sig = 0;
	while (now_ns() - start < STEP_OUT_NS) {
		if (!step_once(in, h, &req))
			return false;
		if (ptrace(PTRACE_GETREGS, h->tid, NULL, &u)) {
			h->gone = true;
			return false;
		}
		if (u.rip == h->resume_at)
			break;
	}
	reinterrupt(h);
	return h->stopped && u.rip == h->resume_at;
}

/*
 * Has h, let run, had its turn? It has once it ran budget_ns of CPU time,
 * or, asleep in the kernel (its way out of the frame may be another
 * thread's to give), once budget_ns passed. CPU time, not the clock: on a
 * busy machine a thread let go for a millisecond may not run at all.
 */
static bool had_turn(struct injector *in, struct held *h, uint64_t waited,
		     uint64_t budget_ns)
{
	uint64_t run;
	char state;

	if (proc_task_sched(in->pid, h->tid, &run, &state))
		return waited >= budget_ns;
	if (run - h->run0_ns >= budget_ns)
		return true;
	return waited >= budget_ns && state != 'R';
}

/* Wait until every let-go thread stopped on its own (a signal) or had its
 * turn, or LET_WAIT_NS passed. */
static void wait_let(struct injector *in, uint64_t budget_ns)
{
	uint64_t start = now_ns(), waited = 0;
	bool waiting = true;

	while (waiting && waited < LET_WAIT_NS) {
		waiting = false;
		for (size_t i = 0; i < in->n; i++) {
			struct held *h = &in->t[i];

			if (h->gone || h->stopped || !h->let)
				continue;
			if (still_running(h) &&
			    !had_turn(in, h, waited, budget_ns))
				waiting = true;
		}
		if (waiting)
			nap(20000);
		waited = now_ns() - start;
	}
}

/*
 * Move the unsafe threads on. Each that knows the frame it must leave is
 * stepped out of it; the others (and those whose step blocked: waiting
 * for a lock one of the others holds) run together, alone, for a turn,
 * then are interrupted again.
 */
static void let_go(struct injector *in, unsigned round)
{
	unsigned let = 0;

	for (size_t i = 0; i < in->n; i++) {
		struct held *h = &in->t[i];

		if (round >= STEP_AFTER_ROUNDS && !h->gone && h->stopped &&
		    h->unsafe && h->resume_at && step_out(in, h))
			h->unsafe = false;
	}
	for (size_t i = 0; i < in->n; i++) {
		struct held *h = &in->t[i];

		if (h->gone || !h->stopped || !h->unsafe)
			continue;
		if (proc_task_sched(in->pid, h->tid, &h->run0_ns, &(char){0}))
			h->run0_ns = 0;
		if (ptrace(PTRACE_CONT, h->tid, NULL,
			   (void *)(long)pass_sig(h))) {
			h->gone = true;
			continue;
		}
		h->stopped = false;
		h->sig = 0;
		h->let = true;
		let++;
	}
	if (!let)
		return;
	wait_let(in, round < 20 ? 1000000 : 5000000);
	for (size_t i = 0; i < in->n; i++) {
		struct held *h = &in->t[i];

		if (!h->gone && !h->stopped && h->let &&
		    ptrace(PTRACE_INTERRUPT, h->tid, NULL, NULL))
			h->gone = true;
	}
	/* Only the threads let go: one that never stopped (asleep in the
	 * kernel since it was seized) must not cost every round the wait. */
	wait_some_stops(in, true);
	for (size_t i = 0; i < in->n; i++)
		in->t[i].let = false;
}

/*
 * A trap of our stepping still queued for h, to be reported when it next
 * runs: a step over a system call that we interrupted. A call made on h
 * would stop at it.
 */
static bool trap_queued(struct held *h)
{
	struct __ptrace_peeksiginfo_args a = { .off = 0, .nr = 1 };
	siginfo_t si;

	if (!h->stepped)
		return false;
	for (; a.off < 64; a.off++) {
		if (ptrace(PTRACE_PEEKSIGINFO, h->tid, &a, &si) != 1)
			return false;
		if (si.si_signo == SIGTRAP && si.si_code != SI_KERNEL &&
		    si.si_code != SI_USER && si.si_code != SI_TKILL)
			return true;
	}
	return false;
}

/*
 * Take every trap of our stepping out of h's queue before h leaves our
 * hands: released with one, it would die of SIGTRAP. Resumed with no
 * interrupt pending, h dequeues its signals before it runs a single
 * instruction of its own, the kernel's synchronous ones (our traps) first,
 * and stops at each; ours are dropped (poll_held), the target's are
 * handed back on the next resume.
 */
static void drain_traps(struct held *h)
{
	for (int i = 0; i < 8 && h->stopped && !h->gone && trap_queued(h);
	     i++) {
		resume_until_stop(h);
		if (!h->gone && !h->stopped &&
		    ptrace(PTRACE_INTERRUPT, h->tid, NULL, NULL))
			h->gone = true;
	}
}

/*
 * Every stopped thread into an interrupt stop with none of our traps
 * queued, as seizing left it: calls are made from such stops, and a
 * stepped thread may have stopped last at a trap of ours. A thread
 * stopped by a signal of its own keeps it, to be delivered on release.
 */
static void settle(struct injector *in)
{
	for (size_t i = 0; i < in->n; i++) {
		struct held *h = &in->t[i];

		if (h->gone || !h->stopped)
			continue;
		drain_traps(h);
		if (!h->gone && h->stopped && !h->event && !h->sig)
			reinterrupt(h);
	}
}

static int make_safe(struct injector *in)
{
	char last_why[sizeof(in->t->why)] = "";

	for (unsigned round = 0; round < in->max_rounds; round++) {
		unsigned unsafe = 0;
		int ret;

		settle(in);
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
	snprintf(in->st->why, sizeof(in->st->why), "threads never all at a "
		 "safe point in %u rounds (last seen: %s)", in->max_rounds,
		 last_why);
	pr_warn("inject: pid %d: %s; refused", (int)in->pid, in->st->why);
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
		    trap_queued(h))
			continue;
		if (!best || h->tid == in->pid)
			best = h;
	}
	return best;
}

static void release_one(struct injector *in, struct held *h)
{
	if (!h->gone && h->ndefer)
		requeue_deferred(in, h);
	/* Not stopped: the kernel detaches it when this thread ends. */
	if (!h->gone && h->stopped)
		ptrace(PTRACE_DETACH, h->tid, NULL, (void *)(long)h->sig);
}

/*
 * Release every thread; those we stepped last. A stepped thread still
 * asleep in a system call it made under our single-step flag (waiting,
 * maybe, for a lock another held thread has) must be seen to stop, its
 * traps taken, and be detached by us: the detach clears the flag, a
 * tracer's exit does not, and the thread would die of SIGTRAP.
 */
static void release_all(struct injector *in)
{
	for (size_t i = 0; i < in->n; i++)
		if (!in->t[i].stepped)
			release_one(in, &in->t[i]);
	for (size_t i = 0; i < in->n; i++) {
		struct held *h = &in->t[i];

		if (!h->stepped || h->gone)
			continue;
		if (!h->stopped && !wait_held(h, CALL_WAIT_NS))
			pr_err("inject: pid %d: thread %d never stopped to "
			       "have its single-step flag cleared",
			       (int)in->pid, (int)h->tid);
		drain_traps(h);
		release_one(in, h);
	}
	if (in->first_stop_ns)
		in->st->hold_ns = now_ns() - in->first_stop_ns;
}

/* Wait for the threads not yet stopped; true if any stopped. */
static bool wait_new_stops(struct injector *in)
{
	unsigned before = 0, after = 0;

	for (size_t i = 0; i < in->n; i++)
		before += !in->t[i].gone && in->t[i].stopped;
	wait_stops(in);
	for (size_t i = 0; i < in->n; i++)
		after += !in->t[i].gone && in->t[i].stopped;
	return after > before;
}

/*
 * No thread is in a stop calls can be made from: each holds a signal of
 * its own. Deliver the first one's (its handler's frame is made; it stops
 * before running any of it), so that it can be judged and used.
 */
static bool deliver_one(struct injector *in)
{
	for (size_t i = 0; i < in->n; i++) {
		struct held *h = &in->t[i];

		if (!h->gone && h->stopped && h->sig) {
			reinterrupt(h);
			return true;
		}
	}
	return false;
}

static unsigned held_count(struct injector *in)
{
	unsigned n = 0;

	for (size_t i = 0; i < in->n; i++)
		n += !in->t[i].gone;
	return n;
}

static void log_no_caller(struct injector *in)
{
	unsigned held = 0, running = 0, event = 0, sig = 0, queued = 0;

	for (size_t i = 0; i < in->n; i++) {
		struct held *h = &in->t[i];

		if (h->gone)
			continue;
		held++;
		running += !h->stopped;
		event += h->stopped && h->event == PTRACE_EVENT_STOP;
		sig += h->stopped && h->sig;
		queued += h->stopped && trap_queued(h);
	}
	pr_warn("inject: pid %d: no thread stopped where a call can be made "
		"(%u held: %u not stopped, %u in an interrupt stop, %u with a "
		"signal, %u with a trap queued); refused", (int)in->pid, held,
		running, event, sig, queued);
}

static void *tracer_main(void *arg)
{
	struct injector *in = arg;
	int ret;

	ret = seize_all(in);
	for (int tries = 0; !ret && tries < 4; tries++) {
		ret = make_safe(in);
		if (ret || (in->caller = pick_caller(in)))
			break;
		/*
		 * No thread is in a stop calls can be made from. One asleep
		 * in the kernel may stop now (it is judged again: it may
		 * have run); else each holds a signal of its own: deliver
		 * one (it stops at its handler's door) and judge again.
		 */
		if (!wait_new_stops(in) && !deliver_one(in))
			break;
	}
	if (!ret && !in->caller && !held_count(in)) {
		ret = -ESRCH;	/* it exited meanwhile */
	} else if (!ret && !in->caller) {
		log_no_caller(in);
		snprintf(in->st->why, sizeof(in->st->why), "no thread stopped "
			 "where a call can be made");
		ret = -EAGAIN;
	}
	for (size_t i = 0; i < in->n; i++)
		in->st->threads += !in->t[i].gone;
	if (!ret) {
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
		.restorer = o->restorer,
	};
	pthread_t th;
	int ret;

	memset(st, 0, sizeof(*st));
	ret = turns_take(o->turns, o->pid, TRACEE_OWN_WAIT_MS);
	if (ret)
		return ret;
	/* a dump's tracer thread may still be letting go (tracee.h) */
	ret = tracee_await_untraced(o->pid, "inject");
	if (ret)
		goto out;
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
out:
	turns_give(o->turns, o->pid);
	return ret;
}
