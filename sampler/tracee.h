/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tracee.h - what the sampler does to a thread it has seized with ptrace:
 * look for its stop, read its registers and the top of its stack, and why
 * the kernel refused to seize it. Shared by the thread dumps (threads.c)
 * and the agent loader (inject.c).
 *
 * Stateless helpers; the caller must be the tracing thread for the ptrace
 * calls. Errors are negative errno values.
 */
#ifndef PROFFS_TRACEE_H
#define PROFFS_TRACEE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "sampler/unwind/unwind.h"

struct proc_maps;

/*
 * One look at tid's wait status: 0 and *sig (the signal to hand back when
 * it is resumed) once stopped, *event the ptrace event of the stop (0 for
 * a signal-delivery stop); -EAGAIN while running, -ESRCH once it exited.
 */
int tracee_poll_stop(pid_t tid, int *sig, int *event);

/* The registers of a ptrace stop, in the unwinder's numbering. */
void tracee_regs(const struct user_regs_struct *u, struct unwind_regs *r);

/*
 * Copy up to max bytes of pid's memory from sp into buf, clipped to the
 * mapping holding sp (when maps knows it), by proc_mem_copy(): a stack
 * outside the known maps still copies up to its end. Returns the bytes
 * copied.
 */
size_t tracee_copy_stack(pid_t pid, struct proc_maps *maps, uint64_t sp,
			 void *buf, size_t max);

/* TracerPid of pid, or of one of its threads with what = "task/TID"
 * ("." for the process). */
int tracee_tracer_of(pid_t pid, const char *what, pid_t *tracer);

/*
 * The daemon's own ptrace users of one target (a thread dump, the heap
 * agent loader) take turns rather than refuse each other: a tracer that
 * is a thread of this daemon is waited for, up to TRACEE_OWN_WAIT_MS
 * (the loader may wait 10 s for its call into the target to come back,
 * inject_i.h; a dump of a thousand threads takes about a second).
 */
#define TRACEE_OWN_WAIT_MS 12000

/* Whether tid is a thread of this daemon. */
bool tracee_own_thread(pid_t tid);

/*
 * Whether pid is free to be traced: 0 when no one traces it, waiting
 * (at most TRACEE_OWN_WAIT_MS) while its tracer is one of this daemon's
 * threads; -EBUSY, logged with who, when another process traces it (a
 * debugger) or ours did not let go in time; -ESRCH when it is gone;
 * -errno.
 */
int tracee_await_untraced(pid_t pid, const char *who);

/* PTRACE_SEIZE of tid failed with EPERM: -ESRCH when it is gone or
 * exiting (the kernel refuses a zombie with EPERM), -EBUSY when someone
 * else traces it (a debugger), else -EPERM. */
int tracee_seize_refused(pid_t pid, pid_t tid);

/*
 * A thread asleep in the kernel that never stopped: the registers the
 * kernel shows in /proc/PID/task/TID/syscall (the system call number in
 * *sysno, its arguments, sp and pc). -ENODATA when it shows none.
 */
int tracee_syscall_regs(pid_t pid, pid_t tid, long *sysno,
			struct unwind_regs *r);

/*
 * The same from the text of such a file, NUL-terminated: *sysno is -1
 * for a thread off the CPU outside a system call (only sp and pc then).
 * -ENODATA for "running" or anything else.
 */
int tracee_syscall_parse(const char *text, long *sysno,
			 struct unwind_regs *r);

#endif
