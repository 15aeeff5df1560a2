/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * offcpu_i.h - one off-CPU window's state, shared by offcpu.c (the
 * looks), oncpu.c (wall's running stacks, from perf) and ocshare.c (each
 * thread's exact times shared out among its samples at the end). Owned
 * by offcpu_profile() for the length of the call.
 */
#ifndef PROFFS_OFFCPU_I_H
#define PROFFS_OFFCPU_I_H

#include <stdbool.h>
#include <stdint.h>

#include "sampler/offcpu/offcpu.h"
#include "sampler/unwind/stackctx.h"
#include "sampler/window.h"

struct oc_thread;
struct oc_threads;
struct perf_rec;
struct perf_sample;
struct proc_maps;
struct pseudolocs;
struct symbolizer;
struct unwinder;
struct waitclass;

struct oc_sched;

struct oc_run {
	const struct offcpu_opts *o;
	struct offcpu_stats *st;
	struct profile *p;
	struct stack_ctx sc;	/* maps, unwinder, symbolizer */
	struct waitclass *wc;
	struct pseudolocs *ps;
	struct oc_threads *threads;
	struct perf_rec *rec;		/* wall's cpu-clock, or NULL */
	bool perf_refused;		/* wall without running stacks */
	bool perf_cpus;			/* events on the cpus, not threads */
	int64_t key_thread, key_thread_name, key_state;
	int64_t key_ts, key_dur;	/* timeline only */
	uint64_t look_ns;		/* the look under way (timeline) */
	uint8_t *stack;			/* a stack copy's room */
	char *ktext;			/* a kernel stack's text */
	bool overflowed;		/* max_stacks reached */
	int err;			/* first error of a perf callback */
	struct oc_sched *sched;		/* offcpu=sched, else NULL */
	uint64_t start_ns, end_ns;	/* the window, CLOCK_MONOTONIC */
};

/* A sample of th: values (count, ns); state is wall's label. */
int oc_add(struct oc_run *run, const struct oc_thread *th,
	   const uint64_t *locs, uint32_t n, const char *state,
	   int64_t count, int64_t ns);

/* wall: cpu-clock events on every thread at hz, as the cpu kind opens
 * them; a refusal (EACCES, EPERM) leaves run->rec NULL and says so. */
int oc_open_cpu(struct oc_run *run);
/* perf_poll()'s callback: one running stack. */
void oc_cpu_sample(const struct perf_sample *s, void *arg);

/* Scale each thread's samples to its exact times, add what has no
 * sample, and the comments. */
int oc_finish(struct oc_run *run, const struct window *w);

/* ---- offcpu.c, for ocsched.c ---- */

/* A record for a thread first seen now. */
int oc_thread_new(struct oc_run *run, pid_t tid, struct oc_thread **out);
/* Where th is now, from /proc, with no sample added: *off says whether
 * it is off the CPU, in stacks[cur] then (its state in th->state), in
 * system call *sysno (-1: none) made at user pc *pc; th->last is its
 * schedstat as the look found it. */
int oc_look_first(struct oc_run *run, struct oc_thread *th, bool *off,
		  long *sysno, uint64_t *pc);
/* wall's state label of a thread off the CPU in state letter. */
const char *oc_state_label(char letter);
/* The frame naming system call sysno (-1: none) of a thread off the
 * CPU in state letter. */
int oc_syscall_loc(struct oc_run *run, long sysno, char letter,
		   uint64_t *loc);

/* ---- offcpu=sched: scheduler events (ocsched.c) ---- */

/* Where every thread is, then the events, and the window starts
 * (run->start_ns); -EACCES or -EPERM when the kernel refuses them. */
int oc_sched_open(struct oc_run *run);
/* Up to timeout_ms for records, then every switch read. */
int oc_sched_poll(struct oc_run *run, int timeout_ms);
/* The window ended at run->end_ns: the last records, and each thread's
 * time off the CPU. */
int oc_sched_end(struct oc_run *run);
/* The samples of the time off the CPU (after the running ones were
 * scaled to their exact time). */
int oc_sched_add(struct oc_run *run);
void oc_sched_free(struct oc_run *run);

#endif
