// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pprof.c - profile model <-> pprof Profile protobuf (protobuf-c), gzip
 * with libdeflate where it was built with it, else zlib.
 *
 * Encoding builds the generated message with pointers into one arena of
 * sub-messages, packs it, and frees the arena: the model's arrays are
 * copied (protobuf-c wants its own element types), never kept.
 *
 * Decoding interns the input's string table first, in order, then adds
 * mappings, functions, locations and samples through the profile API, so
 * our own output decodes to a model that re-encodes to the same bytes.
 * Ids must be 1..n (as every pprof writer numbers them); anything else,
 * and any index out of range, is -EINVAL.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#ifdef HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "render/pprof.h"
#include "sampler/model/profile.h"
#include "render/profile.pb-c.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

/* Everything one encoding allocates, freed together. */
struct arena {
	void **ptrs;
	size_t n, cap;
	bool failed;
};

static void *arena_alloc(struct arena *a, size_t size)
{
	void *p;

	if (a->failed)
		return NULL;
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 64;
		void **np = realloc(a->ptrs, cap * sizeof(*np));

		if (!np) {
			a->failed = true;
			return NULL;
		}
		a->ptrs = np;
		a->cap = cap;
	}
	p = calloc(1, size ? size : 1);
	if (!p) {
		a->failed = true;
		return NULL;
	}
	a->ptrs[a->n++] = p;
	return p;
}

static void arena_free(struct arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->ptrs[i]);
	free(a->ptrs);
}

static PbValueType *value_type(struct arena *a, const struct pf_value_type *v)
{
	PbValueType *pb = arena_alloc(a, sizeof(*pb));

	if (!pb)
		return NULL;
	perftools__profiles__value_type__init(pb);
	pb->type = v->type;
	pb->unit = v->unit;
	return pb;
}

static PbSample *sample(struct arena *a, const struct pf_sample *s,
			size_t nvalues)
{
	PbSample *pb = arena_alloc(a, sizeof(*pb));

	if (!pb)
		return NULL;
	perftools__profiles__sample__init(pb);
	pb->n_location_id = s->nlocs;
	pb->location_id = arena_alloc(a, s->nlocs * sizeof(uint64_t));
	pb->n_value = nvalues;
	pb->value = arena_alloc(a, nvalues * sizeof(int64_t));
	pb->n_label = s->nlabels;
	pb->label = arena_alloc(a, s->nlabels * sizeof(PbLabel *));
	if (!pb->location_id || !pb->value || !pb->label)
		return NULL;
	memcpy(pb->location_id, s->loc_ids, s->nlocs * sizeof(uint64_t));
	memcpy(pb->value, s->values, nvalues * sizeof(int64_t));
	for (uint32_t i = 0; i < s->nlabels; i++) {
		PbLabel *l = arena_alloc(a, sizeof(*l));

		if (!l)
			return NULL;
		perftools__profiles__label__init(l);
		l->key = s->labels[i].key;
		l->str = s->labels[i].str;
		l->num = s->labels[i].num;
		l->num_unit = s->labels[i].num_unit;
		pb->label[i] = l;
	}
	return pb;
}

static PbMapping *mapping(struct arena *a, const struct pf_mapping *m)
{
	PbMapping *pb = arena_alloc(a, sizeof(*pb));

	if (!pb)
		return NULL;
	perftools__profiles__mapping__init(pb);
	pb->id = m->id;
	pb->memory_start = m->start;
	pb->memory_limit = m->limit;
	pb->file_offset = m->offset;
	pb->filename = m->filename;
	pb->build_id = m->build_id;
	pb->has_functions = m->has_functions;
	pb->has_filenames = m->has_filenames;
	pb->has_line_numbers = m->has_line_numbers;
	pb->has_inline_frames = m->has_inline_frames;
	return pb;
}

static PbLocation *location(struct arena *a, const struct pf_location *l)
{
	PbLocation *pb = arena_alloc(a, sizeof(*pb));

	if (!pb)
		return NULL;
	perftools__profiles__location__init(pb);
	pb->id = l->id;
	pb->mapping_id = l->mapping_id;
	pb->address = l->address;
	pb->n_line = l->nlines;
	pb->line = arena_alloc(a, l->nlines * sizeof(PbLine *));
	if (!pb->line)
		return NULL;
	for (uint32_t i = 0; i < l->nlines; i++) {
		PbLine *ln = arena_alloc(a, sizeof(*ln));

		if (!ln)
			return NULL;
		perftools__profiles__line__init(ln);
		ln->function_id = l->lines[i].function_id;
		ln->line = l->lines[i].line;
		pb->line[i] = ln;
	}
	return pb;
}

