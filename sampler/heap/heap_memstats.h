/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_memstats.h - Go's runtime.MemStats for a native process: what
 * /proc says of its memory and what the heap agent counted, as the
 * figures of a profile (profile_add_stat), which heap?debug=1 and
 * memstats.txt print (render/heap_text.h).
 *
 * Go's field names where they mean the same thing; where each comes from
 * (docs/heap.md has the same list, for users):
 *   Mallocs, Frees       the agent's exact counts of calls (heap_counts.h)
 *                        since it was armed
 *   Alloc = HeapAlloc,   estimated from the allocations sampled since the
 *   TotalAlloc,          agent was armed (in use and allocated bytes and
 *   HeapObjects          in-use objects), scaled as Go's heap profile
 *   Sys                  VmData + VmStk of /proc/PID/status: private
 *                        writable mappings and the stack, virtual
 *   HeapSys              [heap] and every anonymous private read-write
 *                        mapping but stacks, virtual (/proc/PID/smaps)
 *   HeapInuse            the resident and swapped pages of those, less
 *                        the lazily freed ones (MADV_FREE)
 *   HeapIdle,            HeapSys - HeapInuse: address space with no
 *   HeapReleased         memory behind it (never touched, or given back)
 *   Stack                in use (resident) / virtual size of [stack] and
 *                        the thread stacks: anonymous read-write mappings
 *                        just above a guard page of at most 64 KiB
 *   MaxRSS               VmHWM of /proc/PID/status
 * A field that cannot be known is left out, and a note says why.
 *
 * Errors: negative errno values (-ESRCH: the process is gone).
 */
#ifndef PROFFS_HEAP_MEMSTATS_H
#define PROFFS_HEAP_MEMSTATS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct profile;

/* What /proc says (bytes). */
struct heap_mem {
	uint64_t sys;			/* VmData + VmStk */
	uint64_t max_rss;		/* VmHWM */
	uint64_t heap_sys, heap_inuse;	/* virtual; resident + swapped */
	uint64_t stack_sys, stack_inuse;
};

int heap_mem_read(pid_t pid, struct heap_mem *m);

/* Everything the figures are made of. */
struct heap_memstats {
	const char *no_agent;	/* NULL, or why the agent's fields are
				 * unknown */
	int counts_err;		/* 0, or why Mallocs and Frees are unknown */
	bool lossy;		/* the counts miss threads that ended */
	uint64_t mallocs, frees;	/* since armed */
	int64_t alloc_bytes, inuse_bytes, inuse_objects;	/* estimated */
	uint64_t rate;		/* the sampling rate now */
	double armed_s;		/* armed that long ago; < 0: at the start
				 * (a preloaded agent) */
	int mem_err;		/* 0, or why /proc's fields are unknown */
	struct heap_mem mem;
};

/* Append the figures and their notes to p. 0 or -ENOMEM. */
int heap_memstats_add(struct profile *p, const struct heap_memstats *ms);

#endif
