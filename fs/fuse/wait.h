/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wait.h - FUSE reads and stats of a profile as registry waits
 * (fs/core/registry.h): one whose result is not ready is parked without
 * holding a FUSE worker thread, and answered with exactly one fuse_reply_*
 * when the session is done; an interrupted request cancels its wait and
 * is answered EINTR at once.
 */
#ifndef PROFFS_FUSE_WAIT_H
#define PROFFS_FUSE_WAIT_H

#include <sys/stat.h>
#include <fuse_lowlevel.h>

struct proffs_request;
struct reg_handle;
struct reg_target;
struct registry;

/* A read of size bytes at off of h's result. */
void fuse_wait_read(fuse_req_t req, struct reg_handle *h, size_t size,
		    off_t off);

/* An fstat of an open handle: st with the size of h's own result. */
void fuse_wait_fstat(fuse_req_t req, struct reg_handle *h,
		     const struct stat *st);

/* A stat of a profile file (t, preq): st with the size of its result,
 * sampled for the purpose when no finished one is cached. */
void fuse_wait_stat(fuse_req_t req, struct registry *r,
		    const struct reg_target *t,
		    const struct proffs_request *preq, const struct stat *st);

#endif
