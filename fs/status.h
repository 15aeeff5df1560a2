/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * status.h - /prof/status: the daemon's version, uptime and session
 * counters, as "key: value" lines an operator or a script can read.
 *
 * On success *buf is malloc()ed and owned by the caller; -ENOMEM.
 */
#ifndef PROFFS_STATUS_H
#define PROFFS_STATUS_H

#include <stddef.h>
#include <stdint.h>

struct registry;

int status_text(struct registry *r, uint64_t uptime_s, char **buf,
		size_t *len);

#endif
