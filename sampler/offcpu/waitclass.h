/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * waitclass.h - what a blocked thread waits for, as the block and mutex
 * kinds count it (docs/offcpu.md has the rules):
 *
 *   WAIT_LOCK   a futex wait under pthread_mutex_*, pthread_rwlock_*,
 *               glibc's internal locks (__lll_lock_wait*), C11 mtx_*,
 *               or a priority-inheritance futex (FUTEX_LOCK_PI): mutex
 *               and block
 *   WAIT_SYNC   any other futex wait - condition variables, semaphores,
 *               barriers, joins, once, and futexes no libc function
 *               names (a runtime's own locks): block only
 *   WAIT_OTHER  not synchronization (sleep, I/O, poll): wall only
 *
 * The frames decide, leaf first: the first one inside a function of
 * either list gives the class (a condition wait that is re-taking its
 * mutex is inside __lll_lock_wait, called from pthread_cond_wait: a
 * lock wait). Functions are matched by address, every alias of each
 * name counted (dso_symbol_ranges()), never by the name a frame was
 * symbolized to.
 *
 * One per session; the maps are borrowed. Ranges are computed once per
 * object met. Not thread-safe.
 */
#ifndef PROFFS_WAITCLASS_H
#define PROFFS_WAITCLASS_H

#include <stdint.h>

struct proc_maps;
struct unwind_regs;
struct waitclass;

enum wait_class {
	WAIT_OTHER,
	WAIT_SYNC,
	WAIT_LOCK,
};

int waitclass_new(struct proc_maps *maps, struct waitclass **out);
void waitclass_free(struct waitclass *w);

/*
 * The class of a thread asleep in system call sysno (-1: none) with the
 * argument registers regs (the futex op is the second), and the stack
 * pcs[0..n), leaf first.
 */
enum wait_class waitclass_of(struct waitclass *w, long sysno,
			     const struct unwind_regs *regs,
			     const uint64_t *pcs, int n);

/*
 * The class the frames alone give, for a sleep whose system call is not
 * known: the first frame inside a function of either list decides (a
 * thread asleep inside pthread_mutex_lock can only be in a futex wait);
 * under none, WAIT_OTHER.
 */
enum wait_class waitclass_of_frames(struct waitclass *w, const uint64_t *pcs,
				    int n);

#endif
