/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record.h - the flight recorder (SPEC §10, -o record): low-rate CPU
 * samples of every process, kept aggregated per second in a ring bounded
 * in memory, so that the last N seconds of a process are a profile at
 * once, even after the process exited.
 *
 * One thread reads one system-wide cpu-clock event per CPU (pid -1,
 * perf_open_system()) at hz per second of busy CPU. Each sample carries
 * the user registers and an 8 KiB copy of the user stack, unwound with
 * the DWARF unwinder the cpu kind uses (unwind.h) and symbolized at once
 * into a dictionary of that process (locations, functions, mappings and
 * the distinct (stack, thread) pairs). Stack copies, not the kernel's
 * frame-pointer callchain: Debian's binaries and libraries are built
 * without frame pointers, so an FP callchain would give the leaf and
 * then garbage; at 19 Hz a CPU the copies cost ~8 KiB x 19 a second,
 * nothing beside what the unwinding saves. Symbolizing as the sample
 * comes, not at the read, is what keeps an exited process readable:
 * its maps and files may be gone by then.
 *
 * A bucket is one second of CPU samples: (process, stack, count)
 * triples. Buckets live in a ring of span_s seconds. What the recorder
 * holds is counted once a second, as malloc() rounds it: the buckets;
 * each process's dictionary (its strings and tables,
 * profile_mem_bytes()) and distinct stacks; and each live process's
 * context (maps, unwinder with its cache of CFI rows and libunwind's
 * space, symbolizer tables). A context is a cache: a process not
 * sampled for 10 s lets go of it (and of its hold on the shared dso
 * cache's objects, which that cache bounds and expires, dso.h), and
 * its next sample starts a new one, beside the old dictionary; a read
 * merges the two. When the count passes mem_bytes, the contexts of
 * processes not sampled in the last 2 s go first, then the oldest
 * buckets, until it fits (the current second stays); a process's
 * dictionary goes with the last bucket that names it. Not counted: the
 * perf rings (2 MiB a CPU), the dso cache (shared with sessions), a
 * runtime's symbolizer state (JIT maps, CPython's).
 *
 * Reading copies what a window needs under the recorder's lock and
 * builds a new profile, shaped as a cpu profile (samples/count,
 * cpu/nanoseconds, labels thread and thread_name, and pid and comm for
 * a whole-host read). Access is not decided here: record_creds() gives
 * the credentials of a process as they were when it was last seen, for
 * the caller to apply the live-read rules to an exited process.
 *
 * Thread-safe. Errors are negative errno values.
 */
#ifndef PROFFS_RECORD_H
#define PROFFS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/proc.h"

struct dso_cache;
struct profile;
struct recorder;

#define RECORD_DEFAULT_HZ 19
#define RECORD_DEFAULT_SPAN_S 600
#define RECORD_DEFAULT_MEM (64ull << 20)

struct record_opts {
	unsigned hz;		/* samples a second of busy CPU, per CPU */
	unsigned span_s;	/* seconds kept, at most */
	uint64_t mem_bytes;	/* memory kept, at most (see above) */
	struct dso_cache *cache;	/* borrowed, shared with sessions */
};

/*
 * Open the events and start the recorder's thread. -EACCES/-EPERM when
 * the kernel refuses system-wide events (needs root or CAP_PERFMON),
 * -EINVAL for a zero hz or span, -ENOMEM.
 */
int record_start(const struct record_opts *o, struct recorder **out);

/* Stop the thread, close the events, free everything. NULL is a no-op. */
void record_stop(struct recorder *r);

/* The span it keeps, in seconds (what a `last` window may ask). */
unsigned record_span_s(const struct recorder *r);

/*
 * Whether pid has samples in the ring; with creds, the credentials it
 * had when last seen, and with exited whether it has exited (or its pid
 * was reused) since. -ENOENT when the ring knows no such process.
 */
int record_creds(struct recorder *r, pid_t pid, struct proc_creds *creds,
		 bool *exited);

struct record_query {
	pid_t pid;		/* 0: every process allow() admits */
	bool (*allow)(pid_t pid, const struct proc_creds *creds,
		      bool exited, void *arg);
	void *allow_arg;
	const char *all_title;	/* the command of a whole-host profile */
	uint64_t end_ago_ms;	/* the window ends this long before now */
	uint64_t window_ms;	/* and lasts this long */
	/*
	 * A timeline (the trace kind, trace.h): the ring keeps counts per
	 * second, not times, so each (thread, second, stack) is one sample
	 * with the numeric labels ts and dur (ns from the window's start):
	 * a thread's stacks of one second laid end to end from the second's
	 * start, in the order of their first sample, each count / hz long
	 * (scaled to fit the second).
	 */
	bool timeline;
};

/*
 * The samples of a window, as a new profile in *out. A pid the ring
 * does not know is -ESRCH; a window with no samples is an empty
 * profile (with a comment that says so), not an error.
 */
int record_profile(struct recorder *r, const struct record_query *q,
		   struct profile **out);

struct record_stats {
	uint64_t samples;	/* kept since start */
	uint64_t lost;		/* the kernel dropped (rings full) */
	uint64_t dropped_buckets;	/* gone for memory, not age */
	uint64_t mem_bytes;	/* held now, at the last sweep */
	uint64_t mem_max;	/* the bound (record_mem) */
	uint64_t retired;	/* contexts let go (idle, or for memory) */
	unsigned procs;		/* processes in the ring now */
	uint64_t cpu_ns;	/* the recorder thread's CPU time */
};

void record_get_stats(struct recorder *r, struct record_stats *st);

#endif
