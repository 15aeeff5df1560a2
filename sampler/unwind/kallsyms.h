/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kallsyms.h - the kernel's function symbols, from /proc/kallsyms, to name
 * the kernel part of a sample's callchain.
 *
 * One table for the daemon: created empty at start (kallsyms_new()),
 * read by the first session that has a kernel frame to name
 * (kallsyms_ready()), then shared by every session; about 120,000 text
 * symbols, 4.5 MiB (its bound: the kernel's symbol count). Sessions
 * hold it while they name frames (kallsyms_hold(), kallsyms_put()); once
 * nobody has held it for the expiry time (KALLSYMS_IDLE_S, the DSO
 * cache's), a sweep lets it go, with the name index of kallsyms_addr(),
 * and the next holder maps it again from the boot's cache (a
 * millisecond; kallsyms_i.h), or reads the file again when there is no
 * cache. Reading costs ~40 ms here, 35 of them in the
 * kernel formatting the file: large reads, hand-parsed lines, no sort
 * when the file is in address order (it is). Only text symbols (t, T, w, W)
 * are kept, sorted by address; a function runs to the next symbol.
 * Modules loaded later are not seen (their frames are named by address)
 * until the table is read again after an expiry.
 *
 * The kernel shows the addresses only to a reader it would let profile
 * the kernel (kptr_restrict 0 and perf_event_paranoid <= 1, or
 * CAP_SYSLOG); to anyone else every address reads 0. Such a table is
 * empty, kallsyms_ready() says false, and kernel frames are left out.
 *
 * A root daemon asks the kernel instead, one address at a time, where it
 * can (kallsyms_set_bpf(), ksym_bpf.h): no table is read or kept then,
 * and a profile's kernel frames cost about a microsecond each. "The
 * table" below is then that namer: held, let go and loaded the same way.
 *
 * Thread-safe: loads, holds and sweeps take the table's lock; a table is
 * only let go while nobody holds it, so lookups, which need a hold, take
 * no lock. Errors: negative errno.
 */
#ifndef PROFFS_KALLSYMS_H
#define PROFFS_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kallsyms;

/* An unheld table goes after this long, as an unused ELF object of the
 * DSO cache does (DSO_CACHE_IDLE_S); kallsyms_set_idle() changes it. */
#define KALLSYMS_IDLE_S	60

/* A table to be read from path (NULL: /proc/kallsyms). -ENOMEM. */
int kallsyms_new(const char *path, struct kallsyms **out);
void kallsyms_free(struct kallsyms *k);

/*
 * Keep this boot's table in dir too (NULL: not), so that the next daemon
 * of this boot reads it back in about a millisecond instead of the ~40 ms
 * the kernel takes to format /proc/kallsyms (kallsyms_i.h). Only for the
 * table of /proc/kallsyms; before the first kallsyms_ready(). -ENOMEM.
 */
int kallsyms_set_cache_dir(struct kallsyms *k, const char *dir);

/*
 * Ask the kernel for names (ksym_bpf.h) rather than read the table,
 * when it allows it: on for the daemon's table of /proc/kallsyms unless
 * PROFFS_NO_BPF is set. Before the first kallsyms_ready().
 */
void kallsyms_set_bpf(struct kallsyms *k, bool on);

/*
 * Read the table if nobody has yet (once: a failed or empty read is not
 * tried again). True when the file gives symbols with their addresses;
 * the table may be let go later all the same: look up only in a held one.
 */
bool kallsyms_ready(struct kallsyms *k);

/*
 * Hold the table for lookups: read, or mapped again after an expiry,
 * when it is not in memory. True when held: then kallsyms_put() once
 * the holder has named its frames (the end of its session). False when
 * the file is of no use (kallsyms_ready() false) or cannot be read now.
 */
bool kallsyms_hold(struct kallsyms *k);
void kallsyms_put(struct kallsyms *k);

/*
 * Let the table and its name index go if nobody has held them for the
 * expiry time: true when it did. Cheap (a lock); called by the
 * daemon's sweeper (fs/core/sweep.h) and from every status read.
 */
bool kallsyms_sweep(struct kallsyms *k);
void kallsyms_set_idle(struct kallsyms *k, uint64_t idle_ms);

struct kallsyms_stats {
	size_t symbols;		/* in memory now; 0 when let go */
	size_t bytes;		/* the table (mapped or not) + name index */
	unsigned holders;	/* sessions holding it */
	uint64_t idle_ms;	/* the expiry */
	uint64_t expired;	/* times let go */
	bool bpf;		/* names asked of the kernel, no table read, at
				 * the last load */
};

/* Sweeps (kallsyms_sweep()), then what the table holds now. */
void kallsyms_stats(struct kallsyms *k, struct kallsyms_stats *st);

/* Whether the table was read (kallsyms_ready() will not read again):
 * never blocks, never reads. */
bool kallsyms_tried(const struct kallsyms *k);

/* Room for any kernel function's name (the kernel's KSYM_NAME_LEN is
 * 512; longer ones are cut). */
#define KALLSYMS_NAME_MAX 512

/*
 * The function holding addr (the symbol at or below it, with *start its
 * address), or NULL below the first symbol or when the table is not
 * ready. The caller holds the table (kallsyms_hold()). The name is in
 * the table, living as long as the hold, or, asked of the kernel, in buf
 * (len bytes; KALLSYMS_NAME_MAX is enough).
 */
const char *kallsyms_name(const struct kallsyms *k, uint64_t addr,
			  char *buf, size_t len, uint64_t *start);

/*
 * The address of the function called name (len bytes, not NUL-ended):
 * 0, or -ENOENT when the table is not ready or has no such name (an
 * alias perf would not print). For frames the kernel names itself
 * (/proc/PID/task/TID/stack). The caller holds the table.
 */
int kallsyms_addr(const struct kallsyms *k, const char *name, size_t len,
		  uint64_t *addr);

/*
 * Whether addr is in a scheduler or lock function (__sched_text_start to
 * _end, __lock_text_start to _end): what the kernel's own stack traces of
 * a sleeping thread leave out (in_sched_functions(), as
 * /proc/PID/task/TID/stack shows them), so that a callchain taken in the
 * scheduler can show the same frames. False when the table is not ready
 * or has no such markers. The caller holds the table.
 */
bool kallsyms_in_sched(const struct kallsyms *k, uint64_t addr);

#endif
