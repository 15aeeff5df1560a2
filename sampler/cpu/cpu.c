// SPDX-License-Identifier: GPL-2.0-or-later
/* cpu.c - one CPU profiling window: perf samples -> unwind -> profile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/cpu/cpu.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/kallsyms.h"
#include "sampler/cpu/kdefer.h"
#include "sampler/unwind/kframes.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/perf/perf.h"
#include "sampler/proc.h"
#include "sampler/runtime/python.h"
#include "sampler/model/profile.h"
#include "sampler/unwind/stackctx.h"
#include "sampler/unwind/symbolize.h"
#include "sampler/unwind/unwind.h"
#include "sampler/window.h"

#define MAX_FRAMES 128		/* user frames */
/* Frames a stack may gain from a runtime's (Python's) frames. */
#define RUNTIME_FRAMES 128
#define POLL_MS 100
#define THREAD_SLOTS 4096	/* power of two; more threads share names */
#define PROC_BUCKETS 256
/* Processes a whole-host profile unwinds; samples of more are skipped
 * and counted (each holds an unwinder and a symbolizer). */
#define PROC_MAX 2048
/* See cpu_raise_priority(). */
#define SAMPLER_NICE -10

struct thread_slot {
	uint32_t tid;		/* 0 = empty */
	int64_t tid_str;
	int64_t name_str;
};

/* What samples of one process need: its maps, unwinder, symbolizer and,
 * for a whole-host profile, its labels. */
struct proc_ctx {
	pid_t pid;
	bool allowed;		/* else its samples are skipped */
	struct stack_ctx sc;	/* maps, unwinder, symbolizer */
	int64_t pid_str, comm_str;
	struct proc_ctx *next;	/* in its bucket */
};

struct cpu_run {
	const struct cpu_opts *o;
	struct profile *p;
	struct proc_ctx *procs[PROC_BUCKETS];
	struct proc_ctx *last;		/* the last sample's, a fast path */
	struct kframes *kf;		/* NULL: no kernel frames */
	struct kdefer *held;		/* samples waiting for kallsyms */
	unsigned nprocs;		/* contexts that unwind (PROC_MAX) */
	int64_t key_thread, key_thread_name, key_pid, key_comm, key_gil;
	int64_t key_ts;
	uint64_t t0;			/* window start, CLOCK_MONOTONIC ns */
	struct thread_slot *threads;	/* THREAD_SLOTS */
	struct cpu_stats *st;
	struct pyrt *pybpf;		/* its frames read by eBPF, or NULL */
	uint32_t max_stacks;
	uint64_t overflow_loc;		/* 0 until max_stacks is reached */
	int err;			/* first error of a callback */
};

/* The thread's label strings, read the first time it shows: its name
 * the runtime's (a Python thread's, as threading named it), else the
 * kernel's (/proc). */
static int thread_labels(struct cpu_run *run, struct symbolizer *sym,
			 uint32_t pid, uint32_t tid, struct pf_label labels[2])
{
	struct thread_slot *t = NULL;
	const char *rt;
	char buf[32];

	for (size_t i = tid, probes = 0; probes < 16; i++, probes++) {
		t = &run->threads[i & (THREAD_SLOTS - 1)];
		if (!t->tid || t->tid == tid)
			break;
	}
	if (t->tid != tid) {
		t->tid = tid;
		snprintf(buf, sizeof(buf), "%u", tid);
		t->tid_str = profile_intern(run->p, buf);
		rt = symbolizer_thread_name(sym, tid);
		if (!rt && proc_comm(pid, tid, buf, sizeof(buf)))
			strcpy(buf, "?");
		t->name_str = profile_intern(run->p, rt ? rt : buf);
		if (t->tid_str < 0 || t->name_str < 0) {
			t->tid = 0;
			return -ENOMEM;
		}
	}
	labels[0] = (struct pf_label){ .key = run->key_thread,
				       .str = t->tid_str };
	labels[1] = (struct pf_label){ .key = run->key_thread_name,
				       .str = t->name_str };
	return 0;
}

/* The one location every sample past max_stacks is counted under. */
static int overflow_location(struct cpu_run *run, uint64_t *loc)
{
	char text[128];
	struct pf_line line = { 0 };
	int ret;

	if (run->overflow_loc) {
		*loc = run->overflow_loc;
		return 0;
	}
	snprintf(text, sizeof(text), "proffs: more than %u distinct stacks; "
		 "later new stacks are counted under [max_stacks reached]",
		 run->max_stacks);
	ret = profile_add_comment(run->p, text);
	if (!ret)
		ret = profile_add_function(run->p, "[max_stacks reached]", NULL,
					   NULL, 0, &line.function_id);
	if (!ret)
		ret = profile_add_location(run->p, 0, 0, &line, 1,
					   &run->overflow_loc);
	*loc = run->overflow_loc;
	return ret;
}

