/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * output.h - which (kind, format) pairs the daemon serves, and turning a
 * finished profile into the bytes of one file format.
 *
 * The table in output.c is the one place a new renderer or a new kind is
 * switched on: a name whose kind or format has no entry is ENOENT at lookup.
 *
 * Ownership: on success *buf is malloc()ed and owned by the caller.
 * Errors: negative errno from the renderer.
 */
#ifndef PROFFS_OUTPUT_H
#define PROFFS_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "name.h"

struct profile;

/* True when the daemon can produce this kind in this format. */
bool output_supported(enum proffs_kind kind, enum proffs_format fmt);

/* Render p as req asks (req->format, req->sample, req->debug). */
int output_render(const struct profile *p, const struct proffs_request *req,
		  uint8_t **buf, size_t *len);

#endif
