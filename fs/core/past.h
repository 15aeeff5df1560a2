/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * past.h - the daemon's side of the flight recorder (record.h): which
 * requests it answers (`last` windows, base= differences), who may read
 * what it kept, and the profiles it makes of them.
 *
 *   cpu_last30s.pb.gz        the last 30 s, from the recorder, at once
 *   cpu_last10s.svg?base=prev    the last 10 s against the 10 s before
 *   cpu_5s.svg?base=last60s  a fresh window against the recorder's last
 *                            minute, normalised per second
 *
 * Access is that of a live read, decided at the read: a live process by
 * access_check(); an exited one by the same rule over the credentials
 * the recorder saw last (same real, effective and saved uid as the
 * caller, and dumpable; or a privileged caller).
 *
 * Errors are negative errno values; each check gives its reason in words.
 */
#ifndef PROFFS_PAST_H
#define PROFFS_PAST_H

#include <stdbool.h>
#include <sys/types.h>

#include "fs/core/name.h"

struct profile;
struct recorder;

/*
 * Whether the daemon takes the `last` window and base= of req with the
 * recorder rec (NULL without -o record): 0, or -EINVAL and *why.
 */
int past_check(const struct recorder *rec, const struct proffs_request *req,
	       const char **why);

/*
 * Access to pid for a past read, once access_check() said -ENOENT (no
 * such process now): 0 when the recorder kept it and the caller may see
 * it, -EACCES, or -ENOENT.
 */
int past_access(struct recorder *rec, pid_t caller_pid, uid_t caller_uid,
		pid_t pid);

/* Whether a pid directory exists for it only in the recorder; its
 * owner as /proc showed it. */
bool past_known(struct recorder *rec, pid_t pid, uid_t *owner);

/*
 * A `last` window of pid (0: every process uid may profile; uid -1: all)
 * as a new profile in *out.
 */
int past_window(struct recorder *rec, pid_t pid, uid_t uid,
		const struct proffs_request *req, struct profile **out);

/*
 * Turn *cur, the profile of req's window, into the difference with its
 * base (req->base): the base's samples negated, scaled to cur's window
 * and labelled pprof::base=true, added to cur's. *cur is replaced.
 */
int past_diff(struct recorder *rec, pid_t pid, uid_t uid,
	      const struct proffs_request *req, struct profile **cur);

/* For the daemon (daemon.c, fs/fuse/main.c): parse and check the
 * recorder's options (-EINVAL, said on stderr); start it (-errno, logged). */
struct proffs;
struct proffs_opts;
int past_opts(struct proffs_opts *o);
int past_start(struct proffs *fs);

#endif
