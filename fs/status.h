/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * status.h - /prof/status: the daemon's version, uptime, session counters
 * and the requests it refused, as "key: value" lines an operator or a
 * script can read.
 *
 * Refusals are counted by the FUSE handlers (status_refused()), by errno:
 * every open and every change the daemon answered with an error - the
 * ones each logged with a notice line - whereas errors_<kind> counts
 * sessions that started and failed. Counting is lock-free and may be
 * called from any thread.
 *
 * On success *buf is malloc()ed and owned by the caller; -ENOMEM.
 */
#ifndef PROFFS_STATUS_H
#define PROFFS_STATUS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct registry;

/* The errnos counted by name; any other counts as refused_other. */
#define STATUS_REFUSALS(X) X(EACCES) X(EBUSY) X(EINVAL) X(ENOENT) \
	X(EPERM) X(EROFS)

struct status_refusals {
#define STATUS_FIELD(e) _Atomic unsigned long long e##_n;
	STATUS_REFUSALS(STATUS_FIELD)
#undef STATUS_FIELD
	_Atomic unsigned long long other_n;
};

/* Count one request refused with err (positive or negative errno). */
void status_refused(struct status_refusals *c, int err);

int status_text(struct registry *r, const struct status_refusals *c,
		uint64_t uptime_s, char **buf, size_t *len);

#endif