static PbFunction *function(struct arena *a, const struct pf_function *f)
{
	PbFunction *pb = arena_alloc(a, sizeof(*pb));

	if (!pb)
		return NULL;
	perftools__profiles__function__init(pb);
	pb->id = f->id;
	pb->name = f->name;
	pb->system_name = f->system_name;
	pb->filename = f->filename;
	pb->start_line = f->start_line;
	return pb;
}

/* Allocate a table of n pointers in pb and fill it with make(i). */
#define FILL(a, field, count, expr) do { \
		pb->n_##field = (count); \
		pb->field = arena_alloc((a), (count) * sizeof(*pb->field)); \
		for (size_t i = 0; pb->field && i < (count); i++) \
			if (!(pb->field[i] = (expr))) \
				break; \
	} while (0)

static int build(const struct profile *p, struct arena *a, PbProfile *pb)
{
	const struct pf_header *h = profile_header_const(p);
	size_t ntypes = profile_nsample_types(p);

	perftools__profiles__profile__init(pb);
	FILL(a, sample_type, ntypes, value_type(a, profile_sample_type(p, i)));
	FILL(a, sample, profile_nsamples(p),
	     sample(a, profile_sample(p, i), ntypes));
	FILL(a, mapping, profile_nmappings(p),
	     mapping(a, profile_mapping(p, i + 1)));
	FILL(a, location, profile_nlocations(p),
	     location(a, profile_location(p, i + 1)));
	FILL(a, function, profile_nfunctions(p),
	     function(a, profile_function(p, i + 1)));
	pb->n_string_table = profile_nstrings(p);
	pb->string_table = arena_alloc(a, pb->n_string_table * sizeof(char *));
	for (size_t i = 0; pb->string_table && i < pb->n_string_table; i++)
		pb->string_table[i] = (char *)profile_str(p, i);
	pb->n_comment = profile_ncomments(p);
	pb->comment = arena_alloc(a, pb->n_comment * sizeof(int64_t));
	for (size_t i = 0; pb->comment && i < pb->n_comment; i++)
		pb->comment[i] = profile_comment(p, i);
	pb->time_nanos = h->time_nanos;
	pb->duration_nanos = h->duration_nanos;
	pb->period = h->period;
	pb->default_sample_type = h->default_sample_type;
	pb->period_type = arena_alloc(a, sizeof(*pb->period_type));
	if (pb->period_type) {
		perftools__profiles__value_type__init(pb->period_type);
		pb->period_type->type = h->period_type.type;
		pb->period_type->unit = h->period_type.unit;
	}
	return a->failed ? -ENOMEM : 0;
}

static bool str_ok(const struct profile *p, int64_t i)
{
	return profile_str(p, i) != NULL;
}

static bool value_type_ok(const struct profile *p,
			  const struct pf_value_type *vt)
{
	return str_ok(p, vt->type) && str_ok(p, vt->unit);
}

/*
 * pprof's validity rules (profile.CheckValid and its string lookups).
 * The model enforces most of them as it is built; what a writer sets
 * directly (the header) is checked here, the rest is cheap insurance.
 */
static int validate(const struct profile *p)
{
	const struct pf_header *h = profile_header_const(p);
	size_t ntypes = profile_nsample_types(p);

	if (!profile_nstrings(p) || strcmp(profile_str(p, 0), "") ||
	    (!ntypes && profile_nsamples(p)) ||
	    !value_type_ok(p, &h->period_type) ||
	    !str_ok(p, h->default_sample_type))
		return -EINVAL;
	for (size_t i = 0; i < ntypes; i++)
		if (!value_type_ok(p, profile_sample_type(p, i)))
			return -EINVAL;
	for (size_t i = 0; i < profile_ncomments(p); i++)
		if (!str_ok(p, profile_comment(p, i)))
			return -EINVAL;
	for (size_t i = 0; i < profile_nsamples(p); i++) {
		const struct pf_sample *s = profile_sample(p, i);

		for (uint32_t k = 0; k < s->nlocs; k++)
			if (!profile_location(p, s->loc_ids[k]))
				return -EINVAL;
	}
	for (size_t i = 1; i <= profile_nlocations(p); i++) {
		const struct pf_location *l = profile_location(p, i);

		if (l->mapping_id && !profile_mapping(p, l->mapping_id))
			return -EINVAL;
		for (uint32_t k = 0; k < l->nlines; k++)
			if (!profile_function(p, l->lines[k].function_id))
				return -EINVAL;
	}
	return 0;
}