/* Whether c's program is written in Go (its stacks switch; unwinding
 * needs the frame pointers walked at the sample, perf_open_fp()). */
static bool is_go(struct proc_ctx *c)
{
	struct map_entry *e = c->sc.maps ? maps_main(c->sc.maps) : NULL;

	return e && e->dso && dso_is_go(e->dso);
}

static void proc_ctx_free(struct proc_ctx *c)
{
	stackctx_close(&c->sc);
	free(c);
}

/* Maps, unwinder and symbolizer of c->pid, and its labels. */
static int proc_ctx_load(struct cpu_run *run, struct proc_ctx *c)
{
	char buf[32];
	int ret;

	ret = stackctx_open(&c->sc, c->pid, run->o->cache, run->p,
			    STACKCTX_LIVE |
			    (run->o->pid ? STACKCTX_ATTACH : 0));
	if (ret || run->o->pid)
		return ret;
	snprintf(buf, sizeof(buf), "%d", (int)c->pid);
	c->pid_str = profile_intern(run->p, buf);
	if (proc_comm(c->pid, c->pid, buf, sizeof(buf)))
		strcpy(buf, "?");
	c->comm_str = profile_intern(run->p, buf);
	return c->pid_str < 0 || c->comm_str < 0 ? -ENOMEM : 0;
}

/*
 * The context of pid, made the first time it shows. A process the
 * caller may not see, gone already, or past PROC_MAX gets a context
 * that skips its samples; only running out of memory fails.
 */
static int proc_ctx_get(struct cpu_run *run, pid_t pid, bool must_load,
			struct proc_ctx **out)
{
	struct proc_ctx **head = &run->procs[(uint32_t)pid % PROC_BUCKETS];
	struct proc_ctx *c;
	int ret;

	if (run->last && run->last->pid == pid) {
		*out = run->last;
		return 0;
	}
	for (c = *head; c && c->pid != pid; c = c->next)
		;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		c->pid = pid;
		c->next = *head;
		*head = c;
		c->allowed = !run->o->allow ||
			     run->o->allow(pid, run->o->allow_arg);
		if (c->allowed && run->nprocs == PROC_MAX) {
			run->st->skipped_procs++;
			c->allowed = false;
		}
		if (c->allowed) {
			ret = proc_ctx_load(run, c);
			if (ret && (must_load || ret == -ENOMEM))
				return ret;
			c->allowed = !ret;
			run->nprocs += c->allowed;
		}
	}
	run->last = c;
	*out = c;
	return 0;
}

/* One stack into the profile, or under [max_stacks reached]. */
static int add_stack(struct cpu_run *run, uint64_t *locs, int n,
		     const struct pf_label *labels, uint32_t nlabels,
		     const int64_t *values)
{
	int ret;

	if (run->max_stacks && profile_nsamples(run->p) >= run->max_stacks) {
		ret = overflow_location(run, &locs[0]);
		if (ret)
			return ret;
		n = 1;
	}
	return profile_add_sample(run->p, locs, n, labels, nlabels, values);
}

/* A sample with its kernel frames named (none when kallsyms cannot be
 * read): the kernel locations go just below ulocs, which must have
 * PERF_KERNEL_FRAMES free slots below it. */
static int add_with_kernel(struct cpu_run *run, const uint64_t *kpcs,
			   uint32_t nk, uint64_t *ulocs, uint32_t nu,
			   const struct pf_label *labels, uint32_t nlabels,
			   const int64_t *values)
{
	uint64_t *locs = ulocs;
	int ret;

	if (!run->kf || !kallsyms_ready(run->o->ksyms))
		nk = 0;
	locs -= nk;
	for (uint32_t i = 0; i < nk; i++) {
		ret = kframes_pc(run->kf, kpcs[i], i == 0, &locs[i]);
		if (ret)
			return ret;
	}
	return add_stack(run, locs, (int)(nk + nu), labels, nlabels, values);
}

