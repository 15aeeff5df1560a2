// SPDX-License-Identifier: GPL-2.0-or-later
/* run.c - a session's profile, by its kind's run function, and its line
 * in the log. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/core/access.h"
#include "sampler/clock.h"
#include "sampler/cpu/cpu.h"
#include "sampler/heap/heap.h"
#include "sampler/log.h"
#include "sampler/offcpu/offcpu.h"
#include "fs/core/past.h"
#include "fs/core/run.h"
#include "sampler/model/profile.h"
#include "sampler/model/profile_merge.h"
#include "sampler/threads/threads.h"

/* A whole-host profile's filter: the processes its uid may profile. */
static bool allowed(pid_t pid, void *arg)
{
	const struct run_ctx *c = arg;

	return c->uid == (uid_t)-1 || !access_check(0, c->uid, pid);
}

/* A trace's off-CPU intervals: wall's looks as a timeline, on a thread
 * of their own beside the CPU samples, over the same window. */
struct offcpu_job {
	struct offcpu_opts o;
	struct offcpu_stats st;
	struct profile *p;
	int ret;
	pthread_t thread;
	bool started;
};

static void *offcpu_job_run(void *arg)
{
	struct offcpu_job *j = arg;

	j->ret = offcpu_profile(&j->o, &j->p, &j->st);
	return NULL;
}

/* Looks at every thread's /proc files cost per thread: past 100 a second
 * they cost more than they tell (a wait's ends are cut to the CPU
 * samples around it, trace.h). */
#define TRACE_LOOK_HZ 100

static void offcpu_job_start(const struct run_ctx *c, uint64_t t0,
			     struct offcpu_job *j)
{
	j->o = (struct offcpu_opts){
		.pid = c->pid, .kind = OFFCPU_WALL, .method = OFFCPU_PROCFS,
		.hz = c->req->hz < TRACE_LOOK_HZ ? c->req->hz : TRACE_LOOK_HZ, .window_ms = c->req->window_ms,
		.cache = c->dsos, .ksyms = c->req->kernel ? c->ksyms : NULL,
		.stop = c->stop, .max_stacks = c->max_stacks,
		.timeline_t0 = t0,
	};
	j->started = !pthread_create(&j->thread, NULL, offcpu_job_run, j);
	if (!j->started)
		pr_warn("trace: pid %d: no thread for the off-CPU intervals",
			(int)c->pid);
}

/* The intervals join the CPU samples with no value: the trace's pprof
 * stays its CPU profile; trace.h reads them by their labels. */
static int offcpu_job_end(struct offcpu_job *j, struct profile *cpu)
{
	int ret = 0;

	if (!j->started)
		return 0;
	pthread_join(j->thread, NULL);
	if (cpu && !j->ret)
		ret = profile_append(cpu, j->p, 0, 1, NULL);
	else if (cpu && j->ret != -ECANCELED)
		ret = profile_add_comment(cpu, "proffs: no off-CPU intervals "
					  "(the off-CPU sampler failed)");
	if (j->ret && j->ret != -ECANCELED && j->ret != -ESRCH)
		pr_info("trace: pid %d: off-CPU intervals: %s",
			(int)j->o.pid, strerror(-j->ret));
	profile_free(j->p);
	return ret;
}

int run_cpu(const struct run_ctx *c, struct profile **out, struct run_result *r)
{
	struct offcpu_job job = { .started = false };
	char title[160];
	struct cpu_opts o = {
		.pid = c->pid, .hz = c->req->hz,
		.window_ms = c->req->window_ms, .cache = c->dsos,
		.ksyms = c->req->kernel ? c->ksyms : NULL,
		.pykeep = c->pykeep,
		.stop = c->stop, .max_stacks = c->max_stacks,
		.allow = allowed, .allow_arg = (void *)c, .all_title = title,
		.timeline = c->req->kind == PROFFS_KIND_TRACE,
	};
	struct cpu_stats st;
	char host[64] = "";
	int ret;

	gethostname(host, sizeof(host) - 1);
	if (c->uid == (uid_t)-1)
		snprintf(title, sizeof(title), "all processes of host %s",
			 host);
	else
		snprintf(title, sizeof(title), "all processes of uid %u on "
			 "host %s", (unsigned)c->uid, host);
	if (c->req->last) {	/* the past: at once, from the recorder */
		/* on the thread that answers the read (registry.c), at the
		 * serving threads' priority (-o nice=, daemon.h) */
		uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

		memset(&st, 0, sizeof(st));
		ret = past_window(c->rec, c->pid, c->uid, c->req, out);
		st.daemon_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	} else {
		if (o.timeline && c->pid) {
			o.timeline_t0 = now_ns();
			offcpu_job_start(c, o.timeline_t0, &job);
		}
		ret = cpu_profile(&o, out, &st);
		if (job.started) {
			int jret = offcpu_job_end(&job, ret ? NULL : *out);

			ret = ret ? ret : jret;
		}
	}
	if (!ret && c->req->base != PROFFS_BASE_NONE)
		ret = past_diff(c->rec, c->pid, c->uid, c->req, out);
	r->samples = st.samples;
	r->lost = st.lost;
	snprintf(r->detail, sizeof(r->detail), "hz=%u samples=%llu lost=%llu "
		 "daemon_cpu_us=%llu%s%s%s%s", o.hz,
		 (unsigned long long)st.samples, (unsigned long long)st.lost,
		 (unsigned long long)(st.daemon_cpu_ns / 1000),
		 st.python_read ? " python=" : "",
		 st.python_read ? st.python_read : "",
		 c->req->last ? " recorder" : "",
		 c->req->base != PROFFS_BASE_NONE ? " diff" : "");
	return ret;
}

