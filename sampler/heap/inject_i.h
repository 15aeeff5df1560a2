/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * inject_i.h - what inject.c (holding a process's threads at a safe point)
 * and inject_call.c (calling functions in it) share: the held threads and
 * the injector. Private to the two.
 */
#ifndef PROFFS_INJECT_I_H
#define PROFFS_INJECT_I_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "sampler/clock.h"

#define STOP_WAIT_NS 100000000ull	/* for every thread to stop */
#define CALL_WAIT_NS 10000000000ull	/* for a call to come back */
#define NDEFER 32			/* signals held back per thread */
#define RED_ZONE 128
#define SCRATCH 4096

struct held {
	pid_t tid;
	bool stopped;		/* in a ptrace stop now */
	bool gone;
	int sig;		/* to hand back on release */
	int event;		/* of the stop: 0 = signal-delivery stop */
	bool unsafe;
	bool let;		/* let run alone this round */
	uint64_t run0_ns;	/* its CPU time when let run */
	bool stepped;		/* ever stepped: traps of ours may follow */
	unsigned ndefer;	/* signals held back while it was unsafe */
	siginfo_t defer[NDEFER];
	uint64_t resume_at;	/* unsafe: where it will be safe again */
	char why[128];		/* unsafe: where it was found */
};

struct injector {
	pid_t pid;
	struct proc_maps *maps;
	struct unwinder *unw;
	struct safepoint *safe;
	unsigned max_rounds;
	uint64_t restorer;	/* the target's rt_sigreturn stub, or 0 */
	struct held *t;
	size_t n, cap;
	uint8_t *stack;
	struct inject_stats *st;
	uint64_t first_stop_ns;
	/* the calling thread and its scratch space */
	struct held *caller;
	uint64_t scratch_used;
	int fn_ret;
	int broken_sig;		/* a call died of it: no more calls */
	int (*fn)(struct injector *, void *);
	void *fn_arg;
};

/*
 * How much of an XSAVE image ptrace gave (x, len bytes: NT_X86_XSTATE,
 * the standard format, XCR0 in its software bytes) a signal frame may
 * hold: up to the end of the last feature it has, without AMX tile data
 * the thread does not use. ptrace gives room for every feature the CPU
 * has (11,008 bytes with AMX), but the kernel takes a frame no larger
 * than the thread's own (2,816 for a thread that never asked for AMX)
 * and restores from a larger one the legacy area only: the vector
 * registers' upper halves were lost when the daemon died in a call
 * (inject_call.c; test_stress.py's fpu pattern saw it).
 */
size_t inject_frame_xstate_len(const uint8_t *x, size_t len);

static inline void nap(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

#endif
