// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ocshare.c - the end of an off-CPU window: each thread's exact times
 * (schedstat, first and last look) shared out among its samples, in
 * proportion to what they stood for; then the comments.
 *
 * A thread lived span = last look - first look of the window. Of that,
 * run is its CPU time, wait its time runnable in a run queue (both
 * exact), and rest = span - run - wait its time asleep. Its sleeping
 * looks are scaled to add up to rest. A runnable thread is one of two
 * kinds: woken and not yet run, still in the call that slept (a look
 * sees that stack when schedstat has not changed since the sleep), or
 * preempted, where /proc shows "running" and no registers. The woken
 * part of wait is the thread's wake-ups times their mean wait measured
 * whole (wake_wait()), shared among the places it slept in a share per
 * sleep (share_woken()); the preempted part goes with run to the
 * running samples (perf, wall): a preempted thread's stack is where it
 * ran. Not as the looks saw it: a look runs on a CPU the target's
 * threads then wait for, so looks find threads woken and waiting more
 * often than they are. Every thread's values add up to its span; the
 * sampling only decides how each of its times divides among its
 * stacks.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/clock.h"
#include "sampler/offcpu/octhreads.h"
#include "sampler/offcpu/offcpu_i.h"
#include "sampler/model/profile.h"
#include "sampler/offcpu/pseudoloc.h"

struct share {
	double on, runq, off;		/* factors */
	uint64_t run, rest;		/* ns running or preempted; asleep */
};

/*
 * Of a thread's run-queue time, the part that followed its wake-ups
 * rather than its preemptions: its wake-ups (voluntary switches) times
 * the mean wait of those measured whole (octhreads.h); where none was,
 * as its switches were, waits of both kinds taken as equally long.
 */
static uint64_t wake_wait(const struct oc_thread *th, uint64_t wait)
{
	uint64_t vol, invol, w;

	if (!th->have_sw)
		return 0;
	vol = th->sw_last.voluntary - th->sw_first.voluntary;
	invol = th->sw_last.involuntary - th->sw_first.involuntary;
	if (th->wakes)
		w = (uint64_t)((double)th->wake_ns / th->wakes * vol);
	else
		w = vol + invol ? (uint64_t)((double)wait * vol /
					     (vol + invol)) : 0;
	return w < wait ? w : wait;
}

/*
 * A thread's wake-up waits shared among the places it slept in, a share
 * per sleep there: a wait for a CPU follows each sleep, whatever its
 * length. A place whose sleeps outlast a look's interval has its sleeps
 * counted by the looks (each found once as new); the other sleeps of the
 * thread (its voluntary switches less those) went to the places whose
 * sleeps are shorter, which the looks find in proportion to their time.
 * Returns false when no place takes any.
 */
static bool share_woken(struct oc_thread *th, uint64_t woken,
			uint64_t period)
{
	uint64_t vol = th->have_sw ? th->sw_last.voluntary -
				     th->sw_first.voluntary : 0;
	uint64_t longs = 0, shorts = 0, rest, total;
	bool *is_long = calloc(th->nstacks ? th->nstacks : 1, 1);

	if (!is_long)
		return false;
	for (uint32_t k = 0; k < th->nstacks; k++) {
		const struct oc_stack *st = &th->stacks[k];

		if (!st->sleeps)
			continue;
		is_long[k] = (st->off_ns + st->runq_ns) / st->sleeps >=
			     period * 3 / 2;
		*(is_long[k] ? &longs : &shorts) += st->sleeps;
	}
	rest = vol > longs ? vol - longs : 0;
	if (!shorts || !vol)
		rest = shorts;
	total = longs + rest;
	for (uint32_t k = 0; k < th->nstacks; k++) {
		struct oc_stack *st = &th->stacks[k];
		double n = is_long[k] ? st->sleeps :
			   shorts ? (double)rest * st->sleeps / shorts : 0;

		st->woken_ns = total ? (uint64_t)(woken * n / total) : 0;
	}
	free(is_long);
	return total > 0;
}

