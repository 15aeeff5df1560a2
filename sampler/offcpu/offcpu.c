// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * offcpu.c - one off-CPU window: looks at every thread's /proc files hz
 * times a second, stacks of the sleeping ones, perf samples of the
 * running ones (wall), then each thread's exact times shared out among
 * its samples.
 *
 * A look that finds a thread's schedstat as it was at the last look, the
 * thread off the CPU then, finds it where it was: its stack is taken
 * again, and only the syscall file is read (asleep still, or woken).
 * Any other look reads where the thread is (taskstat.h); the stack of a
 * thread off the CPU is copied, checked, unwound, classified
 * (waitclass.h) and kept for the looks that follow.
 *
 * Each sample first stands for the time since the thread's last look
 * (off the CPU) or for one cpu-clock period (running). At the end each
 * thread's exact times are shared out among its samples (ocshare.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampler/clock.h"
#include "sampler/cpu/cpu.h"
#include "sampler/offcpu/kstack.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/offcpu/octhreads.h"
#include "sampler/offcpu/offcpu.h"
#include "sampler/offcpu/offcpu_i.h"
#include "sampler/perf/perf.h"
#include "sampler/proc.h"
#include "sampler/model/profile.h"
#include "sampler/offcpu/pseudoloc.h"
#include "sampler/unwind/symbolize.h"
#include "sampler/syscalls.h"
#include "sampler/offcpu/taskstat.h"
#include "sampler/unwind/unwind.h"
#include "sampler/offcpu/waitclass.h"

#define MAX_FRAMES 128
#define MAX_KFRAMES OC_MAX_KFRAMES
#define RUNTIME_FRAMES 128	/* a stack may gain: Python's frames */
#define STACK_MIN 8192
#define STACK_MAX (64 * 1024)
#define KSTACK_TEXT 4096
#define STOP_CHECK_NS 50000000ull
#define DISCOVER_NS 100000000ull	/* new threads, and is it alive */
/* offcpu=sched: how often the rings are read. A switch out is read
 * within this, while most sleeps still last: its system call is read
 * from /proc then, where the thread still sleeps in it. */
#define SCHED_POLL_NS 5000000ull

static const char *const kind_names[] = {
	[OFFCPU_WALL] = "wall", [OFFCPU_BLOCK] = "block",
	[OFFCPU_MUTEX] = "mutex",
};

const char *oc_state_label(char letter)
{
	switch (letter) {
	case 'R':
		return "runnable";
	case 'D':
		return "disk";
	case 'T':
	case 't':
		return "stopped";
	default:
		return "sleeping";
	}
}

/* ---- samples ---- */

static int labels_of(struct oc_run *run, const struct oc_thread *th,
		     const char *state, int64_t ns, struct pf_label labels[5],
		     uint32_t *n)
{
	const struct offcpu_opts *o = run->o;

	*n = 3;
	if (o->timeline_t0) {
		labels[(*n)++] = (struct pf_label){
			.key = run->key_ts,
			.num = run->look_ns > o->timeline_t0 ?
			       (int64_t)(run->look_ns - o->timeline_t0) : 0,
		};
		labels[(*n)++] = (struct pf_label){ .key = run->key_dur,
						    .num = ns };
	}
	labels[0] = (struct pf_label){ .key = run->key_thread,
				       .str = th->tid_str };
	labels[1] = (struct pf_label){ .key = run->key_thread_name,
				       .str = th->name_str };
	labels[2] = (struct pf_label){ .key = run->key_state,
				       .str = profile_intern(run->p, state) };
	return labels[2].str < 0 ? -ENOMEM : 0;
}

int oc_add(struct oc_run *run, const struct oc_thread *th,
	   const uint64_t *locs, uint32_t n, const char *state,
	   int64_t count, int64_t ns)
{
	int64_t values[2] = { count, ns };
	struct pf_label labels[5];
	uint32_t nlabels;
	uint64_t over;
	int ret;

	if (run->o->max_stacks &&
	    profile_nsamples(run->p) >= run->o->max_stacks) {
		if (!run->overflowed) {
			char text[128];

			snprintf(text, sizeof(text), run->o->timeline_t0 ?
				 "proffs: more than %u off-CPU looks; later "
				 "ones are left out of the timeline" :
				 "proffs: more than %u "
				 "distinct stacks; later new stacks are "
				 "counted under [max_stacks reached]",
				 run->o->max_stacks);
			ret = profile_add_comment(run->p, text);
			if (ret)
				return ret;
			run->overflowed = true;
		}
		/* each look of a timeline is its own sample: past the
		 * bound they would grow without one */
		if (run->o->timeline_t0)
			return 0;
		ret = pseudoloc(run->ps, "", "[max_stacks reached]", &over);
		if (ret)
			return ret;
		locs = &over;
		n = 1;
	}
	ret = labels_of(run, th, state, ns, labels, &nlabels);
	return ret ? ret : profile_add_sample(run->p, locs, n, labels,
					      nlabels, values);
}

