/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * taskstat.h - one thread's scheduling state, read from /proc without
 * stopping it: its exact CPU and run-queue times and how often it ran
 * (/proc/PID/task/TID/schedstat), whether it is on a CPU or in which
 * system call it sleeps, with the user sp and pc it will return to
 * (.../syscall), its state letter (.../stat), and, where the daemon may
 * read it, its kernel stack (.../stack).
 *
 * The snapshot of a thread off the CPU (asleep, or runnable and waiting
 * for one) - registers, a copy of the top of its user stack
 * (process_vm_readv), its kernel stack - is taken between two
 * readings of schedstat and of the syscall file; if either changed, the
 * thread ran meanwhile and the copy may mix two stacks: it is thrown
 * away (TASK_RACED). A thread that has not run cannot have written its
 * stack, so a snapshot that passes is consistent.
 *
 * Files are opened on first use and kept open (a pread of an open /proc
 * file costs a third of an open, read and close): struct task_files
 * belongs to its caller, who closes it with task_files_close().
 *
 * Errors: negative errno; -ESRCH (or -ENOENT) once the thread is gone.
 */
#ifndef PROFFS_TASKSTAT_H
#define PROFFS_TASKSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind.h"

struct proc_maps;

struct task_files {
	int sched, sys, stat, kstack;	/* -1: not open */
	bool no_kstack;			/* the kernel refused it once */
};

/* From schedstat: exact, cumulative since the thread started. */
struct task_sched {
	uint64_t run_ns;	/* on a CPU */
	uint64_t wait_ns;	/* runnable, waiting for a CPU */
	uint64_t slices;	/* times it was put on a CPU */
};

enum task_where {
	TASK_RUNNING,	/* on a CPU now: nothing copied */
	TASK_RUNNABLE,	/* ready, waiting for a CPU (state R) */
	TASK_BLOCKED,	/* asleep */
	TASK_RACED,	/* it ran during the snapshot: nothing kept */
};

struct task_snap {
	enum task_where where;
	char state;			/* stat's letter: 'S', 'D', ... */
	long sysno;			/* -1: asleep outside a system call */
	struct unwind_regs regs;	/* sp, pc and the call's arguments */
	size_t stack_len;		/* bytes copied into the buffer */
	size_t kstack_len;		/* text of .../stack, 0 when none */
};

void task_files_init(struct task_files *f);
void task_files_close(struct task_files *f);

int task_read_sched(pid_t pid, pid_t tid, struct task_files *f,
		    struct task_sched *out);

/* Context switches from .../status: voluntary ones end in a sleep,
 * involuntary ones are preemptions. Read afresh each time (rarely). */
struct task_switches {
	uint64_t voluntary, involuntary;
};

int task_read_switches(pid_t pid, pid_t tid, struct task_switches *out);

static inline bool task_sched_equal(const struct task_sched *a,
				    const struct task_sched *b)
{
	return a->run_ns == b->run_ns && a->slices == b->slices;
}

/* The state letter of stat: 'R', 'S', 'D', ... */
int task_read_state(pid_t pid, pid_t tid, struct task_files *f,
		    char *state);

/*
 * Where thread tid is, read just after its schedstat *before: a
 * snapshot when it is off the CPU, its user stack (up to stack_max bytes) into
 * stack, its kernel stack's text (up to kmax bytes, NUL-terminated) into
 * kbuf when kbuf is not NULL and the file can be read.
 */
int task_snapshot(pid_t pid, pid_t tid, struct task_files *f,
		  struct proc_maps *maps, const struct task_sched *before,
		  void *stack, size_t stack_max, char *kbuf, size_t kmax,
		  struct task_snap *out);

#endif
