/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_uprobe.h - the uprobe fallback of heap and allocs profiles (SPEC
 * §3): a window of a process's allocator calls, every one of them,
 * measured from outside with uprobes and uretprobes, for processes the
 * agent cannot be loaded into (no dlopen: a static binary) or when the
 * daemon runs with -o heap=uprobe.
 *
 * Probes: an entry probe on malloc, calloc, realloc, free,
 * posix_memalign, aligned_alloc, memalign, valloc and pvalloc, and a
 * return probe on each but free, in every object of the process that
 * defines them (libc for a dynamic program, the executable for a static
 * one; an interposed allocator too - calls it makes into libc are nested
 * and counted once). Files are named to the kernel through
 * /proc/PID/root/, so processes in containers work. The probes are
 * defined in tracefs, three events holding them all (uprobe_group.h says
 * why not the uprobe PMU), and read per (event, thread, cpu) with
 * inherit, so threads created during the window are followed from their
 * first instruction (uprobe_rec.h).
 *
 * Entry records carry the user registers and 8 KiB of stack (the agent's
 * copy), returns the registers; they are paired per thread in time order
 * (heap_pair.h) and fed to the caller's heap model with rate 1 - every
 * call counts once - so every format works as with the agent. The
 * breaker (heap_breaker.h) ends the window early when the probes would
 * slow the process by more than a few percent; the perf events are
 * closed at once, which takes every probe out of the process, and the
 * tracefs events are removed.
 *
 * Needs CAP_SYS_ADMIN (tracefs's uprobe_events is root's): without it
 * the calls fail with -EPERM after one log line naming the pid and why.
 *
 * Errors: -EPERM (no privilege, or the kernel refused), -ESRCH (the
 * process is gone), -ENOTSUP (no malloc found to probe, no tracefs or
 * no uprobe events in the kernel), -ECANCELED (stop was set), -ENOMEM,
 * -EMFILE and other errnos of perf_event_open.
 */
#ifndef PROFFS_HEAP_UPROBE_H
#define PROFFS_HEAP_UPROBE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct dso_cache;
struct heap_model;
struct proc_maps;
struct profile;

struct heap_uprobe_opts {
	pid_t pid;
	uint64_t window_ms;
	const _Atomic bool *stop;	/* may be NULL */
	/* heap_uprobe_profile() only: */
	struct dso_cache *cache;	/* borrowed */
	uint32_t max_stacks;		/* buckets (memory) */
	bool allocs;			/* default sample type alloc_space */
	const char *why;		/* for the comment: why uprobes */
};

struct heap_uprobe_stats {
	uint64_t hits;		/* probe records, the lost ones included */
	uint64_t lost;		/* records the kernel dropped (full ring) */
	uint64_t samples;	/* allocations counted */
	uint64_t frees;		/* frees passed to the model */
	uint64_t unpaired;	/* returns without their entry */
	unsigned probes;	/* entry and return probes placed */
	unsigned events;	/* perf events opened */
	bool tripped;		/* the breaker ended the window */
	bool exited;		/* the process ended it */
	uint64_t cpu_ns;	/* the process's CPU time in the window */
	uint64_t elapsed_ns;	/* the window, as measured */
};

/* 0 when this daemon may place uprobes, else -EPERM. Logs nothing. */
int heap_uprobe_allowed(void);

/*
 * Measure o->window_ms of pid's allocator calls into m, a model of the
 * same process over maps (both borrowed). Returns 0 with *st filled when
 * the window ended - at its end, by the breaker or by the process's
 * exit - or a negative errno.
 */
int heap_uprobe_run(const struct heap_uprobe_opts *o, struct proc_maps *maps,
		    struct heap_model *m, struct heap_uprobe_stats *st);

/*
 * All of it: a model of its own, the window, and the profile, with pprof
 * comments saying it came from the uprobe fallback (and why, o->why), and
 * when the breaker or the process's exit cut it short. On success *out is
 * a new profile the caller frees.
 */
int heap_uprobe_profile(const struct heap_uprobe_opts *o, struct profile **out,
			struct heap_uprobe_stats *st);

#endif
