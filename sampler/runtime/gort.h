/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gort.h - a Go program's goroutines, read from outside while it runs:
 * the runtime's list of every g (runtime.allgs), and of each one its id,
 * status, wait reason, the time it has waited since and the context it
 * was switched out with (g.sched: sp, pc, bp), from which its stack is
 * unwound like a thread's. Nothing is stopped: the world keeps running,
 * so every read is checked (status in range, sp inside the goroutine's
 * own stack, pc in Go code) and a g that changes while it is read is
 * dropped and counted, never followed.
 *
 * Where allgs is: the symbol table (runtime.allgs); a program built with
 * -ldflags='-s -w' has none, and its .bss is searched for the slice
 * header whose first g is goroutine 1 with a sane stack, once per
 * program: where it was found is kept with the program's dso, and a
 * later read (of any process of it) looks there first.
 *
 * runtime.g's layout comes from the program's DWARF where it has one
 * (any Go version), else from a table per version (Go 1.19, Debian's,
 * read from the DWARF of a program it built), by the version in
 * .go.buildinfo; another version without DWARF gives -EPROTONOSUPPORT
 * and the caller says so. g.labels (a goroutine's pprof labels) and
 * its map's layout come the same way, for the versions whose labelMap
 * is a map (1.9 to 1.20). The wait reasons are Go's own strings, read
 * from the program (runtime.waitReasonStrings) where its symbol table
 * has them, else the table's.
 *
 * Errors: -ENOENT when the process is not a Go program (or its runtime
 * cannot be found), -EPROTONOSUPPORT for an unknown Go version, -ESRCH
 * when it is gone, -ENOMEM. A g that cannot be read is counted in
 * st->dropped, not an error.
 *
 * Ownership: *out is malloc()ed, freed by the caller with free(); *ctx
 * (the layout and strings the g's refer to) with gort_free(), after the
 * last use of the g's.
 */
#ifndef PROFFS_GORT_H
#define PROFFS_GORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_maps;

/* The runtime's statuses (runtime2.go), the scan bit taken off. */
enum {
	GORT_IDLE = 0, GORT_RUNNABLE = 1, GORT_RUNNING = 2, GORT_SYSCALL = 3,
	GORT_WAITING = 4, GORT_DEAD = 6, GORT_COPYSTACK = 8,
	GORT_PREEMPTED = 9,
};

struct gort_g {
	uint64_t addr;		/* the g's address */
	int64_t goid;
	uint32_t status;	/* GORT_*, without the scan bit */
	uint8_t waitreason;
	int64_t waitsince;	/* the runtime's nanotime(), 0: unknown */
	uint64_t stack_lo, stack_hi;
	uint64_t sp, pc, bp;	/* g.sched: where it was switched out */
	pid_t tid;		/* the thread its m runs on (m.procid): for
				 * a running goroutine or one in a system
				 * call, else 0 */
	bool system;		/* the runtime's own (Go hides it) */
	bool locked;		/* locked to its thread */
	uint64_t gopc;		/* the go statement that started it */
	uint64_t labels;	/* g.labels: its *labelMap, 0: none */
	const void *layout;	/* in the struct gort of its read */
};

struct gort_stats {
	unsigned seen;		/* g's in allgs */
	unsigned dropped;	/* inconsistent when read (racing) */
	unsigned dead;		/* dead or idle: not goroutines */
	unsigned unread;	/* past max: not read */
	unsigned labels_bad;	/* label maps not read consistently (set
				 * by the caller of gort_labels()) */
	bool stripped;		/* allgs found in .bss, not by name */
	bool searched;		/* ... by a search of it, this time */
	bool remembered;	/* ... where an earlier read found it (the
				 * dso keeps it: dso_memo_get()) */
	bool dwarf;		/* the layout read from the DWARF */
	char version[32];	/* "go1.19.8" */
};

/*
 * Read the goroutines of pid (maps: its address space, for the program
 * and its Go table), of the first max g's of allgs (the rest counted in
 * st->unread). Dead and idle g's are left out; system goroutines are
 * kept, marked. *out (*n of them) in allgs order.
 */
struct gort;
int gort_read(pid_t pid, struct proc_maps *maps, size_t max,
	      struct gort **ctx, struct gort_g **out, size_t *n,
	      struct gort_stats *st);
void gort_free(struct gort *c);

/*
 * Whether g (read by gort_read()) is still switched out where it was:
 * re-read after its stack was copied, so that a goroutine that ran
 * meanwhile is dropped rather than shown with a torn stack.
 */
bool gort_unchanged(pid_t pid, const struct gort_g *g);

/*
 * g's pprof labels (runtime/pprof.Do, SetGoroutineLabels), read from its
 * labelMap as golabels.h says: *out NULL when it has none. 0; -ENOENT
 * (the program's labelMap is not known to proffs: a version after 1.20,
 * or before 1.9), or what golabels_read() returns (-EINVAL: it could not
 * be read consistently). Free *out with golabels_free().
 */
struct golabels;
int gort_labels(pid_t pid, const struct gort_g *g, struct golabels **out);

/* Whether pc, in the program, is in code the compiler made (the closure
 * a "go f(x)" statement runs, method wrappers): frames Go's traceback
 * leaves out of a goroutine's stack. */
bool gort_wrapper(const struct gort_g *g, struct proc_maps *maps,
		  uint64_t pc);

/*
 * Where g was started, as Go's "created by" line says it: the function
 * of the go statement, and its file and line. Strings borrowed from the
 * program's Go table (alive while maps holds it). 0, or -ENOENT (the
 * main goroutine, or a pc outside the table).
 */
int gort_created_by(const struct gort_g *g, struct proc_maps *maps,
		    const char **func, const char **file, int *line);

/* The status as Go's traceback prints it: the wait reason of a waiting
 * goroutine ("chan receive"), else "running", "syscall", ... */
const char *gort_status(const struct gort_g *g);

/* Whole minutes g has waited (Go's "N minutes"), now_mono: the clock
 * the runtime's nanotime() reads (CLOCK_MONOTONIC); 0 when unknown. */
int64_t gort_wait_minutes(const struct gort_g *g, uint64_t now_mono);

#endif
