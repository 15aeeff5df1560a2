// SPDX-License-Identifier: GPL-2.0-or-later
/* heap_text.c - Go's legacy heap?debug=1 text, and its MemStats block. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/folded.h"
#include "render/heap_text.h"
#include "sampler/model/profile.h"

enum { ALLOC_OBJ, ALLOC_BYTES, INUSE_OBJ, INUSE_BYTES, NTYPES };

static const char *const type_names[NTYPES] = {
	"alloc_objects", "alloc_space", "inuse_objects", "inuse_space",
};

struct record {
	size_t sample;
	int64_t v[NTYPES];	/* unscaled */
};

/*
 * Go's runtime.scaleHeapSample made n sampled objects of size bytes count
 * n / (1 - exp(-size / rate)); this is the inverse. The size is the
 * sample's "bytes" label (exact: one bucket per size), else the average
 * of the allocated counts (rounded already, so less exact). In-use counts
 * share the factor: both came from the same sampled allocations.
 */
static void unscale(const int64_t scaled[NTYPES], int64_t size,
		    int64_t rate, int64_t out[NTYPES])
{
	double f = 1;

	if (size <= 0 && scaled[ALLOC_OBJ] > 0)
		size = scaled[ALLOC_BYTES] / scaled[ALLOC_OBJ];
	if (rate > 1 && size > 0)
		f = -expm1(-(double)size / (double)rate);
	for (int k = 0; k < NTYPES; k++)
		out[k] = llround((double)scaled[k] * f);
	/* Samples taken at a finer rate than the profile's (a rate=1
	 * session, then the default) unscale to less than one object:
	 * pprof refuses bytes without objects, so keep one. */
	for (int k = ALLOC_OBJ; k <= INUSE_OBJ; k += INUSE_OBJ - ALLOC_OBJ)
		if (!out[k] && out[k + 1])
			out[k] = out[k + 1] > 0 ? 1 : -1;
}

/* The numeric "bytes" label of s, or 0. */
static int64_t size_label(const struct profile *p, const struct pf_sample *s)
{
	for (uint32_t i = 0; i < s->nlabels; i++) {
		const char *key = profile_str(p, s->labels[i].key);

		if (!s->labels[i].str && key && !strcmp(key, "bytes"))
			return s->labels[i].num;
	}
	return 0;
}

static int cmp_inuse(const void *a, const void *b)
{
	const struct record *x = a, *y = b;

	if (x->v[INUSE_BYTES] != y->v[INUSE_BYTES])
		return x->v[INUSE_BYTES] > y->v[INUSE_BYTES] ? -1 : 1;
	return (x->sample > y->sample) - (x->sample < y->sample);
}

static int find_types(const struct profile *p, int idx[NTYPES])
{
	for (int k = 0; k < NTYPES; k++) {
		idx[k] = profile_find_sample_type(p, type_names[k]);
		if (idx[k] < 0)
			return -EINVAL;
	}
	return 0;
}

static void put_record(struct folded_buf *b, const struct profile *p,
		       const struct record *r)
{
	const struct pf_sample *s = profile_sample(p, r->sample);

	folded_buf_printf(b, "%" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64
			  "] @", r->v[INUSE_OBJ], r->v[INUSE_BYTES],
			  r->v[ALLOC_OBJ], r->v[ALLOC_BYTES]);
	for (uint32_t i = 0; i < s->nlocs; i++)
		folded_buf_printf(b, " 0x%" PRIx64,
				  profile_location(p, s->loc_ids[i])->address);
	folded_buf_puts(b, "\n");
	for (uint32_t i = 0; i < s->nlocs; i++)
		folded_put_hash_frames(b, p, profile_location(p,
							      s->loc_ids[i]));
	folded_buf_puts(b, "\n");
}

/* The mappings in /proc/PID/maps form after "MAPPED_LIBRARIES:", which
 * pprof's legacy parser reads to symbolize the addresses. */
static void put_maps(struct folded_buf *b, const struct profile *p)
{
	folded_buf_puts(b, "MAPPED_LIBRARIES:\n");
	for (size_t id = 1; id <= profile_nmappings(p); id++) {
		const struct pf_mapping *m = profile_mapping(p, id);

		folded_buf_printf(b, "%016" PRIx64 "-%016" PRIx64 " r-xp %08"
				  PRIx64 " 00:00 0 %s\n", m->start, m->limit,
				  m->offset, profile_str(p, m->filename));
	}
}

/* The profile's figures as Go prints runtime.MemStats: "# Name = value"
 * under "# runtime.MemStats", then the notes on them. */
static void put_memstats(struct folded_buf *b, const struct profile *p)
{
	folded_buf_puts(b, "# runtime.MemStats\n");
	for (size_t i = 0; i < profile_nstats(p); i++) {
		const struct pf_stat *st = profile_stat(p, i);

		if (st->value)
			folded_buf_printf(b, "# %s = %s\n",
					  profile_str(p, st->name),
					  profile_str(p, st->value));
	}
	for (size_t i = 0; i < profile_nstats(p); i++) {
		const struct pf_stat *st = profile_stat(p, i);

		if (!st->value)
			folded_buf_printf(b, "# proffs: %s\n",
					  profile_str(p, st->name));
	}
}

int heap_text_memstats(const struct profile *p, char **buf, size_t *len)
{
	struct folded_buf b = { 0 };

	if (!profile_nstats(p))
		return -EINVAL;
	put_memstats(&b, p);
	return folded_buf_finish(&b, buf, len);
}

int heap_text_render(const struct profile *p, char **buf, size_t *len)
{
	size_t n = profile_nsamples(p);
	int64_t rate = profile_header_const(p)->period, tot[NTYPES] = { 0 };
	struct folded_buf b = { 0 };
	struct record *r;
	int idx[NTYPES];

	if (find_types(p, idx))
		return -EINVAL;
	r = calloc(n ? n : 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct pf_sample *s = profile_sample(p, i);
		int64_t scaled[NTYPES];

		for (int k = 0; k < NTYPES; k++)
			scaled[k] = s->values[idx[k]];
		r[i].sample = i;
		unscale(scaled, size_label(p, s), rate, r[i].v);
		for (int k = 0; k < NTYPES; k++)
			tot[k] += r[i].v[k];
	}
	qsort(r, n, sizeof(*r), cmp_inuse);
	folded_buf_printf(&b, "heap profile: %" PRId64 ": %" PRId64 " [%" PRId64
			  ": %" PRId64 "] @ heap/%" PRId64 "\n",
			  tot[INUSE_OBJ], tot[INUSE_BYTES], tot[ALLOC_OBJ],
			  tot[ALLOC_BYTES], 2 * (rate > 0 ? rate : 1));
	for (size_t i = 0; i < n; i++)
		put_record(&b, p, &r[i]);
	put_maps(&b, p);
	if (profile_nstats(p)) {
		folded_buf_puts(&b, "\n");
		put_memstats(&b, p);
	}
	free(r);
	return folded_buf_finish(&b, buf, len);
}
