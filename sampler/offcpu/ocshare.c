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
 * preempted, where /proc shows "running" and no registers. wait is
 * split between them as its switches were (voluntary: a sleep, so a
 * wake-up to wait after; involuntary: a preemption). Not as the looks
 * saw it: a look runs on a CPU the target's threads then wait for, so
 * looks find threads woken and waiting more often than they are (taken
 * so, a thread's time off the CPU came out 5 points above a
 * sched_switch bpftrace script's on a loaded machine). The woken part
 * goes to the runnable looks, the preempted part with run to the
 * running samples (perf, wall): a preempted thread's stack is where it
 * ran. Every thread's values add up to its span; the sampling only
 * decides how each of its times divides among its stacks.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "octhreads.h"
#include "offcpu_i.h"
#include "profile.h"
#include "pseudoloc.h"

struct share {
	double on, runq, off;		/* factors */
	uint64_t run, rest;		/* ns on a CPU (or preempted), asleep */
};

/* Of a thread's run-queue time, the part that followed its wake-ups
 * rather than its preemptions: as the switches that began them go,
 * waits of both kinds taken as equally long on average. */
static uint64_t wake_wait(const struct oc_thread *th, uint64_t wait)
{
	uint64_t vol, invol;

	if (!th->have_sw)
		return 0;
	vol = th->sw_last.voluntary - th->sw_first.voluntary;
	invol = th->sw_last.involuntary - th->sw_first.involuntary;
	return vol + invol ? (uint64_t)((double)wait * vol / (vol + invol))
			   : 0;
}

static void exact(const struct oc_thread *th, struct share *sh)
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
	woken = wake_wait(th, wait);
	sh->run = run + (wait - woken);
	sh->rest = span - run - wait;
	if (!th->runq_ns)	/* no look saw one: with the sleeps */
		sh->rest += woken;
	sh->on = th->on_ns ? (double)sh->run / th->on_ns : 0;
	sh->runq = th->runq_ns ? (double)woken / th->runq_ns : 0;
	sh->off = th->off_ns ? (double)sh->rest / th->off_ns : 0;
}

/* thread label string index -> its share, for every sample. */
static int shares_by_str(struct oc_run *run, struct share **out)
{
	size_t n = octhreads_count(run->threads);
	size_t nstr = profile_nstrings(run->p);
	struct share *by = calloc(nstr ? nstr : 1, sizeof(*by));

	if (!by)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct oc_thread *th = octhreads_at(run->threads, i);

		if ((size_t)th->tid_str < nstr)
			exact(th, &by[th->tid_str]);
	}
	*out = by;
	return 0;
}

/* The factor of sample s, by its state label. */
static double factor(struct oc_run *run, const struct pf_sample *s,
		     const struct share *sh)
{
	for (uint32_t l = 0; l < s->nlabels; l++) {
		const char *state;

		if (s->labels[l].key != run->key_state)
			continue;
		state = profile_str(run->p, s->labels[l].str);
		if (!strcmp(state, "running"))
			return sh->on;
		if (!strcmp(state, "runnable"))
			return sh->runq;
	}
	return sh->off;
}

static int64_t thread_str(struct oc_run *run, const struct pf_sample *s)
{
	for (uint32_t l = 0; l < s->nlabels; l++)
		if (s->labels[l].key == run->key_thread)
			return s->labels[l].str;
	return -1;
}

static int scale_samples(struct oc_run *run)
{
	size_t n = profile_nsamples(run->p);
	struct share *by;
	int ret;

	ret = shares_by_str(run, &by);
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++) {
		const struct pf_sample *s = profile_sample(run->p, i);
		int64_t t = thread_str(run, s), *v;

		if (t < 0)
			continue;
		v = profile_sample_values(run->p, i);
		v[1] = llround(v[1] * factor(run, s, &by[t]));
	}
	free(by);
	return 0;
}

/* wall: time no sample stands for, under a frame that says so. */
static int unsampled(struct oc_run *run)
{
	size_t n = octhreads_count(run->threads);
	int ret = 0;

	if (run->o->kind != OFFCPU_WALL)
		return 0;
	for (size_t i = 0; i < n && !ret; i++) {
		const struct oc_thread *th = octhreads_at(run->threads, i);
		const struct {
			uint64_t sampled;
			const char *frame, *state;
		} pools[] = {
			{ th->on_ns, "[running]", "running" },
			{ th->runq_ns, "[runnable]", "runnable" },
			{ th->off_ns, "[asleep between looks]", "sleeping" },
		};
		uint64_t exact_ns[3], loc;
		struct share sh;

		exact(th, &sh);
		exact_ns[0] = sh.run;
		exact_ns[1] = 0;	/* woken: only what looks saw */
		exact_ns[2] = sh.rest;
		for (int k = 0; k < 3 && !ret; k++) {
			if (pools[k].sampled || !exact_ns[k])
				continue;
			ret = pseudoloc(run->ps, "", pools[k].frame, &loc);
			if (!ret)
				ret = oc_add(run, th, &loc, 1, pools[k].state, 0,
					     exact_ns[k]);
		}
	}
	return ret;
}

static int comments(struct oc_run *run, bool exited)
{
	const struct offcpu_stats *st = run->st;
	const struct offcpu_opts *o = run->o;
	char text[400];
	int ret;

	snprintf(text, sizeof(text), "proffs: off-CPU time from /proc, no "
		 "thread stopped: each thread's schedstat, syscall and stat "
		 "read %u times a second, the stacks of sleeping threads "
		 "copied with process_vm_readv; each thread's CPU, run-queue "
		 "and off-CPU times are exact, its samples share them out",
		 o->hz);
	ret = profile_add_comment(run->p, text);
	if (!ret) {
		snprintf(text, sizeof(text), "proffs: %u threads, %llu looks, "
			 "%llu stacks copied, %llu thrown away (the thread "
			 "ran during the copy), %llu not unwound to their "
			 "first frame", st->threads,
			 (unsigned long long)st->looks,
			 (unsigned long long)st->snapshots,
			 (unsigned long long)st->raced,
			 (unsigned long long)st->incomplete);
		ret = profile_add_comment(run->p, text);
	}
	if (!ret && o->kind == OFFCPU_WALL) {
		if (run->perf_refused)
			snprintf(text, sizeof(text), "proffs: perf refused "
				 "cpu-clock events: time on the CPU shows as "
				 "[running]");
		else
			snprintf(text, sizeof(text), "proffs: stacks on the "
				 "CPU from perf cpu-clock at %u Hz, %s (%llu "
				 "samples, %llu lost)", o->hz, run->perf_cpus ?
				 "one event per cpu" : "events on each thread",
				 (unsigned long long)st->cpu_samples,
				 (unsigned long long)st->lost);
		ret = profile_add_comment(run->p, text);
	}
	if (!ret && exited) {
		snprintf(text, sizeof(text), "process %d exited after %.2f s "
			 "of the %.2f s window; this profile is partial",
			 (int)o->pid, st->elapsed_ns / 1e9,
			 o->window_ms / 1e3);
		ret = profile_add_comment(run->p, text);
	}
	return ret;
}

int oc_finish(struct oc_run *run, bool exited)
{
	int ret = scale_samples(run);

	if (!ret)
		ret = unsampled(run);
	if (!ret)
		ret = comments(run, exited);
	return ret;
}
