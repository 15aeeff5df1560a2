/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * turns.h - whose turn it is to ptrace a target. The daemon's thread
 * dumps (threads.c) and its heap agent loader (inject.c) each seize a
 * target's threads; one meeting the other mid-way found a thread "traced
 * by another process" and gave up with EBUSY. Each now takes the
 * target's turn first and waits for it, so the two follow each other.
 *
 * One table per daemon, made by fs and shared by every session (it locks
 * itself); a NULL table makes every turn free at once (unit tests and
 * tools that run one thing). Errors are negative errno values.
 */
#ifndef PROFFS_TURNS_H
#define PROFFS_TURNS_H

#include <sys/types.h>

struct turns;

int turns_new(struct turns **out);
void turns_free(struct turns *t);	/* NULL is a no-op */

/*
 * Take pid's turn, waiting up to wait_ms for whoever holds it: 0, or
 * -EBUSY when it was not given back in time (logged). Give it back with
 * turns_give() from the same session.
 */
int turns_take(struct turns *t, pid_t pid, unsigned wait_ms);
void turns_give(struct turns *t, pid_t pid);

#endif