/*
 * A look at th off the CPU, in the stack it keeps: dt more there. A
 * wait is new when the thread ran since the last look and now sleeps;
 * a runnable thread still inside a synchronizing call is still blocked
 * by it, as Go counts a wait until the waiter runs.
 */
static int add_look(struct oc_run *run, struct oc_thread *th, char state,
		    uint64_t dt, bool new_wait)
{
	enum wait_class need = run->o->kind == OFFCPU_MUTEX ? WAIT_LOCK :
			       WAIT_SYNC;
	struct oc_stack *st = &th->stacks[th->cur];
	bool runnable = state == 'R';

	st->sleeps += new_wait;
	if (runnable) {
		th->runq_ns += dt;
		st->runq_ns += dt;
	} else {
		th->off_ns += dt;
		st->off_ns += dt;
	}
	if (run->o->kind == OFFCPU_WALL)
		return oc_add(run, th, st->locs, st->nlocs,
			      oc_state_label(state), 1, dt);
	if (th->class < need)
		return 0;
	return oc_add(run, th, st->locs, st->nlocs, oc_state_label(state),
		      new_wait && !runnable, dt);
}

/* ---- threads ---- */

int oc_thread_new(struct oc_run *run, pid_t tid, struct oc_thread **out)
{
	struct oc_thread *th;
	const char *rt;
	char buf[32];
	int ret;

	ret = octhreads_add(run->threads, tid, &th);
	if (ret)
		return ret;
	run->st->threads++;
	th->copy_size = STACK_MIN;
	snprintf(buf, sizeof(buf), "%d", (int)tid);
	th->tid_str = profile_intern(run->p, buf);
	/* the runtime's name (a Python thread's), else the kernel's */
	rt = symbolizer_thread_name(run->sc.sym, tid);
	if (!rt && proc_comm(run->o->pid, tid, buf, sizeof(buf)))
		strcpy(buf, "?");
	th->name_str = profile_intern(run->p, rt ? rt : buf);
	if (th->tid_str < 0 || th->name_str < 0)
		return -ENOMEM;
	th->first_ns = th->last_ns = now_ns();
	if (task_read_sched(run->o->pid, tid, &th->files, &th->first) ||
	    task_read_switches(run->o->pid, tid, &th->sw_first)) {
		th->gone = true;
		task_files_close(&th->files);
	}
	th->last = th->first;
	*out = th;
	return 0;
}

/* Threads started since the last call; false once the process is gone. */
static int discover(struct oc_run *run, bool *alive)
{
	struct oc_thread *th;
	pid_t *tids;
	size_t n;
	int ret;

	*alive = proc_alive(run->o->pid);
	if (!*alive)
		return 0;
	ret = proc_tasks(run->o->pid, &tids, &n);
	if (ret) {
		*alive = false;
		return 0;
	}
	for (size_t i = 0; i < n && !ret; i++)
		if (!octhreads_find(run->threads, tids[i]))
			ret = oc_thread_new(run, tids[i], &th);
	free(tids);
	return ret;
}

/* The kernel frames of th at snap's place, innermost first: read now,
 * or those of the last time it was there. */
static int kernel_locs(struct oc_run *run, struct oc_thread *th,
		       const struct task_snap *snap)
{
	const char *knames[MAX_KFRAMES];
	int nk, ret = 0;

	if (snap->kstack_known)
		return 0;
	th->nklocs = 0;
	th->have_place = snap->kstack_len > 0;
	task_snap_place(snap, &th->place);
	nk = snap->kstack_len ? kstack_names(run->ktext, knames,
					     MAX_KFRAMES) : 0;
	for (int i = 0; i < nk && !ret; i++)
		ret = pseudoloc(run->ps, "[k] ", knames[i],
				&th->klocs[th->nklocs++]);
	return ret;
}

