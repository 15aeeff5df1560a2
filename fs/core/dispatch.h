/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dispatch.h - a request carried out by its kind's row (kinds.h): which
 * (kind, format) pairs the daemon serves, a finished profile rendered in
 * the format asked, a session's profile taken by the kind's run function.
 *
 * Ownership: a rendered *buf is malloc()ed and the caller's; a run's *out
 * profile is the caller's. Errors: negative errno, -ENOENT for a pair no
 * row serves.
 */
#ifndef PROFFS_DISPATCH_H
#define PROFFS_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/core/request.h"
#include "fs/core/run.h"

struct profile;

/* True when the daemon can produce this kind in this format. */
bool dispatch_supported(enum proffs_kind kind, enum proffs_format fmt);

/* Render p as req asks (req->format, req->sample, req->debug). */
int dispatch_render(const struct profile *p, const struct proffs_request *req,
		    uint8_t **buf, size_t *len);

/* Take the session's profile with the kind's run function, and log the
 * session's line (done, stopped, failed and why). */
int dispatch_run(const struct run_ctx *c, struct profile **out,
		 struct run_outcome *outcome);

#endif