int run_offcpu(const struct run_ctx *c, struct profile **out,
	       struct run_result *r)
{
	static const enum offcpu_kind kinds[PROFFS_KIND__COUNT] = {
		[PROFFS_KIND_WALL] = OFFCPU_WALL,
		[PROFFS_KIND_BLOCK] = OFFCPU_BLOCK,
		[PROFFS_KIND_MUTEX] = OFFCPU_MUTEX,
	};
	struct offcpu_opts o = {
		.pid = c->pid, .kind = kinds[c->req->kind],
		.method = c->offcpu, .hz = c->req->hz,
		.window_ms = c->req->window_ms, .cache = c->dsos,
		.ksyms = c->req->kernel ? c->ksyms : NULL,
		.stop = c->stop, .max_stacks = c->max_stacks,
	};
	struct offcpu_stats st;
	int ret;

	ret = offcpu_profile(&o, out, &st);
	snprintf(r->detail, sizeof(r->detail), "method=%s hz=%u threads=%u "
		 "looks=%llu copies=%llu raced=%llu switches=%llu "
		 "preempted=%llu switch_lost=%llu calls_read=%llu "
		 "incomplete=%llu cpu_samples=%llu lost=%llu "
		 "daemon_cpu_us=%llu",
		 st.method == OFFCPU_SCHED ? "sched" : "procfs", o.hz,
		 st.threads, (unsigned long long)st.looks,
		 (unsigned long long)st.snapshots,
		 (unsigned long long)st.raced,
		 (unsigned long long)st.switches,
		 (unsigned long long)st.preempted,
		 (unsigned long long)st.switch_lost,
		 (unsigned long long)st.calls_read,
		 (unsigned long long)st.incomplete,
		 (unsigned long long)st.cpu_samples,
		 (unsigned long long)st.lost,
		 (unsigned long long)(st.daemon_cpu_ns / 1000));
	return ret;
}

int run_threads(const struct run_ctx *c, struct profile **out,
		struct run_result *r)
{
	struct threads_opts o = { .pid = c->pid, .cache = c->dsos,
				  .turns = c->turns, .kernel = c->req->kernel };
	struct threads_stats st;
	int ret;

	/* Kernel stacks name their functions; the table gives their
	 * addresses, as debug=1 prints them (root's kernel frames). */
	if (o.kernel)
		o.ksyms = c->ksyms;

	ret = threads_profile(&o, out, &st);
	r->samples = st.threads;
	snprintf(r->detail, sizeof(r->detail), "threads=%u skipped=%u "
		 "max_hold_us=%llu", st.threads, st.skipped,
		 (unsigned long long)(st.max_hold_ns / 1000));
	return ret;
}

int run_heap(const struct run_ctx *c, struct profile **out,
	     struct run_result *r)
{
	struct heap_opts o = {
		.pid = c->pid,
		.allocs = c->req->kind == PROFFS_KIND_ALLOCS,
		.has_window = c->req->has_window,
		.window_ms = c->req->window_ms,
		.rate = c->req->rate,
		.rate_named = c->req->rate_named,
		.stop = c->stop,
	};
	struct heap_stats st;
	int ret;

	ret = heap_profile(c->heap, &o, out, &st);
	/* st.lost counts since the agent was loaded: not this session's. */
	r->samples = st.samples;
	/* Without a window, the answer is everything so far - unless
	 * it had to measure one (it loaded the agent, or used uprobes). */
	if (st.armed_now || st.uprobe)
		r->window_ms = o.window_ms;
	snprintf(r->detail, sizeof(r->detail), "rate=%u samples=%llu "
		 "frees=%llu lost=%llu%s%s%s", c->req->rate,
		 (unsigned long long)st.samples, (unsigned long long)st.frees,
		 (unsigned long long)st.lost,
		 st.armed_now ? " armed_now" : "",
		 st.uprobe ? " uprobe" : "", st.tripped ? " breaker" : "");
	if (st.harmed)
		snprintf(r->harm, sizeof(r->harm), "%s", st.harm);
	return ret;
}

/* MemStats: a snapshot, loading the agent when it is not there. */
int run_memstats(const struct run_ctx *c, struct profile **out,
		 struct run_result *r)
{
	struct heap_opts o = { .pid = c->pid, .stop = c->stop };
	struct heap_stats st;
	int ret;

	ret = heap_memstats(c->heap, &o, out, &st);
	snprintf(r->detail, sizeof(r->detail), "samples=%llu%s",
		 (unsigned long long)st.samples,
		 st.armed_now ? " armed_now" : "");
	return ret;
}