static int replay_one(void *arg, const struct kdefer_sample *s)
{
	uint64_t locs[PERF_KERNEL_FRAMES + MAX_FRAMES + RUNTIME_FRAMES];

	memcpy(locs + PERF_KERNEL_FRAMES, s->ulocs, s->nu * sizeof(*locs));
	return add_with_kernel(arg, s->kpcs, s->nk, locs + PERF_KERNEL_FRAMES,
			       s->nu, s->labels, s->nlabels, s->values);
}

/* The held samples into the profile: reads kallsyms (once a daemon). */
static int add_held(struct cpu_run *run)
{
	return kdefer_replay(run->held, replay_one, run);
}

static void on_sample(const struct perf_sample *s, void *arg)
{
	struct cpu_run *run = arg;
	uint64_t pcs[MAX_FRAMES];
	uint64_t locs[PERF_KERNEL_FRAMES + MAX_FRAMES + RUNTIME_FRAMES];
	uint64_t *ulocs = locs + PERF_KERNEL_FRAMES;
	int64_t values[2] = { 1, (int64_t)s->period };
	struct pf_label labels[6];	/* thread, name, pid, comm, gil, ts */
	struct proc_ctx *c;
	const char *gil;
	int n, npcs, nlabels = 2, ret;

	if (run->err || !s->pid ||
	    (run->o->pid && s->pid != (uint32_t)run->o->pid))
		return;
	ret = proc_ctx_get(run, s->pid, false, &c);
	if (ret)
		goto fail;
	if (!c->allowed)
		return;
	unwinder_set_fp_chain(c->sc.unw, s->user, s->nuser);
	unwind_stack(c->sc.unw, &s->regs, s->stack, s->stack_len, pcs,
		     MAX_FRAMES, &npcs);
	ret = pyrt_bpf_sample(run->pybpf, s->tid, s->time);
	if (!ret)
		ret = symbolizer_stack(c->sc.sym, s->tid, pcs, npcs, ulocs,
			       MAX_FRAMES + RUNTIME_FRAMES, &n, &gil);
	if (ret)
		goto fail;
	ret = thread_labels(run, c->sc.sym, s->pid, s->tid, labels);
	if (ret)
		goto fail;
	if (!run->o->pid) {
		labels[nlabels++] = (struct pf_label){ .key = run->key_pid,
						       .str = c->pid_str };
		labels[nlabels++] = (struct pf_label){ .key = run->key_comm,
						       .str = c->comm_str };
	}
	if (gil) {
		labels[nlabels] = (struct pf_label){ .key = run->key_gil };
		labels[nlabels].str = profile_intern(run->p, gil);
		if (labels[nlabels++].str < 0) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	if (run->o->timeline)
		labels[nlabels++] = (struct pf_label){
			.key = run->key_ts,
			.num = s->time > run->t0 ? (int64_t)(s->time - run->t0)
						 : 0,
		};
	if (s->nkernel && run->kf && !kallsyms_tried(run->o->ksyms)) {
		struct kdefer_sample h = {
			.kpcs = s->kernel, .nk = s->nkernel, .ulocs = ulocs,
			.nu = (uint32_t)n, .labels = labels,
			.nlabels = (uint32_t)nlabels, .values = values,
		};

		ret = kdefer_add(&run->held, &h);
		/* a target that lives in the kernel: read the table now */
		if (!ret && kdefer_bytes(run->held) > KDEFER_MAX_BYTES)
			ret = add_held(run);
	} else {
		ret = add_with_kernel(run, s->kernel, s->nkernel, ulocs,
				      (uint32_t)n, labels, (uint32_t)nlabels,
				      values);
	}
	if (ret)
		goto fail;
	run->st->samples++;
	return;
fail:
	run->err = ret;
}

/*
 * When the target's threads keep every CPU busy, a sampling thread at the
 * default priority gets one thread's fair share among them: it falls
 * behind the rings (which fill in tens of ms: lost samples) and takes
 * hundreds of ms to open the events and to answer. It needs ~1% of a CPU,
 * so it runs ahead of them at SAMPLER_NICE when allowed (CAP_SYS_NICE);
 * the rendering and the reply that follow on this thread are as urgent,
 * so the priority stays (see cpu.h).
 */
void cpu_raise_priority(void)
{
	int ret = proc_thread_nice(SAMPLER_NICE);

	if (ret)
		pr_debug("cpu: cannot raise the sampling thread's priority: "
			 "%s", strerror(-ret));
}

static int setup_profile(struct cpu_run *run, const struct cpu_opts *o)
{
	struct pf_header *h;
	int ret;

	ret = profile_new(&run->p);
	if (ret)
		return ret;
	if (profile_add_sample_type(run->p, "samples", "count") ||
	    profile_add_sample_type(run->p, "cpu", "nanoseconds") ||
	    profile_set_period(run->p, "cpu", "nanoseconds",
			       clock_period_ns(o->hz)))
		return -ENOMEM;
	run->key_thread = profile_intern(run->p, "thread");
	run->key_thread_name = profile_intern(run->p, "thread_name");
	run->key_pid = profile_intern(run->p, "pid");
	run->key_comm = profile_intern(run->p, "comm");
	run->key_ts = profile_intern(run->p, "ts");
	run->key_gil = profile_intern(run->p, "gil");
	if (proc_name_profile(run->p, o->pid, "cpu"))
		return -ENOMEM;
	h = profile_header(run->p);
	if (!o->pid)	/* pid 0's cmdline is ours: the title says what */
		h->command = profile_intern(run->p, o->all_title ?
					    o->all_title : "all processes");
	if (run->key_thread < 0 || run->key_thread_name < 0 ||
	    run->key_pid < 0 || run->key_comm < 0 || run->key_gil < 0 ||
	    run->key_ts < 0 ||
	    h->command < 0)
		return -ENOMEM;
	run->threads = calloc(THREAD_SLOTS, sizeof(*run->threads));
	return run->threads ? 0 : -ENOMEM;
}

static int look_fd(void *arg, bool *alive)
{
	*alive = proc_alive_fd(*(int *)arg);
	return 0;
}

/* Sample until the window ends, stop is set, or the process exits (a
 * look at /proc/PID/stat costs: every POLL_MS, not at every wakeup, from
 * the file held open). */
static int sample_window(struct cpu_run *run, struct perf_rec *rec,
			 const struct cpu_opts *o, struct window *w)
{
	int stat_fd = o->pid ? proc_stat_open(o->pid) : -1;
	bool on;
	int ret;

	window_begin(w, now_ns(), o->pid, o->window_ms, o->stop,
		     POLL_MS * 1000000ull);
	if (stat_fd >= 0) {
		w->look = look_fd;
		w->look_arg = &stat_fd;
	}
	for (;;) {
		uint64_t now = now_ns();

		ret = window_on(w, now, &on);
		if (ret || !on)
			break;
		ret = perf_poll(rec, window_nap_ns(w, now, POLL_MS * 1000000ull)
				     / 1000000ull, on_sample, run);
		if (ret || run->err)
			break;
	}
	if (!ret)
		ret = perf_poll(rec, 0, on_sample, run);	/* drain */
	run->st->elapsed_ns = now_ns() - w->start_ns;
	if (stat_fd >= 0)
		close(stat_fd);
	w->look = NULL;
	return ret ? ret : run->err;
}

static int note_skipped(struct profile *p, uint64_t n)
{
	char text[160];

	snprintf(text, sizeof(text), "proffs: samples of %llu processes past "
		 "the first %u were skipped", (unsigned long long)n,
		 PROC_MAX);
	return profile_add_comment(p, text);
}

/* A process that never ran in the window: say so, and what would show
 * where it waits (issue 28). */
static int note_idle(struct profile *p, const struct cpu_opts *o)
{
	char text[200];
	uint64_t s = (o->window_ms + 999) / 1000;

	snprintf(text, sizeof(text), "proffs: process %d did not run on a CPU "
		 "in the window (0 samples); wall_%llus.svg shows where its "
		 "threads wait", (int)o->pid, (unsigned long long)(s ? s : 1));
	return profile_add_comment(p, text);
}

static void run_free(struct cpu_run *run)
{
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct proc_ctx *c = run->procs[b], *next; c; c = next) {
			next = c->next;
			proc_ctx_free(c);
		}
	kframes_free(run->kf);
	kdefer_free(run->held);
	free(run->threads);
}

