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

extern const struct fuse_lowlevel_ops proffs_ops;

#endif