/*
 * Fastest compression, as Go's runtime/pprof: the level's default costs a
 * deep-stacked profile 3x the time for 10% fewer bytes. libdeflate's
 * level 1 takes half of zlib's time for 3% fewer bytes (a warm cc1
 * window's 0.97 MB: 3.8 against 7.9 ms, of the ~100 ms the daemon spends
 * on that window's 10,000 samples); it wants the whole input at once,
 * and the whole message is in hand.
 */
#ifdef HAVE_LIBDEFLATE
static int gzip_buf(const uint8_t *in, size_t len, uint8_t **out,
		    size_t *out_len)
{
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(1);
	uint8_t *buf;
	size_t cap, n;

	if (!c)
		return -ENOMEM;
	cap = libdeflate_gzip_compress_bound(c, len);
	buf = malloc(cap);
	if (!buf) {
		libdeflate_free_compressor(c);
		return -ENOMEM;
	}
	n = libdeflate_gzip_compress(c, in, len, buf, cap);
	libdeflate_free_compressor(c);
	if (!n) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*out_len = n;
	return 0;
}
#else
static int gzip_buf(const uint8_t *in, size_t len, uint8_t **out,
		    size_t *out_len)
{
	z_stream z = { 0 };
	uint8_t *buf;
	size_t cap;

	if (len > UINT_MAX)
		return -EIO;
	/* 15 + 16: a gzip header, which is what pprof sniffs for. */
	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -EIO;
	cap = deflateBound(&z, len) + 32;
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = len;
	z.next_out = buf;
	z.avail_out = cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(buf);
		return -EIO;
	}
	*out_len = z.total_out;
	deflateEnd(&z);
	*out = buf;
	return 0;
}
#endif

int pprof_encode(const struct profile *p, bool gzip, uint8_t **buf,
		 size_t *len)
{
	struct arena a = { 0 };
	PbProfile pb;
	uint8_t *raw;
	size_t raw_len;
	int ret;

	ret = validate(p);
	if (!ret)
		ret = build(p, &a, &pb);
	if (ret) {
		arena_free(&a);
		return ret;
	}
	raw_len = perftools__profiles__profile__get_packed_size(&pb);
	raw = malloc(raw_len ? raw_len : 1);
	if (!raw) {
		arena_free(&a);
		return -ENOMEM;
	}
	perftools__profiles__profile__pack(&pb, raw);
	arena_free(&a);
	if (!gzip) {
		*buf = raw;
		*len = raw_len;
		return 0;
	}
	ret = gzip_buf(raw, raw_len, buf, len);
	free(raw);
	return ret;
}

/* Decoding: for tests and fuzzing; every index is checked. */

/* Larger output is refused: decoding is for tests and fuzzing. */
#define GUNZIP_MAX (256u << 20)

static int gunzip_buf(const uint8_t *in, size_t len, uint8_t **out,
		      size_t *out_len)
{
	z_stream z = { 0 };
	size_t cap = 0, n = 0;
	uint8_t *buf = NULL;
	int zr = Z_OK;

	if (len > UINT_MAX || inflateInit2(&z, 15 + 16) != Z_OK)
		return -EINVAL;
	z.next_in = (Bytef *)in;
	z.avail_in = len;
	while (zr == Z_OK) {
		uint8_t *nb;

		if (n == cap) {
			cap = cap ? 2 * cap : 4 * len + 1024;
			if (cap > GUNZIP_MAX)
				cap = GUNZIP_MAX;
			if (n == cap) {
				zr = Z_DATA_ERROR;
				break;
			}
			nb = realloc(buf, cap);
			if (!nb) {
				zr = Z_MEM_ERROR;
				break;
			}
			buf = nb;
		}
		z.next_out = buf + n;
		z.avail_out = cap - n;
		zr = inflate(&z, Z_NO_FLUSH);
		n = cap - z.avail_out;
	}
	inflateEnd(&z);
	if (zr != Z_STREAM_END) {
		free(buf);
		return zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
	}
	*out = buf;
	*out_len = n;
	return 0;
}

struct idmap {
	uint64_t *v;
	size_t n;
};

static bool map_id(const struct idmap *m, uint64_t id, uint64_t *out)
{
	if (!id || id > m->n || !m->v[id - 1])
		return false;
	*out = m->v[id - 1];
	return true;
}