/* Samples the caller may see of every process: per-CPU events where the
 * daemon may open them (one event per CPU, whatever the number of
 * processes and threads), else the threads of every process allowed now. */
static int open_all(const struct cpu_opts *o, bool kframes,
		    struct perf_rec **rec)
{
	pid_t *pids = NULL;
	size_t n = 0, kept = 0;
	int ret;

	ret = perf_open_system(o->hz, kframes, rec);
	if (ret != -EACCES && ret != -EPERM)
		return ret;
	ret = proc_pids(&pids, &n);
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++)
		if (!o->allow || o->allow(pids[i], o->allow_arg))
			pids[kept++] = pids[i];
	ret = kept ? perf_open_pids(pids, kept, o->hz, kframes, rec) : -ESRCH;
	free(pids);
	return ret;
}

/* A Python process's events: batched as a native program's, with the
 * frames read in the kernel (pybpf.c) where it can be done, else eager
 * (the daemon reads them as soon as each sample is written). */
static int open_python(struct cpu_run *run, struct proc_ctx *c,
		       const struct cpu_opts *o, struct perf_rec **rec)
{
	struct pyrt *py = symbolizer_python(c->sc.sym);
	const int *fds;
	size_t n;
	int ret;

	ret = pyrt_bpf_start(py, o->pykeep);
	if (ret == -ENOMEM)
		return ret;
	if (!ret) {
		ret = perf_open(o->pid, o->hz, run->kf != NULL, rec);
		if (ret)
			return ret;
		fds = perf_fds(*rec, &n);
		ret = pyrt_bpf_attach(py, fds, n);
		if (!ret) {
			run->pybpf = py;
			run->st->python_read = "ebpf";
			return 0;
		}
		perf_close(*rec);
		*rec = NULL;
	}
	/* a JVM's frames are read eagerly too, and are not Python's */
	run->st->python_read = py ? "eager" : NULL;
	return perf_open_eager(o->pid, o->hz, run->kf != NULL, rec);
}