int oc_syscall_loc(struct oc_run *run, long sysno, char letter,
		   uint64_t *loc)
{
	char sysname[32];

	*loc = 0;
	if (sysno >= 0) {
		syscall_name_fmt(sysno, sysname, sizeof(sysname));
		return pseudoloc(run->ps, "[syscall] ", sysname, loc);
	}
	if (sysno == OC_SYSNO_UNKNOWN)	/* offcpu=sched: not found out */
		return pseudoloc(run->ps, "[syscall] ", "?", loc);
	if (letter != 'R')
		return pseudoloc(run->ps, "", "[asleep outside a system call]",
				 loc);
	return 0;
}

/* The frames of a thread off the CPU: kernel ones (innermost first),
 * the system call it is in, then the user stack. */
static int stack_locs(struct oc_run *run, struct oc_thread *th,
		      const struct task_snap *snap, const uint64_t *pcs,
		      int npcs, uint64_t *locs, uint32_t *n)
{
	int ret, nuser = 0;

	ret = kernel_locs(run, th, snap);
	if (ret)
		return ret;
	memcpy(locs, th->klocs, th->nklocs * sizeof(*locs));
	*n = th->nklocs;
	ret = oc_syscall_loc(run, snap->sysno, snap->state, &locs[*n]);
	if (locs[*n])
		(*n)++;
	if (!ret)
		ret = symbolizer_stack(run->sc.sym, th->tid, pcs, npcs,
				       &locs[*n], MAX_FRAMES + RUNTIME_FRAMES,
				       &nuser, NULL);
	*n += nuser;
	return ret;
}

/* A fresh look found th off the CPU: unwind, classify, keep its stack. */
static int take_stack(struct oc_run *run, struct oc_thread *th,
		      const struct task_snap *snap)
{
	uint64_t pcs[MAX_FRAMES];
	uint64_t locs[MAX_FRAMES + RUNTIME_FRAMES + MAX_KFRAMES + 1];
	uint32_t nlocs;
	size_t used;
	bool short_copy;
	int npcs, ret;

	run->st->snapshots++;
	unwind_stack(run->sc.unw, &snap->regs, run->stack, snap->stack_len, pcs,
		     MAX_FRAMES, &npcs);
	if (!unwind_last_complete(run->sc.unw))
		run->st->incomplete++;
	unwind_last_stack_use(run->sc.unw, &used, &short_copy);
	if (short_copy && th->copy_size < STACK_MAX)
		th->copy_size *= 2;
	ret = stack_locs(run, th, snap, pcs, npcs, locs, &nlocs);
	if (!ret)
		ret = octhread_set_stack(th, locs, nlocs);
	if (ret)
		return ret;
	th->class = waitclass_of(run->wc, snap->sysno, &snap->regs, pcs,
				 npcs);
	th->stacks[th->cur].class = th->class;
	th->have_stack = true;
	th->state = snap->state;
	return 0;
}

static int new_stack(struct oc_run *run, struct oc_thread *th,
		     const struct task_snap *snap, uint64_t dt)
{
	int ret = take_stack(run, th, snap);

	return ret ? ret : add_look(run, th, snap->state, dt, true);
}

static void thread_gone(struct oc_thread *th)
{
	th->gone = true;
	th->have_stack = false;
	task_files_close(&th->files);
}

/* Look at one thread now. */
static int look(struct oc_run *run, struct oc_thread *th)
{
	struct task_sched cur, prev;
	struct task_snap snap;
	uint64_t now = now_ns(), dt;
	bool same, asleep;
	int ret;

	if (task_read_sched(run->o->pid, th->tid, &th->files, &cur)) {
		thread_gone(th);
		return 0;
	}
	run->st->looks++;
	run->look_ns = now;
	dt = now - th->last_ns;
	same = task_sched_equal(&cur, &th->last);
	prev = th->last;
	th->last = cur;
	th->last_ns = now;
	if (same && th->have_stack) {
		/* It has not run: same stack and state, unless woken. */
		if (task_still_asleep(run->o->pid, th->tid, &th->files,
				      &asleep)) {
			thread_gone(th);
			return 0;
		}
		run->st->reused++;
		return add_look(run, th, asleep ? th->state : 'R', dt, false);
	}
	/* Off the CPU at the last look and on a CPU once since: the
	 * run-queue time between is that one wake-up's wait, whole. */
	if (th->have_stack && cur.slices == prev.slices + 1) {
		th->wake_ns += cur.wait_ns - prev.wait_ns;
		th->wakes++;
	}
	th->have_stack = false;
	ret = task_snapshot(run->o->pid, th->tid, &th->files, run->sc.maps,
			    &cur, run->stack, th->copy_size, run->ktext,
			    run->ktext ? KSTACK_TEXT : 0,
			    th->have_place ? &th->place : NULL, &snap);
	if (ret) {
		thread_gone(th);
		return 0;
	}
	if (snap.where == TASK_RACED)
		run->st->raced++;
	if (snap.where == TASK_RACED || snap.where == TASK_RUNNING)
		return 0;	/* its exact times say how long */
	return new_stack(run, th, &snap, dt);
}

