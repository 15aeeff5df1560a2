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
 * for one) - the registers of its syscall file, a copy of the top of
 * its user stack (process_vm_readv), its kernel stack - is taken
 * between two readings of schedstat; if it changed, the thread ran
 * meanwhile and the copy may mix two stacks: it is thrown away
 * (TASK_RACED). The kernel counts a thread's slices as it is put on a
 * CPU, so an unchanged count means it has not run since the first
 * reading: it cannot have written its stack or left its system call,
 * and a snapshot that passes is consistent (a second reading of the
 * syscall file would tell nothing more).
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

#include "sampler/unwind/unwind.h"

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
	bool kstack_known;		/* not read: at the known place */
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

/* Of a thread that has not run since it was seen asleep: whether it
 * still sleeps, or was woken and waits for a CPU (the syscall file says
 * "running" for a runnable thread too). */
int task_still_asleep(pid_t pid, pid_t tid, struct task_files *f,
		      bool *asleep);

/* The syscall file alone: *asleep false where it says "running" (on a
 * CPU, or runnable); else *sysno (-1 outside a system call) and the
 * registers it shows: sp, pc and the call's arguments. */
int task_read_syscall(pid_t pid, pid_t tid, struct task_files *f,
		      bool *asleep, long *sysno, struct unwind_regs *regs);

/* The state letter of stat: 'R', 'S', 'D', ... */
int task_read_state(pid_t pid, pid_t tid, struct task_files *f,
		    char *state);

/* Where a thread sleeps: its system call, first argument and user pc.
 * The same place, the same kernel stack (reading it costs the kernel an
 * unwind and a symbol lookup per frame). */
struct task_place {
	long sysno;
	uint64_t arg0, pc;
};

/*
 * Where thread tid is, read just after its schedstat *before: a
 * snapshot when it is off the CPU, its user stack (up to stack_max
 * bytes) into stack, its kernel stack's text (up to kmax bytes,
 * NUL-terminated) into kbuf when kbuf is not NULL, the file can be read
 * and the thread is not at *known (NULL: nowhere known); then
 * out->kstack_known says the kernel stack was not read for that.
 */
int task_snapshot(pid_t pid, pid_t tid, struct task_files *f,
		  struct proc_maps *maps, const struct task_sched *before,
		  void *stack, size_t stack_max, char *kbuf, size_t kmax,
		  const struct task_place *known, struct task_snap *out);

void task_snap_place(const struct task_snap *s, struct task_place *out);

#endif
