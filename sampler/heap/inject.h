/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * inject.h - call functions inside a running process, with every one of
 * its threads held where calling them is safe (SPEC §3: loading the heap
 * agent with dlopen).
 *
 * inject_run() starts a tracer thread that seizes and interrupts every
 * thread (PTRACE_SEIZE + PTRACE_INTERRUPT, never SIGSTOP), then unwinds
 * each one and asks safepoint.h whether it may hold a lock the call would
 * need, or be halfway through changing the heap (inside the allocator,
 * the loader, fork, thread creation or exit, or the agent itself). Such
 * a thread is let run a moment alone with the other unsafe ones and
 * interrupted again, until none is left (or max_rounds pass: -EAGAIN,
 * logged). Then fn runs on the tracer
 * thread and may call inject_call() any number of times; afterwards every
 * thread is released. The kernel releases them too if the tracer thread
 * (or the whole daemon) dies.
 *
 * A call runs on one interrupted thread (inject_call.c): its registers,
 * extended state and signal mask are saved, and also laid out below its
 * stack as a signal frame; the function is entered with the arguments in
 * registers and the process's own rt_sigreturn stub as its return
 * address, so that the thread is put back where it was when the function
 * returns even if the daemon died meanwhile. The daemon ends the call at
 * that sigreturn and puts everything back itself; a system call the
 * thread was interrupted in restarts as after any signal. The function's
 * return value is lost on the way (the stub's mov $15, %rax): what a call
 * did is told by its system calls (struct inject_seen) or by the memory it
 * changed. Without a stub (opts.restorer 0) a call returns to address 0,
 * and the fault there ends it: a daemon dying then kills the target.
 *
 * Errors: -EBUSY when the process (or a thread) is traced already,
 * -EPERM when ptrace is refused, -ESRCH when it is gone, -EAGAIN when the
 * threads never were all safe at once, -ETIMEDOUT when a call did not
 * come back (logged; its thread is put back), -EIO when a call was
 * stopped by a signal (an abort, a fault: logged as an error; the thread
 * is released with that signal, where it stopped, and every later call
 * of the same inject_run() fails with -EIO), -ENOMEM.
 */
#ifndef PROFFS_INJECT_H
#define PROFFS_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct injector;
struct proc_maps;

struct inject_stats {
	unsigned threads;	/* held */
	unsigned rounds;	/* times unsafe threads were let go on */
	unsigned unsafe;	/* unsafe findings, all rounds */
	uint64_t hold_ns;	/* first stop to last release */
	char why[200];		/* -EAGAIN: why it was refused, else "" */
};

struct inject_opts {
	pid_t pid;
	struct proc_maps *maps;	/* borrowed; reloaded as needed */
	unsigned max_rounds;	/* 0: the default, 200 */
	uint64_t restorer;	/* inject_find_restorer()'s, or 0 */
	struct turns *turns;	/* the daemon's, or NULL (turns.h) */
};

/* What a call's system calls said. */
struct inject_seen {
	long sysno;		/* in: the system call whose result to keep */
	bool called;		/* it was made */
	int64_t ret;		/* what it returned, the last time */
	long failed_sysno;	/* the last one that failed, -1: none */
	int failed_errno;
	long last_sysno;	/* (the one under way) */
};

typedef int (*inject_fn)(struct injector *in, void *arg);

/* Hold pid's threads safe, run fn, release. fn's result is returned. */
int inject_run(const struct inject_opts *o, inject_fn fn, void *arg,
	       struct inject_stats *st);

/*
 * Find the process's rt_sigreturn stub (mov $15, %rax; syscall: glibc's
 * and musl's __restore_rt) in the executable mapping holding in_fn (an
 * address in libc). Reads the target's memory; -ENOENT when not there,
 * -ESRCH when the process has gone.
 */
int inject_find_restorer(pid_t pid, struct proc_maps *maps, uint64_t in_fn,
			 uint64_t *out);

/*
 * Call the function at fn in the target with up to 6 integer arguments.
 * seen (may be NULL) says what its system calls did. Only from inside fn.
 */
int inject_call(struct injector *in, uint64_t fn, const uint64_t *args,
		unsigned nargs, struct inject_seen *seen);

/* Copy len bytes onto the calling thread's stack, below its red zone and
 * below earlier pushes; *addr is where they landed. At most 4 KiB in all. */
int inject_push(struct injector *in, const void *data, size_t len,
		uint64_t *addr);

#endif
