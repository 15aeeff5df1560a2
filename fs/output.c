// SPDX-License-Identifier: GPL-2.0-or-later
/* output.c - the (kind, format) -> renderer table. */
#include <errno.h>

#include "output.h"
#include "pprof.h"

typedef int (*render_fn)(const struct profile *p,
			 const struct proffs_request *req, uint8_t **buf,
			 size_t *len);

static int render_pb_gz(const struct profile *p,
			const struct proffs_request *req, uint8_t **buf,
			size_t *len)
{
	(void)req;
	return pprof_encode(p, true, buf, len);
}

static int render_pb(const struct profile *p,
		     const struct proffs_request *req, uint8_t **buf,
		     size_t *len)
{
	(void)req;
	return pprof_encode(p, false, buf, len);
}

/* renderers[kind][format]; NULL = not served (ENOENT at lookup). */
static const render_fn renderers[PROFFS_KIND__COUNT][PROFFS_FMT__COUNT] = {
	[PROFFS_KIND_CPU] = {
		[PROFFS_FMT_PB_GZ] = render_pb_gz,
		[PROFFS_FMT_PB] = render_pb,
	},
};

bool output_supported(enum proffs_kind kind, enum proffs_format fmt)
{
	return kind < PROFFS_KIND__COUNT && fmt < PROFFS_FMT__COUNT &&
	       renderers[kind][fmt];
}

int output_render(const struct profile *p, const struct proffs_request *req,
		  uint8_t **buf, size_t *len)
{
	if (!output_supported(req->kind, req->format))
		return -ENOENT;
	return renderers[req->kind][req->format](p, req, buf, len);
}
