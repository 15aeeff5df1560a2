// SPDX-License-Identifier: GPL-2.0-or-later
/* run.c - a session's profile, by its kind's run function, and its line
 * in the log. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/core/access.h"
#include "sampler/clock.h"
#include "sampler/cpu/cpu.h"
#include "sampler/heap/heap.h"
#include "fs/core/kinds.h"
#include "sampler/log.h"
#include "sampler/offcpu/offcpu.h"
#include "fs/core/past.h"
#include "fs/core/run.h"
#include "sampler/threads/threads.h"

/* A whole-host profile's filter: the processes its uid may profile. */
static bool allowed(pid_t pid, void *arg)
{
	const struct run_ctx *c = arg;

	return c->uid == (uid_t)-1 || !access_check(0, c->uid, pid);
}

int run_cpu(const struct run_ctx *c, struct profile **out, struct run_result *r)
{
	char title[160];
	struct cpu_opts o = {
		.pid = c->pid, .hz = c->req->hz,
		.window_ms = c->req->window_ms, .cache = c->dsos,
		.ksyms = c->req->kernel ? c->ksyms : NULL,
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
		/* as a sampling session does (cpu.h): on a machine whose
		 * CPUs busy threads share, a thread at their priority
		 * takes seconds to render and reply */
		cpu_raise_priority();
		memset(&st, 0, sizeof(st));
		ret = past_window(c->rec, c->pid, c->uid, c->req, out);
	} else {
		ret = cpu_profile(&o, out, &st);
	}
	if (!ret && c->req->base != PROFFS_BASE_NONE)
		ret = past_diff(c->rec, c->pid, c->uid, c->req, out);
	r->samples = st.samples;
	r->lost = st.lost;
	snprintf(r->detail, sizeof(r->detail), "hz=%u samples=%llu lost=%llu "
		 "daemon_cpu_us=%llu%s%s", o.hz,
		 (unsigned long long)st.samples, (unsigned long long)st.lost,
		 (unsigned long long)(st.daemon_cpu_ns / 1000),
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
				  .kernel = c->req->kernel };
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

static void log_outcome(const struct run_ctx *c, const struct run_result *r,
			int ret, uint64_t ms)
{
	const char *kind = name_kind_str(c->req->kind);

	if (!ret && r->harm[0])
		pr_err("session %u done: pid=%d kind=%s window_ms=%llu %s "
		       "elapsed_ms=%llu result=harmed: %s", c->id, (int)c->pid,
		       kind, (unsigned long long)r->window_ms, r->detail,
		       (unsigned long long)ms, r->harm);
	else if (!ret)
		pr_info("session %u done: pid=%d kind=%s window_ms=%llu %s "
			"elapsed_ms=%llu result=ok", c->id, (int)c->pid, kind,
			(unsigned long long)r->window_ms, r->detail,
			(unsigned long long)ms);
	else if (ret == -ECANCELED)
		pr_info("session %u stopped: pid=%d kind=%s elapsed_ms=%llu "
			"result=stopped: no readers left", c->id, (int)c->pid,
			kind, (unsigned long long)ms);
	else if (ret == -ENOMEM || ret == -EIO)	/* ours */
		pr_warn("session %u failed: pid=%d kind=%s elapsed_ms=%llu "
			"result=%s: %s", c->id, (int)c->pid, kind,
			(unsigned long long)ms, strerrorname_np(-ret),
			strerror(-ret));
	else	/* the target's state: traced, gone, not allowed */
		pr_notice("session %u failed: pid=%d kind=%s elapsed_ms=%llu "
			  "result=%s: %s", c->id, (int)c->pid, kind,
			  (unsigned long long)ms, strerrorname_np(-ret),
			  ret == -EBUSY ? kinds_row(c->req->kind)->busy :
			  strerror(-ret));
}

int run_session(const struct run_ctx *c, struct profile **out,
		struct run_outcome *outcome)
{
	const struct kind_ops *k = kinds_row(c->req->kind);
	struct run_result r = { .detail = "", .harm = "" };
	uint64_t t0 = now_ms();
	int ret;

	r.window_ms = kinds_window_ms(c->req);
	ret = k && k->run ? k->run(c, out, &r) : -ENOENT;
	*outcome = (struct run_outcome){ .samples = r.samples, .lost = r.lost,
					 .elapsed_ms = now_ms() - t0 };
	log_outcome(c, &r, ret, outcome->elapsed_ms);
	return ret;
}
