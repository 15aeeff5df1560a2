/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gone.h - tell the kernel to forget the directories of processes gone.
 *
 * An inode of the mount lives, in the daemon's table (nodes.h), while the
 * kernel holds a lookup count on it, and the kernel keeps the dentries
 * and inodes of /prof/<pid>/ and its files cached long after the
 * process ended: timeouts of 0 make it ask again, not forget. Left to
 * the kernel's memory pressure the table grew by 3.4 MiB over 3,000
 * short-lived processes, and held 10.8 MiB after a 2-hour soak (issue 29:
 * "flat once sessions end"). Every few seconds the gone thread lists the
 * table's /prof/<pid> directories and, for each whose process is gone
 * and not kept by the flight recorder, deletes the entry in the kernel
 * (FUSE's notify_delete, as a network filesystem does for a file removed
 * on the server): the kernel drops the dentries, evicts the inodes, and
 * sends the forgets that free the table's nodes. What is open stays until
 * it is closed.
 *
 * gone_start() owns the thread; gone_stop() ends and frees it (NULL is a
 * no-op). Errors are negative errno values, logged.
 */
#ifndef PROFFS_GONE_H
#define PROFFS_GONE_H

struct fuse_session;
struct gone;
struct proffs;

/* Borrows se and fs, which must outlive the thread (gone_stop()). */
int gone_start(struct fuse_session *se, struct proffs *fs,
	       struct gone **out);
void gone_stop(struct gone *g);

#endif