int oc_look_first(struct oc_run *run, struct oc_thread *th, bool *off,
		  long *sysno, uint64_t *pc)
{
	struct task_snap snap;

	*off = false;
	*sysno = -1;
	*pc = 0;
	if (task_read_sched(run->o->pid, th->tid, &th->files, &th->last) ||
	    task_snapshot(run->o->pid, th->tid, &th->files, run->sc.maps,
			  &th->last, run->stack, th->copy_size, run->ktext,
			  run->ktext ? KSTACK_TEXT : 0, NULL, &snap))
		return 0;	/* gone: its records say the rest */
	if (snap.where != TASK_BLOCKED && snap.where != TASK_RUNNABLE)
		return 0;
	*off = true;
	*sysno = snap.sysno;
	*pc = snap.regs.r[UREG_RIP];
	return take_stack(run, th, &snap);
}

static int look_all(struct oc_run *run)
{
	size_t n = octhreads_count(run->threads);
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++) {
		struct oc_thread *th = octhreads_at(run->threads, i);

		if (!th->gone)
			ret = look(run, th);
	}
	return ret;
}

/* Context switches at the window's end, to tell apart the two kinds of
 * run-queue wait (ocshare.c). */
static void last_switches(struct oc_run *run)
{
	size_t n = octhreads_count(run->threads);

	for (size_t i = 0; i < n; i++) {
		struct oc_thread *th = octhreads_at(run->threads, i);

		th->have_sw = !th->gone &&
			      !task_read_switches(run->o->pid, th->tid,
						  &th->sw_last);
	}
}

/* ---- the window ---- */

static int setup_profile(struct oc_run *run)
{
	const struct offcpu_opts *o = run->o;
	int ret;

	ret = profile_new(&run->p);
	if (ret)
		return ret;
	if (o->kind == OFFCPU_WALL)
		ret = profile_add_sample_type(run->p, "samples", "count") ||
		      profile_add_sample_type(run->p, "wall", "nanoseconds") ||
		      profile_set_period(run->p, "wall", "nanoseconds",
					 clock_period_ns(o->hz));
	else	/* Go's block and mutex profiles */
		ret = profile_add_sample_type(run->p, "contentions",
					      "count") ||
		      profile_add_sample_type(run->p, "delay",
					      "nanoseconds") ||
		      profile_set_period(run->p, "contentions", "count", 1);
	if (ret)
		return -ENOMEM;
	run->key_thread = profile_intern(run->p, "thread");
	run->key_thread_name = profile_intern(run->p, "thread_name");
	run->key_state = profile_intern(run->p, "state");
	if (o->timeline_t0) {
		run->key_ts = profile_intern(run->p, "ts");
		run->key_dur = profile_intern(run->p, "dur");
	}
	if (run->key_thread < 0 || run->key_thread_name < 0 ||
	    run->key_state < 0 || run->key_ts < 0 || run->key_dur < 0 ||
	    proc_name_profile(run->p, o->pid, kind_names[o->kind]))
		return -ENOMEM;
	return 0;
}