static void exact(struct oc_thread *th, uint64_t period, struct share *sh)
{
	uint64_t span = th->last_ns - th->first_ns;
	uint64_t run = th->last.run_ns - th->first.run_ns;
	uint64_t wait = th->last.wait_ns - th->first.wait_ns;
	uint64_t woken;

	/* schedstat of a running thread lags by up to a tick */
	if (run > span)
		run = span;
	if (wait > span - run)
		wait = span - run;
	/* A thread no cpu-clock sample found running runs briefly, after
	 * its wake-ups: preempted then, it is still where it slept. */
	woken = th->on_ns ? wake_wait(th, wait) : wait;
	sh->run = run + (wait - woken);
	sh->rest = span - run - wait;
	if (!share_woken(th, woken, period))
		sh->rest += woken;	/* no place to put them: asleep */
	sh->on = th->on_ns ? (double)sh->run / th->on_ns : 0;
	sh->runq = th->runq_ns ? (double)woken / th->runq_ns : 0;
	sh->off = th->off_ns ? (double)sh->rest / th->off_ns : 0;
}

/* offcpu=sched: the time off the CPU is in the intervals of the
 * scheduler's records, each a sample of its own (ocsched.c); the rest of
 * the thread's life is its time running, shared among its samples. */
static void exact_sched(const struct oc_thread *th, struct share *sh)
{
	uint64_t span = th->last_ns > th->first_ns ?
			th->last_ns - th->first_ns : 0;
	uint64_t off = th->sched_off_ns < span ? th->sched_off_ns : span;

	*sh = (struct share){ .run = span - off };
	sh->on = th->on_ns ? (double)sh->run / th->on_ns : 0;
}

struct thread_share {
	struct oc_thread *th;
	struct share sh;
};

/* thread label string index -> its thread and share, for every sample. */
static int shares_by_str(struct oc_run *run, struct thread_share **out)
{
	size_t n = octhreads_count(run->threads);
	size_t nstr = profile_nstrings(run->p);
	struct thread_share *by = calloc(nstr ? nstr : 1, sizeof(*by));
	uint64_t period = clock_period_ns(run->o->hz);

	if (!by)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct oc_thread *th = octhreads_at(run->threads, i);

		if ((size_t)th->tid_str >= nstr)
			continue;
		by[th->tid_str].th = th;
		if (run->sched)
			exact_sched(th, &by[th->tid_str].sh);
		else
			exact(th, period, &by[th->tid_str].sh);
	}
	*out = by;
	return 0;
}

/* The factor of sample s, by its state label (and stack, runnable). */
static double factor(struct oc_run *run, const struct pf_sample *s,
		     const struct thread_share *ts)
{
	for (uint32_t l = 0; l < s->nlabels; l++) {
		const struct oc_stack *st;
		const char *state;

		if (s->labels[l].key != run->key_state)
			continue;
		state = profile_str(run->p, s->labels[l].str);
		if (!strcmp(state, "running"))
			return ts->sh.on;
		if (strcmp(state, "runnable"))
			break;
		st = octhread_find_stack(ts->th, s->loc_ids, s->nlocs);
		if (!st || !st->runq_ns)	/* max_stacks reached */
			return ts->sh.runq;
		return (double)st->woken_ns / st->runq_ns;
	}
	return ts->sh.off;
}

static int64_t thread_str(struct oc_run *run, const struct pf_sample *s)
{
	for (uint32_t l = 0; l < s->nlabels; l++)
		if (s->labels[l].key == run->key_thread)
			return s->labels[l].str;
	return -1;
}

static int scale_samples(struct oc_run *run, struct thread_share *by)
{
	size_t n = profile_nsamples(run->p);

	for (size_t i = 0; i < n; i++) {
		const struct pf_sample *s = profile_sample(run->p, i);
		int64_t t = thread_str(run, s), *v;

		if (t < 0 || !by[t].th)
			continue;
		v = profile_sample_values(run->p, i);
		v[1] = llround(v[1] * factor(run, s, &by[t]));
	}
	return 0;
}

/* Wake-up waits of a place no look found the thread woken in: a
 * runnable sample there. */
static int unseen_woken(struct oc_run *run, const struct oc_thread *th)
{
	enum wait_class need = run->o->kind == OFFCPU_MUTEX ? WAIT_LOCK :
			       WAIT_SYNC;
	int ret = 0;

	for (uint32_t k = 0; k < th->nstacks && !ret; k++) {
		const struct oc_stack *st = &th->stacks[k];

		if (st->runq_ns || !st->woken_ns ||
		    (run->o->kind != OFFCPU_WALL && st->class < need))
			continue;
		ret = oc_add(run, th, st->locs, st->nlocs, "runnable", 0,
			     st->woken_ns);
	}
	return ret;
}

