// SPDX-License-Identifier: GPL-2.0-or-later
/* output.c - the renderers of the kinds' rows (kinds.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "render/diff.h"
#include "render/flame.h"
#include "render/folded.h"
#include "render/heap_text.h"
#include "fs/core/kinds.h"
#include "fs/core/output.h"
#include "render/pprof.h"
#include "sampler/model/profile.h"
#include "render/text.h"
#include "render/threads_text.h"
#include "render/trace.h"

/* pprof, with the labels the kind merges away merged (kinds.h). */
static int encode_pb(const struct profile *p,
		     const struct proffs_request *req, bool gzip,
		     uint8_t **buf, size_t *len)
{
	const char *const *labels = kinds_row(req->kind)->merge_labels;
	struct profile *merged;
	int ret;

	if (!labels)
		return pprof_encode(p, gzip, buf, len);
	ret = profile_copy_dropping_labels(p, labels, &merged);
	if (ret)
		return ret;
	ret = pprof_encode(merged, gzip, buf, len);
	profile_free(merged);
	return ret;
}

int output_pb_gz(const struct profile *p, const struct proffs_request *req,
		 uint8_t **buf, size_t *len)
{
	return encode_pb(p, req, true, buf, len);
}

int output_pb(const struct profile *p, const struct proffs_request *req,
	      uint8_t **buf, size_t *len)
{
	return encode_pb(p, req, false, buf, len);
}

/* The sample type a request names (sample=), or -1 for the default;
 * -EINVAL for a name the profile does not have. */
static int sample_index(const struct profile *p,
			const struct proffs_request *req)
{
	int i;

	if (!req->sample[0])
		return -1;
	i = profile_find_sample_type(p, req->sample);
	return i < 0 ? -EINVAL : i;
}

int output_txt(const struct profile *p, const struct proffs_request *req,
	       uint8_t **buf, size_t *len)
{
	int si = sample_index(p, req);

	if (si < -1)
		return si;
	if (req->base != PROFFS_BASE_NONE)	/* deltas */
		return diff_text_render(p, si, (char **)buf, len);
	return text_top_render(p, si, (char **)buf, len);
}

/* heap.txt and allocs.txt: the top table; ?debug=1 Go's legacy text. */
int output_heap_txt(const struct profile *p, const struct proffs_request *req,
		    uint8_t **buf, size_t *len)
{
	if (req->debug >= 1)
		return heap_text_render(p, (char **)buf, len);
	return output_txt(p, req, buf, len);
}

int output_folded(const struct profile *p, const struct proffs_request *req,
		  uint8_t **buf, size_t *len)
{
	int si = sample_index(p, req);

	if (si < -1)
		return si;
	return folded_render(p, si, (char **)buf, len);
}

/* Title: what and whose; subtitle: which values, when, how long, total. */
static void flame_titles(const struct profile *p, int si, char *title,
			 size_t tsize, char *sub, size_t ssize)
{
	const struct pf_header *h = profile_header_const(p);
	const struct pf_value_type *vt;
	char when[64], total[32];
	time_t t = h->time_nanos / 1000000000;
	struct tm tm;

	if (si < 0) {
		size_t def;

		si = folded_sample_index(p, -1, &def) ? 0 : (int)def;
	}
	vt = profile_sample_type(p, si);
	snprintf(title, tsize, "%s profile of pid %d: %s",
		 profile_str(p, h->kind), h->pid, profile_str(p, h->command));
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	text_format_value(profile_total(p, si), profile_str(p, vt->unit),
			  total, sizeof(total));
	snprintf(sub, ssize, "%s (%s), %.3g s window from %s, total %s",
		 profile_str(p, vt->type), profile_str(p, vt->unit),
		 h->duration_nanos / 1e9, when, total);
}

int output_svg(const struct profile *p, const struct proffs_request *req,
	       uint8_t **buf, size_t *len)
{
	char title[512], sub[256];
	struct flame_opts o = { .sample_index = sample_index(p, req) };

	if (o.sample_index < -1)
		return o.sample_index;
	if (!profile_nsample_types(p))
		return -EINVAL;
	flame_titles(p, o.sample_index, title, sizeof(title), sub,
		     sizeof(sub));
	o.title = title;
	o.subtitle = sub;
	o.palette = kinds_row(req->kind)->palette;
	o.diff = req->base != PROFFS_BASE_NONE;
	return flame_render(p, &o, (char **)buf, len);
}

/* goroutine.txt: Go's debug=1 (grouped, the default) or debug=2 (every
 * thread). */
int output_threads_txt(const struct profile *p,
		       const struct proffs_request *req, uint8_t **buf,
		       size_t *len)
{
	return threads_text_render(p, req->debug ? req->debug : 1,
				   (char **)buf, len);
}

/* memstats.txt: Go's runtime.MemStats block alone. */
int output_memstats_txt(const struct profile *p,
			const struct proffs_request *req, uint8_t **buf,
			size_t *len)
{
	(void)req;
	return heap_text_memstats(p, (char **)buf, len);
}

/* trace.json: Chrome trace events, one track per thread. */
int output_trace_json(const struct profile *p,
		      const struct proffs_request *req, uint8_t **buf,
		      size_t *len)
{
	(void)req;
	return trace_render(p, (char **)buf, len);
}

bool output_supported(enum proffs_kind kind, enum proffs_format fmt)
{
	const struct kind_ops *k = kinds_row(kind);

	return k && (unsigned)fmt < PROFFS_FMT__COUNT && k->render[fmt];
}

int output_render(const struct profile *p, const struct proffs_request *req,
		  uint8_t **buf, size_t *len)
{
	if (!output_supported(req->kind, req->format))
		return -ENOENT;
	return kinds_row(req->kind)->render[req->format](p, req, buf, len);
}