/* Old ids are arbitrary; map those that are 1..n (pprof writers use
 * them), refuse others. */
static int idmap_init(struct idmap *m, size_t n)
{
	m->n = n;
	m->v = calloc(n ? n : 1, sizeof(*m->v));
	return m->v ? 0 : -ENOMEM;
}

static const char *str_at(const PbProfile *pb, int64_t i)
{
	return i >= 0 && (size_t)i < pb->n_string_table ? pb->string_table[i]
							: NULL;
}

#define STR_OR_FAIL(pb, i, out) do { \
		(out) = str_at((pb), (i)); \
		if (!(out)) \
			return -EINVAL; \
	} while (0)

static int decode_functions(const PbProfile *pb, struct profile *p,
			    struct idmap *fm)
{
	for (size_t i = 0; i < pb->n_function; i++) {
		const PbFunction *f = pb->function[i];
		const char *name, *sys, *file;
		uint64_t id;
		int ret;

		STR_OR_FAIL(pb, f->name, name);
		STR_OR_FAIL(pb, f->system_name, sys);
		STR_OR_FAIL(pb, f->filename, file);
		if (!f->id || f->id > fm->n || fm->v[f->id - 1])
			return -EINVAL;
		ret = profile_add_function(p, name, sys, file, f->start_line,
					   &id);
		if (ret)
			return ret;
		fm->v[f->id - 1] = id;
	}
	return 0;
}

static int decode_mappings(const PbProfile *pb, struct profile *p,
			   struct idmap *mm)
{
	for (size_t i = 0; i < pb->n_mapping; i++) {
		const PbMapping *m = pb->mapping[i];
		struct pf_mapping pm = {
			.start = m->memory_start, .limit = m->memory_limit,
			.offset = m->file_offset,
			.has_functions = m->has_functions,
			.has_filenames = m->has_filenames,
			.has_line_numbers = m->has_line_numbers,
			.has_inline_frames = m->has_inline_frames,
		};
		const char *file, *bid;
		uint64_t id;
		int ret;

		STR_OR_FAIL(pb, m->filename, file);
		STR_OR_FAIL(pb, m->build_id, bid);
		if (!m->id || m->id > mm->n || mm->v[m->id - 1])
			return -EINVAL;
		pm.filename = profile_intern(p, file);
		pm.build_id = profile_intern(p, bid);
		if (pm.filename < 0 || pm.build_id < 0)
			return -ENOMEM;
		ret = profile_add_mapping(p, &pm, &id);
		if (ret)
			return ret;
		mm->v[m->id - 1] = id;
	}
	return 0;
}

static int decode_locations(const PbProfile *pb, struct profile *p,
			    const struct idmap *mm, const struct idmap *fm,
			    struct idmap *lm)
{
	for (size_t i = 0; i < pb->n_location; i++) {
		const PbLocation *l = pb->location[i];
		struct pf_line *lines;
		uint64_t mid = 0, id;
		int ret = 0;

		if (!l->id || l->id > lm->n || lm->v[l->id - 1] ||
		    (l->mapping_id && !map_id(mm, l->mapping_id, &mid)))
			return -EINVAL;
		lines = calloc(l->n_line ? l->n_line : 1, sizeof(*lines));
		if (!lines)
			return -ENOMEM;
		for (size_t k = 0; !ret && k < l->n_line; k++) {
			if (!map_id(fm, l->line[k]->function_id,
				    &lines[k].function_id))
				ret = -EINVAL;
			lines[k].line = l->line[k]->line;
		}
		if (!ret)
			ret = profile_add_location(p, mid, l->address, lines,
						   l->n_line, &id);
		free(lines);
		if (ret)
			return ret;
		lm->v[l->id - 1] = id;
	}
	return 0;
}

static int decode_labels(const PbProfile *pb, struct profile *p,
			 const PbSample *s, struct pf_label *labels)
{
	for (size_t k = 0; k < s->n_label; k++) {
		const char *key, *str, *unit;

		STR_OR_FAIL(pb, s->label[k]->key, key);
		STR_OR_FAIL(pb, s->label[k]->str, str);
		STR_OR_FAIL(pb, s->label[k]->num_unit, unit);
		labels[k] = (struct pf_label){
			.key = profile_intern(p, key),
			.str = profile_intern(p, str),
			.num = s->label[k]->num,
			.num_unit = profile_intern(p, unit),
		};
		if (labels[k].key < 0 || labels[k].str < 0 ||
		    labels[k].num_unit < 0)
			return -ENOMEM;
	}
	return 0;
}

