/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kframes.h - kernel frames in a profile: one location per kernel
 * function, named "[k] NAME" (system_name NAME, as the kernel calls it),
 * so that every format shows them above the user frames as perf marks
 * them, in one mapping named as perf names it, "[kernel.kallsyms]", that
 * says its functions are known (pprof does not try to symbolize it). A
 * location's address is its function's, or 0 when only the name is
 * known.
 *
 * Two sources name them: a sample's kernel callchain, addresses named
 * through the shared kallsyms table (kframes_pc()); and a thread's
 * /proc/PID/task/TID/stack, which names them itself (kframes_named()).
 *
 * Owned by one session; the profile and the table are borrowed, the table
 * held (kallsyms_hold()) from the first frame it names to kframes_free().
 * Not thread-safe. Errors: -ENOMEM.
 */
#ifndef PROFFS_KFRAMES_H
#define PROFFS_KFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kallsyms;
struct kframes;
struct profile;

/* ksyms may be NULL when only named frames are added. */
int kframes_new(struct profile *p, struct kallsyms *ksyms,
		struct kframes **out);
void kframes_free(struct kframes *kf);

/*
 * The location of the kernel function holding pc (a callchain entry:
 * the leaf's pc, or a return address, which leaf says: a return address
 * is looked up one byte back, in its call). An address kallsyms does not
 * know is named by its hex value.
 */
int kframes_pc(struct kframes *kf, uint64_t pc, bool leaf, uint64_t *loc);

/* The location of the kernel function called name (len bytes). */
int kframes_named(struct kframes *kf, const char *name, size_t len,
		  uint64_t *loc);

/*
 * The functions of a /proc/PID/task/TID/stack text ("[<0>] name+0x1/0x2"
 * lines, innermost first), as locations: up to max into locs, *n of them.
 */
int kframes_proc_stack(struct kframes *kf, const char *text, uint64_t *locs,
		       int max, int *n);

#endif
