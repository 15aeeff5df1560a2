/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * threads.h - where every thread of a process is right now: a snapshot of
 * its stacks, with thread names, states and the syscall each one sits in
 * (the goroutine / threads kind; SPEC §3).
 *
 * Threads are stopped one at a time, each only while its registers and the
 * top of its stack are copied: PTRACE_SEIZE, PTRACE_INTERRUPT, wait for the
 * stop, PTRACE_GETREGS, process_vm_readv of up to 64 KiB from RSP (clipped
 * to the stack mapping), PTRACE_DETACH. SEIZE never sends SIGSTOP, so no
 * thread is ever left in group-stop. The copy is unwound afterwards with
 * the CPU sampler's unwinder (unwind.h), and symbolized once all threads
 * are released.
 *
 * The ptrace work runs on a short-lived thread of its own: the kernel
 * detaches every tracee when its tracer thread exits, so a thread that
 * never reaches its stop (an uninterruptible sleep) cannot stay attached,
 * and a SIGKILL of the whole daemon releases everything too. Such a thread
 * is still reported, unwound from the sp and pc of /proc/.../syscall when
 * the kernel gives them, else with a single "[not stopped]" frame.
 *
 * A thread blocked in a system call gets its kernel stack above the user
 * one, "[k] name" frames (kframes.h), where the daemon may read
 * /proc/PID/task/TID/stack (root: CAP_SYS_ADMIN); elsewhere nothing
 * changes. It is read before the thread is stopped (the stop ends the
 * wait), and kept only if the stop then finds the thread interrupted in
 * a system call, as it was.
 *
 * The profile: sample type goroutine/count, period type goroutine/count,
 * period 1, kind "goroutine"; one sample (value 1) per thread, leaf first,
 * with string labels
 *   thread       tid, decimal
 *   thread_name  comm
 *   state        from /proc before the stop: "running", "sleeping",
 *                "disk sleep", "stopped", ... (the kernel's names)
 *   syscall      the system call the thread is in ("futex", "read",
 *                "clock_nanosleep", "restart_syscall" after a timed sleep
 *                was interrupted once, "syscall 123" when not in the
 *                table), "" when it is not in one
 * A Go program's goroutines (gothreads.c, gort.h), read after every
 * thread was let go, without stopping anything: a thread running one
 * carries its labels too, and state is then Go's status for it; each
 * parked goroutine is a sample of its own, unwound from where it was
 * switched out, with no thread labels:
 *   goroutine    its id, decimal
 *   state        Go's status or wait reason ("chan receive", "running")
 *   wait_minutes how long it has waited, when the runtime knows, >= 1
 *   created_by   the function of the go statement that started it
 *   created_at   that statement's file:line
 *   locked_to_thread  "true" for one locked to its thread
 *                (runtime.LockOSThread)
 * and a comment "goroutines: ..." says how many were read, hidden (the
 * runtime's own) and dropped (they moved while read), or why none were.
 * The profile is not merged by stack: threads_text.h and the pprof writer
 * group as their format wants.
 *
 * Blocking, on the calling thread (which waits for the ptrace thread).
 * Not to be called twice at once on the same target: the second call sees
 * the first one's tracer and returns -EBUSY.
 *
 * Errors: -EBUSY when the target (or one of its threads) is traced already
 * (a debugger, strace) - found before anything is stopped, or on the first
 * such thread; -ESRCH when the process is gone; -EPERM when ptrace is not
 * allowed (including the caller's own process); -ENOMEM; -EAGAIN when the
 * ptrace thread cannot be created. Threads that exit mid-dump are skipped
 * (counted in stats), not an error.
 *
 * Ownership: on success *out is a new profile, freed with profile_free().
 */
#ifndef PROFFS_THREADS_H
#define PROFFS_THREADS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct dso_cache;
struct profile;

struct kallsyms;

struct threads_opts {
	pid_t pid;
	struct dso_cache *cache;	/* shared across sessions */
	struct turns *turns;		/* the daemon's, or NULL (turns.h) */
	bool kernel;			/* kernel frames where readable */
	struct kallsyms *ksyms;		/* NULL, or the table that gives
					 * kernel frames their addresses
					 * (read, once, after the threads
					 * are released; else 0) */
};

struct threads_stats {
	unsigned threads;	/* threads in the profile */
	unsigned skipped;	/* exited (or zombie) before they were read */
	unsigned unstopped;	/* reported without ever stopping */
	/*
	 * Hold times are upper bounds: from the last wait that still found
	 * the thread running to the return of PTRACE_DETACH. On a loaded
	 * machine the maximum is the dumper losing its CPU mid-copy.
	 */
	uint64_t max_hold_ns;	/* longest time a thread was held stopped */
	pid_t max_hold_tid;
	uint64_t sum_hold_ns;	/* over the threads that stopped */
	uint64_t stop_ns;	/* first stop to last release */
	uint64_t total_ns;	/* the whole call, symbolization included */
};

int threads_profile(const struct threads_opts *o, struct profile **out,
		    struct threads_stats *st);

#endif