static int decode_samples(const PbProfile *pb, struct profile *p,
			  const struct idmap *lm)
{
	for (size_t i = 0; i < pb->n_sample; i++) {
		const PbSample *s = pb->sample[i];
		uint64_t *locs = calloc(s->n_location_id + 1, sizeof(*locs));
		struct pf_label *labels = calloc(s->n_label + 1,
						 sizeof(*labels));
		int ret = locs && labels ? 0 : -ENOMEM;

		if (!ret && (s->n_value != pb->n_sample_type ||
			     s->n_location_id > UINT32_MAX ||
			     s->n_label > UINT32_MAX))
			ret = -EINVAL;
		for (size_t k = 0; !ret && k < s->n_location_id; k++)
			if (!map_id(lm, s->location_id[k], &locs[k]))
				ret = -EINVAL;
		if (!ret)
			ret = decode_labels(pb, p, s, labels);
		if (!ret)
			ret = profile_add_sample(p, locs, s->n_location_id,
						 labels, s->n_label, s->value);
		free(locs);
		free(labels);
		if (ret)
			return ret;
	}
	return 0;
}

static int decode_header(const PbProfile *pb, struct profile *p)
{
	struct pf_header *h = profile_header(p);
	const char *t, *u;

	if (!pb->n_string_table || strcmp(pb->string_table[0], ""))
		return -EINVAL;
	/* Same order as the input, so that our own output re-encodes to
	 * the same bytes. */
	for (size_t i = 1; i < pb->n_string_table; i++)
		if (profile_intern(p, pb->string_table[i]) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < pb->n_sample_type; i++) {
		STR_OR_FAIL(pb, pb->sample_type[i]->type, t);
		STR_OR_FAIL(pb, pb->sample_type[i]->unit, u);
		if (profile_add_sample_type(p, t, u))
			return -EINVAL;
	}
	if (pb->period_type) {
		STR_OR_FAIL(pb, pb->period_type->type, t);
		STR_OR_FAIL(pb, pb->period_type->unit, u);
		if (profile_set_period(p, t, u, pb->period))
			return -ENOMEM;
	}
	h->period = pb->period;
	for (size_t i = 0; i < pb->n_comment; i++) {
		STR_OR_FAIL(pb, pb->comment[i], t);
		if (profile_add_comment(p, t))
			return -ENOMEM;
	}
	STR_OR_FAIL(pb, pb->default_sample_type, t);
	h->default_sample_type = profile_intern(p, t);
	h->time_nanos = pb->time_nanos;
	h->duration_nanos = pb->duration_nanos;
	return h->default_sample_type < 0 ? -ENOMEM : 0;
}

static int decode_pb(const PbProfile *pb, struct profile *p)
{
	struct idmap mm = { 0 }, fm = { 0 }, lm = { 0 };
	int ret;

	ret = decode_header(pb, p);
	if (!ret)
		ret = idmap_init(&mm, pb->n_mapping);
	if (!ret)
		ret = idmap_init(&fm, pb->n_function);
	if (!ret)
		ret = idmap_init(&lm, pb->n_location);
	if (!ret)
		ret = decode_mappings(pb, p, &mm);
	if (!ret)
		ret = decode_functions(pb, p, &fm);
	if (!ret)
		ret = decode_locations(pb, p, &mm, &fm, &lm);
	if (!ret)
		ret = decode_samples(pb, p, &lm);
	free(mm.v);
	free(fm.v);
	free(lm.v);
	return ret;
}

int pprof_decode(const uint8_t *buf, size_t len, struct profile **out)
{
	uint8_t *raw = NULL;
	size_t raw_len = len;
	struct profile *p = NULL;
	PbProfile *pb;
	int ret = 0;

	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
		ret = gunzip_buf(buf, len, &raw, &raw_len);
		if (ret)
			return ret;
		buf = raw;
	}
	pb = perftools__profiles__profile__unpack(NULL, raw_len, buf);
	if (!pb)
		ret = -EINVAL;
	if (!ret)
		ret = profile_new(&p);
	if (!ret)
		ret = decode_pb(pb, p);
	if (pb)
		perftools__profiles__profile__free_unpacked(pb, NULL);
	free(raw);
	if (ret) {
		profile_free(p);
		return ret;
	}
	*out = p;
	return 0;
}
