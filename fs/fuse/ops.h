/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ops.h - the FUSE front end: the low-level handlers main() mounts
 * (fs/fuse/ops.c), each a thin adapter from a FUSE request to the session
 * core (fs/core/), answered with one fuse_reply_* now or, for a parked
 * read or stat, from the registry's callback later. Their userdata is the
 * daemon's state (fs/core/daemon.h).
 */
#ifndef PROFFS_FUSE_OPS_H
#define PROFFS_FUSE_OPS_H

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <sys/types.h>

extern const struct fuse_lowlevel_ops proffs_ops;

struct proffs;

/* Whether /prof/<pid> exists: the process lives (a zombie too), or the
 * flight recorder keeps it after its exit (past.h); *owner its uid. The
 * lookup's rule, and the gone thread's (gone.h). */
bool ops_pid_known(struct proffs *fs, pid_t pid, uid_t *owner);

#endif
