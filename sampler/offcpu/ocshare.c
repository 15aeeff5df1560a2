// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ocshare.c - the end of an off-CPU window: each thread's exact times
 * (schedstat, first and last look) shared out among its samples, in
 * proportion to what they stood for; then the comments.
 *
 * A thread lived span = last look - first look of the window. Of that,
 * run = its CPU time plus its time runnable in a run queue (both exact),
 * and off = span - run. Its running samples (wall) are scaled to add up
 * to run, its sleeping ones to off: so every thread's values add up to
 * its span, and the sampling only decides how a thread's time divides
 * among its stacks.
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
	double on, off;		/* factors */
	uint64_t run, rest;	/* exact ns on and off the CPU */
};

static void exact(const struct oc_thread *th, struct share *sh)
{
	uint64_t span = th->last_ns - th->first_ns;
	uint64_t run = (th->last.run_ns - th->first.run_ns) +
		       (th->last.wait_ns - th->first.wait_ns);

	/* schedstat of a running thread lags by up to a tick */
	if (run > span)
		run = span;
	sh->run = run;
	sh->rest = span - run;
	sh->on = th->on_ns ? (double)run / th->on_ns : 0;
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

static bool running(struct oc_run *run, const struct pf_sample *s)
{
	for (uint32_t l = 0; l < s->nlabels; l++)
		if (s->labels[l].key == run->key_state)
			return !strcmp(profile_str(run->p, s->labels[l].str),
				       "running");
	return false;
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
		double f;

		if (t < 0)
			continue;
		f = running(run, s) ? by[t].on : by[t].off;
		v = profile_sample_values(run->p, i);
		v[1] = llround(v[1] * f);
	}
	free(by);
	return 0;
}

/* wall: time no sample stands for, under a frame that says so. */
static int unsampled(struct oc_run *run)
{
	size_t n = octhreads_count(run->threads);
	uint64_t loc;
	int ret = 0;

	if (run->o->kind != OFFCPU_WALL)
		return 0;
	for (size_t i = 0; i < n && !ret; i++) {
		const struct oc_thread *th = octhreads_at(run->threads, i);
		struct share sh;

		exact(th, &sh);
		if (!th->on_ns && sh.run) {
			ret = pseudoloc(run->ps, "", "[running]", &loc);
			if (!ret)
				ret = oc_add(run, th, &loc, 1, "running", 0,
					     sh.run);
		}
		if (!ret && !th->off_ns && sh.rest) {
			ret = pseudoloc(run->ps, "", "[asleep between looks]",
					&loc);
			if (!ret)
				ret = oc_add(run, th, &loc, 1, "sleeping", 0,
					     sh.rest);
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
				 "CPU from perf cpu-clock at %u Hz (%llu "
				 "samples, %llu lost)", o->hz,
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
