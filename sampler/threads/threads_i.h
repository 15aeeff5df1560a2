/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * threads_i.h - what threads.c and gothreads.c share of one thread dump:
 * the threads read, and a Go program's goroutines. Internal to
 * sampler/threads/.
 */
#ifndef PROFFS_THREADS_I_H
#define PROFFS_THREADS_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/runtime/golabels.h"
#include "sampler/runtime/gort.h"
#include "sampler/threads/threads.h"
#include "sampler/unwind/stackctx.h"
#include "sampler/unwind/unwind.h"

struct kallsyms;
struct profile;

#define MAX_FRAMES 128
#define MAX_KFRAMES 64		/* the kernel's limit is 64 too */
#define RUNTIME_FRAMES 128	/* a stack may gain: Python's frames */
#define KSTACK_MAX 8192		/* of /proc/PID/task/TID/stack text */
#define STACK_MAX (64 * 1024)
#define SPIN_NS 200000ull	/* spin-poll a stop this long, then nap */
#define STOP_WAIT_NS 2000000ull	/* then set the thread aside */
#define LATE_WAIT_NS 50000000ull	/* for all set-aside threads */
#define RUNNABLE_WAIT_NS 500000000ull	/* ... while one of them is runnable */
#define NAME_MAX_LEN 64

struct thread_rec {
	pid_t tid;
	char name[NAME_MAX_LEN];
	char state;		/* /proc letter, read before the stop */
	long sysno;		/* -1: not in a system call */
	bool late;		/* set aside: seized, not yet stopped */
	uint64_t running_ns;	/* last time it was seen not stopped */
	struct unwind_regs regs;
	uint8_t *copy;		/* stack copy to unwind later, or NULL */
	size_t copy_len;
	char *kstack;		/* /proc/.../stack text, or NULL */
	int npcs;
	uint64_t pcs[MAX_FRAMES];
	int gor;		/* the goroutine it runs (d->gor), or -1 */
};

/* A goroutine of a Go program (gothreads.c): parked ones with their own
 * stack, those on a thread with the thread's. */
struct gorec {
	struct gort_g g;
	int thread;		/* in d->t, or -1 */
	struct golabels *labels;	/* its pprof labels, or NULL */
	int npcs;		/* 0 on a thread (its stack is the thread's) */
	uint64_t pcs[MAX_FRAMES];
};

struct dump {
	pid_t pid;
	struct stack_ctx sc;	/* maps, unwinder, symbolizer */
	struct thread_rec *t;
	size_t n, nlate;
	uint8_t *stack;		/* STACK_MAX */
	bool kernel;		/* read kernel stacks (until refused) */
	struct kallsyms *ksyms;		/* their functions' addresses */
	char *kbuf;		/* KSTACK_MAX, when kernel */
	struct threads_stats *st;
	uint64_t first_stop_ns, last_release_ns;
	int ret;
	struct gorec *gor;	/* a Go program's goroutines, or NULL */
	size_t ngor;
	struct gort_stats gst;
	struct gort *gctx;	/* what the goroutines' records refer to */
	unsigned ghidden;	/* the runtime's own, not shown */
	int gret;		/* why they were not read, or 0 */
};

/* After the threads were let go: a Go program's goroutines into d->gor,
 * each parked one unwound from where it was switched out. Not a Go
 * program, or one whose runtime cannot be read: d->gret says why, and 0
 * is returned all the same. 0 or -ENOMEM. */
int gothreads_read(struct dump *d);

/* A thread dump's label keys, in this order in keys[]. */
enum { GK_THREAD, GK_NAME, GK_STATE, GK_SYSCALL, GK_GOROUTINE, GK_WAIT,
       GK_CREATED_BY, GK_CREATED_AT, GK_LOCKED, GK__COUNT };
/* The labels of one sample at most: these, and a goroutine's pprof
 * labels (golabels.h). */
#define GK_LABELS_MAX	(GK__COUNT + GOLABELS_MAX)

/*
 * Goroutine gi's labels (gi < 0: none), appended at labels[*n]:
 * goroutine (its id), wait_minutes (when known and >= 1), created_by
 * and created_at (the go statement's function and file:line),
 * locked_to_thread ("true", runtime.LockOSThread()), then its pprof
 * labels (runtime/pprof.Do's, under their own keys); *state is
 * set to Go's status for it ("chan receive", "running"). 0 or -ENOMEM.
 */
struct pf_label;
int gothreads_labels(const struct dump *d, int gi, struct profile *p,
		     const int64_t *keys, struct pf_label *labels, int *n,
		     const char **state);

/* The samples of the goroutines on no thread of the dump (parked). 0 or
 * -ENOMEM. */
int gothreads_add(struct dump *d, struct profile *p, const int64_t *keys);

/* Free what gothreads_read() made. */
void gothreads_free(struct dump *d);

/* The comment saying what was read of the goroutines, and what not
 * (nothing for a program that is not Go's). 0 or -ENOMEM. */
int gothreads_comment(struct dump *d, struct profile *p);

#endif