/* wall: time no sample stands for, under a frame that says so. */
static int unsampled(struct oc_run *run, const struct oc_thread *th,
		     const struct share *sh)
{
	const struct {
		uint64_t sampled, exact;
		const char *frame, *state;
	} pools[] = {
		{ th->on_ns, sh->run, "[running]", "running" },
		{ th->off_ns, sh->rest, "[asleep between looks]", "sleeping" },
	};
	uint64_t loc;
	int ret = 0;

	if (run->o->kind != OFFCPU_WALL)
		return 0;
	for (int k = 0; k < 2 && !ret; k++) {
		if (pools[k].sampled || !pools[k].exact)
			continue;
		ret = pseudoloc(run->ps, "", pools[k].frame, &loc);
		if (!ret)
			ret = oc_add(run, th, &loc, 1, pools[k].state, 0,
				     pools[k].exact);
	}
	return ret;
}

/* Each thread's times shared out among its samples, and what no
 * sample stands for. */
static int share_out(struct oc_run *run)
{
	size_t n = octhreads_count(run->threads);
	struct thread_share *by = NULL;
	int ret;

	ret = shares_by_str(run, &by);
	if (!ret)
		ret = scale_samples(run, by);
	if (!ret && run->sched)
		ret = oc_sched_add(run);
	for (size_t i = 0; i < n && !ret; i++) {
		const struct oc_thread *th = octhreads_at(run->threads, i);

		if (!run->sched)
			ret = unseen_woken(run, th);
		if (!ret)
			ret = unsampled(run, th, &by[th->tid_str].sh);
	}
	free(by);
	return ret;
}

/* A comment of the profile, formatted. */
__attribute__((format(printf, 2, 3)))
static int note(struct oc_run *run, const char *fmt, ...)
{
	char text[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return profile_add_comment(run->p, text);
}

/* How offcpu=sched took it. */
static int comments_sched(struct oc_run *run)
{
	const struct offcpu_stats *st = run->st;
	int ret;

	ret = note(run, "proffs: off-CPU time from scheduler events, no "
		   "thread stopped: every switch of each thread out of a CPU "
		   "and back (perf context-switch records), the user stack "
		   "copied by the kernel at each switch out; each interval "
		   "off the CPU is exact and charged to that stack");
	return ret ? ret :
	       note(run, "proffs: %u threads, %llu switches out (%llu "
		    "preempted), %llu records lost, %llu syscall files "
		    "read, %llu stacks not unwound to their first frame",
		    st->threads, (unsigned long long)st->switches,
		    (unsigned long long)st->preempted,
		    (unsigned long long)st->switch_lost,
		    (unsigned long long)st->calls_read,
		    (unsigned long long)st->incomplete);
}

/* How offcpu=procfs took it. */
static int comments_procfs(struct oc_run *run)
{
	const struct offcpu_stats *st = run->st;
	int ret;

	ret = note(run, "proffs: off-CPU time from /proc, no thread "
		   "stopped: each thread's schedstat, syscall and stat read "
		   "%u times a second, the stacks of sleeping threads copied "
		   "with process_vm_readv; each thread's CPU, run-queue and "
		   "off-CPU times are exact, its samples share them out",
		   run->o->hz);
	return ret ? ret :
	       note(run, "proffs: %u threads, %llu looks, %llu stacks "
		    "copied, %llu thrown away (the thread ran during the "
		    "copy), %llu not unwound to their first frame",
		    st->threads, (unsigned long long)st->looks,
		    (unsigned long long)st->snapshots,
		    (unsigned long long)st->raced,
		    (unsigned long long)st->incomplete);
}

static int comments(struct oc_run *run, const struct window *w)
{
	const struct offcpu_stats *st = run->st;
	const struct offcpu_opts *o = run->o;
	int ret;

	ret = run->sched ? comments_sched(run) : comments_procfs(run);
	if (!ret && o->kind == OFFCPU_WALL && run->perf_refused)
		ret = note(run, "proffs: perf refused cpu-clock events: time "
			   "on the CPU shows as [running]");
	else if (!ret && o->kind == OFFCPU_WALL)
		ret = note(run, "proffs: stacks on the CPU from perf "
			   "cpu-clock at %u Hz, %s (%llu samples, %llu lost)",
			   o->hz, run->perf_cpus ? "one event per cpu" :
			   "events on each thread",
			   (unsigned long long)st->cpu_samples,
			   (unsigned long long)st->lost);
	if (!ret)
		ret = window_note_exit(w, run->p, st->elapsed_ns);
	return ret;
}

int oc_finish(struct oc_run *run, const struct window *w)
{
	int ret = share_out(run);

	if (!ret)
		ret = comments(run, w);
	return ret;
}
