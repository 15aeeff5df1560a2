/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cpu.h - a CPU profile of one process over a window.
 *
 * cpu_profile() samples every thread of the process with cpu-clock at hz
 * per second of cpu time, unwinds each sample as it arrives, and adds it to
 * a profile with Go's CPU sample types (samples/count, cpu/nanoseconds),
 * period cpu/nanoseconds = 1e9/hz, and string labels thread (tid) and
 * thread_name (comm). Memory grows with distinct stacks only.
 *
 * With pid 0 it profiles every process allow() admits, like perf record
 * -a: one event per CPU for the whole machine where the daemon may open
 * such events (root, CAP_PERFMON), so a sample costs what it costs for
 * one process; else one per thread of each process admitted when the
 * window starts. Each process gets its own maps, unwinder and
 * symbolizer the first time one of its samples comes (at most 2,048;
 * samples of more are skipped and a comment counts them).
 *
 * With a kallsyms table, samples taken in the kernel get their kernel
 * frames above the user ones, "[k] name" (kframes.h), where the kernel
 * allows the daemon to see them (kallsyms.h, perf.h); elsewhere nothing
 * changes. Stacks deeper than the kernel's copy of a sample are unwound
 * on from the live thread (unwinder_read_live()).
 *
 * It blocks for the window, on the calling thread. It returns early with
 * -ECANCELED when *stop becomes true (checked every 50 ms), and early with
 * the partial profile (and a comment saying so) when the process exits.
 *
 * It moves the calling thread to nice -10 when allowed, and leaves it
 * there: a sampler that gets only its fair share among a target's busy
 * threads loses samples and answers late, and what the caller does next
 * (render, reply) is as urgent.
 *
 * Ownership: on success *out is a new profile the caller frees with
 * profile_free(). Errors: -ESRCH (no such process), -EACCES/-EPERM (the
 * kernel refuses perf events on it), -ENOMEM, -ECANCELED.
 */
#ifndef PROFFS_CPU_H
#define PROFFS_CPU_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct dso_cache;
struct kallsyms;
struct profile;

struct cpu_opts {
	/* The process, or 0 for every process allowed (a whole-host
	 * profile, like perf record -a): then each sample also has the
	 * string labels pid and comm (the process's). */
	pid_t pid;
	/* With pid 0: whether samples of a process go in the profile, asked
	 * once per process (NULL: all); the profile's command string. */
	bool (*allow)(pid_t pid, void *arg);
	void *allow_arg;
	const char *all_title;
	uint32_t hz;
	uint64_t window_ms;
	struct dso_cache *cache;	/* shared across sessions */
	struct kallsyms *ksyms;		/* shared; NULL: no [k] frames */
	struct pybpf_keep *pykeep;	/* shared: Python readers kept */
	/* Memory bound: past this many distinct stacks, further samples are
	 * counted under one "[max_stacks reached]" frame. 0 = no bound. */
	uint32_t max_stacks;
	const _Atomic bool *stop;	/* may be NULL */
	/* A timeline (the trace kind): each sample also gets the numeric
	 * label ts, its time in ns after the window's start, so no two
	 * samples merge and memory grows with samples (max_stacks bounds
	 * it). */
	bool timeline;
	/* The origin of ts (CLOCK_MONOTONIC ns), shared with another
	 * sampler of the same window; 0: this window's start. */
	uint64_t timeline_t0;
};

struct cpu_stats {
	uint64_t samples;	/* samples added */
	uint64_t lost;		/* dropped by the kernel (ring full) */
	uint64_t skipped_procs;	/* whole host: processes past the limit */
	uint64_t elapsed_ns;
	uint64_t daemon_cpu_ns;	/* the sampling thread's CPU time */
	/* how a Python target's frames were read: "ebpf" (in the kernel,
	 * at each sample), "eager" (by the daemon after each), else NULL */
	const char *python_read;
};

int cpu_profile(const struct cpu_opts *o, struct profile **out,
		struct cpu_stats *stats);

/* Move the calling thread to nice -10 when allowed (see above); for the
 * other kinds that sample at a rate beside busy target threads. */
void cpu_raise_priority(void);

#endif
