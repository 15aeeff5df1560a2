/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * output.h - which (kind, format) pairs the daemon serves, and turning a
 * finished profile into the bytes of one file format.
 *
 * A kind's row (kinds.h) names its renderer for each format it is served
 * in: a name whose kind has no renderer for its format is ENOENT at
 * lookup. The renderers below are the ones rows can name.
 *
 * Ownership: on success *buf is malloc()ed and owned by the caller.
 * Errors: negative errno from the renderer.
 */
#ifndef PROFFS_OUTPUT_H
#define PROFFS_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/core/name.h"

struct profile;

/* True when the daemon can produce this kind in this format. */
bool output_supported(enum proffs_kind kind, enum proffs_format fmt);

/* Render p as req asks (req->format, req->sample, req->debug). */
int output_render(const struct profile *p, const struct proffs_request *req,
		  uint8_t **buf, size_t *len);

/*
 * The renderers (kind_render_fn): 0 and *buf, or a negative errno
 * (-EINVAL for a sample= the profile does not have).
 *   pb_gz, pb      pprof, gzipped or not, with the kind's merge_labels
 *                  merged away
 *   svg            flame graph in the kind's palette (sample=)
 *   txt            the top table (sample=)
 *   heap_txt       the top table; ?debug=1 Go's legacy heap text
 *   folded         Brendan Gregg's folded stacks (sample=)
 *   threads_txt    Go's goroutine dump, debug=1 (grouped) or 2
 *   memstats_txt   Go's runtime.MemStats block alone
 *   trace_json     Chrome trace events of a timeline (trace.h)
 * A differential profile (req->base) gets the differential flame graph
 * (svg) and the table of deltas (txt).
 */
int output_pb_gz(const struct profile *p, const struct proffs_request *req,
		 uint8_t **buf, size_t *len);
int output_pb(const struct profile *p, const struct proffs_request *req,
	      uint8_t **buf, size_t *len);
int output_svg(const struct profile *p, const struct proffs_request *req,
	       uint8_t **buf, size_t *len);
int output_txt(const struct profile *p, const struct proffs_request *req,
	       uint8_t **buf, size_t *len);
int output_heap_txt(const struct profile *p,
		    const struct proffs_request *req, uint8_t **buf,
		    size_t *len);
int output_folded(const struct profile *p, const struct proffs_request *req,
		  uint8_t **buf, size_t *len);
int output_threads_txt(const struct profile *p,
		       const struct proffs_request *req, uint8_t **buf,
		       size_t *len);
int output_memstats_txt(const struct profile *p,
			const struct proffs_request *req, uint8_t **buf,
			size_t *len);
int output_trace_json(const struct profile *p,
		      const struct proffs_request *req, uint8_t **buf,
		      size_t *len);

#endif
