/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record_i.h - the flight recorder's state, shared by record.c (the
 * recorder's thread: samples into buckets, the sweeps, the memory bound)
 * and record_read.c (windows of the ring as profiles). Locking as
 * record.c describes at struct rproc.
 */
#ifndef PROFFS_RECORD_I_H
#define PROFFS_RECORD_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sampler/record/record.h"

#define DRAIN_WAIT_MS 500	/* a read waits for the rings this long */
#define PROC_BUCKETS 1024

/* A distinct (stack, thread) of one process. */
struct rstack {
	uint32_t hash;
	uint32_t nlocs;
	uint64_t *locs;		/* ids in the process's dictionary */
	uint32_t tid;
	int64_t tid_str, name_str;
};

/*
 * A process the ring holds samples of, live or exited. Only the
 * recorder's thread writes the hash chains (under recorder.lock) and
 * uses maps, unw and sym; dict and stacks change under lock, which a
 * reader takes inside recorder.lock: so a slow first symbolization of a
 * new process blocks no reader of another.
 */
struct rproc {
	pid_t pid;
	unsigned long long start;	/* tells a reused pid apart */
	pthread_mutex_t lock;		/* dict, stacks */
	_Atomic bool exited;
	bool broken;			/* would not load: samples skipped */
	/* its context let go (CONTEXT_IDLE_S): a newer rproc of the same
	 * process takes its samples; readers merge them */
	bool retired;
	struct proc_creds creds;	/* as last seen alive */
	uint64_t creds_sec;
	char comm[32];
	struct profile *dict;		/* tables, no samples */
	int64_t key_thread, key_thread_name;
	struct proc_maps *maps;		/* NULL once exited */
	struct unwinder *unw;
	struct symbolizer *sym;
	struct rstack *stacks;
	uint32_t nstacks, cap;
	uint32_t *slots;		/* hash -> stack index + 1 */
	uint32_t nslots;
	uint64_t refs;			/* bucket entries naming it */
	uint32_t *remap;		/* compact_stacks()'s, else NULL */
	uint64_t seen_sec;		/* its last sample */
	uint64_t exit_ns;		/* CLOCK_REALTIME it was found gone */
	struct rproc *next;		/* in its hash chain, newest first */
};

struct rentry {
	struct rproc *proc;
	uint32_t stack;
	uint32_t count;
};

struct rbucket {
	uint64_t sec;		/* CLOCK_MONOTONIC second; 0 = empty */
	uint32_t n, cap;
	struct rentry *e;
};

struct recorder {
	struct record_opts o;
	struct perf_rec *rec;
	pthread_t thread;
	_Atomic bool stop;
	pthread_mutex_t lock;
	/* protected by lock: */
	struct rproc *procs[PROC_BUCKETS];
	struct rbucket *buckets;	/* span_s + 1, by sec % nbuckets */
	uint32_t nbuckets;
	uint64_t now_sec;		/* of the sample being added */
	struct record_stats st;
	uint64_t drained_ns;		/* samples taken before: all read */
	pthread_cond_t drained;		/* signalled when drained_ns moves */
	int wake_fd;			/* an eventfd: read the rings now */
	pid_t self;
};

/* Whether p exited (or its pid was reused); record.c. */
void record_check_exit(struct rproc *p);

#endif
