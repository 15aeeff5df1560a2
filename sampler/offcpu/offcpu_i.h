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

#include "offcpu.h"

struct oc_thread;
struct oc_threads;
struct perf_rec;
struct perf_sample;
struct proc_maps;
struct pseudolocs;
struct symbolizer;
struct unwinder;
struct waitclass;

struct oc_run {
	const struct offcpu_opts *o;
	struct offcpu_stats *st;
	struct profile *p;
	struct proc_maps *maps;
	struct unwinder *unw;
	struct symbolizer *sym;
	struct waitclass *wc;
	struct pseudolocs *ps;
	struct oc_threads *threads;
	struct perf_rec *rec;		/* wall's cpu-clock, or NULL */
	bool perf_refused;		/* wall without running stacks */
	bool perf_cpus;			/* events on the cpus, not threads */
	int64_t key_thread, key_thread_name, key_state;
	uint8_t *stack;			/* a stack copy's room */
	char *ktext;			/* a kernel stack's text */
	bool overflowed;		/* max_stacks reached */
	int err;			/* first error of a perf callback */
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
int oc_finish(struct oc_run *run, bool exited);

#endif