/* Sleep until the next tick, the window's end, or a look at stop. */
static void nap_until(uint64_t when)
{
	struct timespec ts = {
		.tv_sec = when / 1000000000ull,
		.tv_nsec = when % 1000000000ull,
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/*
 * Whether the process lives, looked at every DISCOVER_NS of the window:
 * procfs finds the threads started since then too; sched has them from
 * the records, from their start.
 */
static int look_target(void *arg, bool *alive)
{
	struct oc_run *run = arg;

	if (run->sched) {
		*alive = proc_alive(run->o->pid);
		return 0;
	}
	return discover(run, alive);
}

static void begin(struct oc_run *run, struct window *w, uint64_t start)
{
	const struct offcpu_opts *o = run->o;

	window_begin(w, start, o->pid, o->window_ms, o->stop, DISCOVER_NS);
	w->look = look_target;
	w->look_arg = run;
}

static int sample_window(struct oc_run *run, struct window *w)
{
	uint64_t period = clock_period_ns(run->o->hz), next;
	bool on;
	int ret = 0;

	begin(run, w, now_ns());
	next = w->start_ns + period;
	for (;;) {
		uint64_t now = now_ns(), wake;

		ret = window_on(w, now, &on);
		if (ret)
			return ret;
		if (!on)
			break;
		if (now >= next) {
			ret = look_all(run);
			if (ret)
				return ret;
			next += period;
			if (next <= now)	/* fell behind: skip */
				next = now + period;
		}
		if (run->rec) {
			ret = perf_poll(run->rec, 0, oc_cpu_sample, run);
			if (ret || run->err)
				return ret ? ret : run->err;
		}
		wake = now + window_nap_ns(w, now, STOP_CHECK_NS);
		if (next < wake)
			wake = next;
		nap_until(wake);
	}
	/* The window's last look: every span ends at its end. */
	if (!w->exited)
		ret = look_all(run);
	if (!ret)
		last_switches(run);
	if (!ret && run->rec)
		ret = perf_poll(run->rec, 0, oc_cpu_sample, run);
	return ret ? ret : run->err;
}

/* offcpu=sched: the records as they come, until the window's end (which
 * began when the records did). */
static int sched_window(struct oc_run *run, struct window *w)
{
	uint64_t now;
	bool on;
	int ret;

	begin(run, w, run->start_ns);
	for (;;) {
		now = now_ns();
		ret = window_on(w, now, &on);
		if (ret)
			return ret;
		if (!on)
			break;
		ret = oc_sched_poll(run, (int)((window_nap_ns(w, now,
							      SCHED_POLL_NS)
						+ 999999) / 1000000));
		if (!ret && run->rec)
			ret = perf_poll(run->rec, 0, oc_cpu_sample, run);
		if (ret || run->err)
			return ret ? ret : run->err;
	}
	if (w->exited)
		run->end_ns = now;
	ret = oc_sched_end(run);
	if (!ret && run->rec)
		ret = perf_poll(run->rec, 0, oc_cpu_sample, run);
	return ret ? ret : run->err;
}

static void run_free(struct oc_run *run)
{
	oc_sched_free(run);
	perf_close(run->rec);
	octhreads_free(run->threads);
	pseudolocs_free(run->ps);
	waitclass_free(run->wc);
	stackctx_close(&run->sc);
	free(run->stack);
	free(run->ktext);
}

static int setup(struct oc_run *run)
{
	bool alive;
	int ret;

	ret = setup_profile(run);
	if (!ret)
		ret = stackctx_open(&run->sc, run->o->pid, run->o->cache,
				    run->p, STACKCTX_ATTACH);
	if (!ret)
		ret = waitclass_new(run->sc.maps, &run->wc);
	if (!ret)
		ret = pseudolocs_new(run->p, &run->ps);
	if (!ret)
		ret = octhreads_new(&run->threads);
	if (ret)
		return ret;
	run->stack = malloc(STACK_MAX);
	/* kernel frames only for a caller the kernel would show them */
	run->ktext = run->o->ksyms ? malloc(KSTACK_TEXT) : NULL;
	if (!run->stack || (run->o->ksyms && !run->ktext))
		return -ENOMEM;
	ret = discover(run, &alive);
	if (!ret && !alive)
		ret = -ESRCH;
	if (!ret && !run->st->threads)
		ret = -ESRCH;
	if (!ret && run->o->kind == OFFCPU_WALL && !run->o->timeline_t0)
		ret = oc_open_cpu(run);
	return ret;
}

/*
 * What tracing every switch would cost the target, told by how often its
 * threads have switched per second of their CPU time, over their lives
 * so far (schedstat: no wait). The kernel's sample and records at each
 * switch out and back in take a thread ~1 µs of CPU where its caches
 * are warm and ~3 µs after a 100 ms sleep; 100 threads waking 100 or 10
 * times a second (62,000 and 20,000 switches per CPU second) lost 5-6%
 * of their work per CPU second to sched and none to /proc
 * (tests/bench/offcpu.py). Past SCHED_MAX_SWITCH_RATE (~1.5% at 3 µs)
 * auto reads /proc; below it, or with under SCHED_RATE_MIN_NS of CPU
 * time to tell by, it traces. That floor is 5 ms, not less: a target
 * that mostly waits has little more than its start-up's CPU time, and
 * on a busy machine the preemptions of that start-up alone (issue 18's
 * waits target: 7,660 switches over 2 ms at load 10, ~2,000 when quiet)
 * would read as a target that switches all the time.
 */
#define SCHED_MAX_SWITCH_RATE 5000
#define SCHED_RATE_MIN_NS 5000000ull

static bool sched_too_dear(struct oc_run *run)
{
	uint64_t run_ns = 0, slices = 0, rate;

	for (size_t i = 0; i < octhreads_count(run->threads); i++) {
		struct oc_thread *th = octhreads_at(run->threads, i);
		struct task_sched s;

		if (th->gone || task_read_sched(run->o->pid, th->tid,
						&th->files, &s))
			continue;
		run_ns += s.run_ns;
		slices += s.slices;
	}
	if (run_ns < SCHED_RATE_MIN_NS)
		return false;
	rate = slices * 1000000000ull / run_ns;
	if (rate <= SCHED_MAX_SWITCH_RATE)
		return false;
	pr_info("offcpu: pid %d: %llu switches per second of its CPU time "
		"(over %llu ms of it), above %d: tracing each would slow it "
		"by more than ~1.5%%: off-CPU time from /proc (offcpu=sched "
		"traces anyway)", (int)run->o->pid, (unsigned long long)rate,
		(unsigned long long)(run_ns / 1000000),
		SCHED_MAX_SWITCH_RATE);
	return true;
}

/*
 * Scheduler events where the daemon may trace them (sched; auto for block
 * and mutex, unless sched_too_dear()); where it may not, auto says so
 * once and reads /proc, sched fails. auto samples wall from /proc even
 * as root: a sampled share is what wall asks, and tracing every switch
 * cost a 100-thread target 5-6% where sampling stays within noise
 * (docs/offcpu.md). Then the window starts, its time and length those of
 * the profile.
 */
static int choose_method(struct oc_run *run, int64_t *t0)
{
	const struct offcpu_opts *o = run->o;
	int ret = 0;

	if (!o->timeline_t0 && (o->method == OFFCPU_SCHED ||
	    (o->method == OFFCPU_AUTO && o->kind != OFFCPU_WALL &&
	     !sched_too_dear(run))))
		ret = oc_sched_open(run);
	if ((ret == -EACCES || ret == -EPERM) && o->method == OFFCPU_AUTO) {
		pr_info("offcpu: pid %d: scheduler events refused (%s): "
			"off-CPU time from /proc", (int)o->pid,
			strerror(-ret));
		ret = 0;
	} else if (ret == -EACCES || ret == -EPERM) {
		pr_notice("offcpu: pid %d: offcpu=sched: the kernel refuses "
			  "scheduler events (%s)", (int)o->pid,
			  strerror(-ret));
	}
	run->st->method = run->sched ? OFFCPU_SCHED : OFFCPU_PROCFS;
	if (!ret && run->sched)
		*t0 = clock_ns(CLOCK_REALTIME);
	return ret;
}

int offcpu_profile(const struct offcpu_opts *o, struct profile **out,
		   struct offcpu_stats *st)
{
	struct oc_run run = { .o = o, .st = st };
	uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), start;
	struct window w = { 0 };
	int64_t t0;
	int ret;

	memset(st, 0, sizeof(*st));
	if (!o->hz || !o->window_ms || (unsigned)o->kind > OFFCPU_MUTEX ||
	    (o->timeline_t0 && o->kind != OFFCPU_WALL))
		return -EINVAL;
	cpu_raise_priority();
	t0 = clock_ns(CLOCK_REALTIME);
	start = now_ns();
	ret = setup(&run);
	if (!ret)
		ret = choose_method(&run, &t0);
	if (!ret)
		ret = run.sched ? sched_window(&run, &w)
				: sample_window(&run, &w);
	st->elapsed_ns = run.sched && run.end_ns ? run.end_ns - run.start_ns
						 : now_ns() - start;
	if (run.rec)
		st->lost = perf_lost(run.rec);
	/* a timeline keeps each look's own time */
	if (!ret && !o->timeline_t0)
		ret = oc_finish(&run, &w);
	if (!ret)
		ret = symbolizer_note(run.sc.sym);
	st->daemon_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	run_free(&run);
	/* a /proc file of the process gone: the process is */
	return profile_deliver(run.p, ret == -ENOENT ? -ESRCH : ret, t0,
			       st->elapsed_ns, out);
}