int cpu_profile(const struct cpu_opts *o, struct profile **out,
		struct cpu_stats *stats)
{
	struct cpu_run run = { .o = o, .st = stats,
			       .max_stacks = o->max_stacks };
	uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	struct perf_rec *rec = NULL;
	struct proc_ctx *c;
	struct window w = { 0 };
	int64_t t0;
	int ret;

	memset(stats, 0, sizeof(*stats));
	if (!o->hz || !o->window_ms)
		return -EINVAL;
	cpu_raise_priority();
	ret = setup_profile(&run, o);
	/* One process: what it needs first, so that a wrong pid fails
	 * before any event is opened. */
	if (!ret && o->pid)
		ret = proc_ctx_get(&run, o->pid, true, &c);
	/* Kernel frames unless the table is known to be unreadable; it is
	 * read only when a sample has some, after the window (kdefer.h). */
	if (!ret && o->ksyms &&
	    (!kallsyms_tried(o->ksyms) || kallsyms_ready(o->ksyms)))
		ret = kframes_new(run.p, o->ksyms, &run.kf);
	t0 = clock_ns(CLOCK_REALTIME);
	/* the samples' clock */
	run.t0 = o->timeline_t0 ? o->timeline_t0 : clock_ns(CLOCK_MONOTONIC);
	/* A runtime's frames are read from the process when its sample is
	 * handled: at once, so that they are (nearly) the sample's; or,
	 * Python's where the kernel runs our program, at the sample. */
	if (!ret && o->pid && symbolizer_runtime(c->sc.sym))
		ret = open_python(&run, c, o, &rec);
	else if (!ret && o->pid && is_go(c))
		ret = perf_open_fp(o->pid, o->hz, run.kf != NULL, &rec);
	else if (!ret)
		ret = o->pid ? perf_open(o->pid, o->hz, run.kf != NULL, &rec)
			     : open_all(o, run.kf != NULL, &rec);
	if (!ret && !perf_kernel_frames(rec)) {
		kframes_free(run.kf);
		run.kf = NULL;
	}
	if (!ret)
		ret = sample_window(&run, rec, o, &w);
	if (rec)
		stats->lost = perf_lost(rec);
	perf_close(rec);
	if (!ret)
		ret = add_held(&run);
	if (!ret)
		ret = window_note_exit(&w, run.p, stats->elapsed_ns);
	if (!ret && stats->skipped_procs)
		ret = note_skipped(run.p, stats->skipped_procs);
	if (!ret && o->pid && !w.exited && !stats->samples)
		ret = note_idle(run.p, o);
	for (size_t b = 0; b < PROC_BUCKETS && !ret; b++)
		for (c = run.procs[b]; c && !ret; c = c->next)
			ret = symbolizer_note(c->sc.sym);
	run_free(&run);
	stats->daemon_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	/* a /proc file of the process gone: the process is */
	return profile_deliver(run.p, ret == -ENOENT ? -ESRCH : ret, t0,
			       stats->elapsed_ns, out);
}
