// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * profile.c - the profile model: interned strings, dense tables, samples
 * merged through a hash of (location ids, labels).
 *
 * The three hash indexes (strings, functions, samples) are open addressing
 * with linear probing over (element index + 1, hash) pairs, kept at most
 * half full. Keeping the hash in the slot makes growth a pass over the
 * slots and rejects most non-matching probes without touching the element.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/model/profile.h"

/* A growable array of fixed-size elements. */
struct vec {
	void *v;
	size_t n, cap, elem;
};

struct slot {
	uint32_t idx1;		/* element index + 1; 0 = empty */
	uint32_t hash;
};

struct index {
	struct slot *slots;
	size_t cap;		/* power of two, or 0 before first use */
};

struct profile {
	struct pf_header h;
	struct vec strings;	/* char * */
	struct index string_ix;
	struct vec types;	/* struct pf_value_type */
	struct vec comments;	/* int64_t */
	struct vec stats;	/* struct pf_stat */
	struct vec mappings;	/* struct pf_mapping */
	struct vec locations;	/* struct pf_location */
	struct vec functions;	/* struct pf_function */
	struct index function_ix;
	struct vec samples;	/* struct pf_sample */
	struct index sample_ix;
};

static int vec_reserve(struct vec *a, size_t extra)
{
	size_t cap;
	void *nv;

	if (a->n + extra <= a->cap)
		return 0;
	cap = a->cap ? a->cap * 2 : 16;
	while (cap < a->n + extra)
		cap *= 2;
	nv = realloc(a->v, cap * a->elem);
	if (!nv)
		return -ENOMEM;
	a->v = nv;
	a->cap = cap;
	return 0;
}

static void *vec_at(const struct vec *a, size_t i)
{
	return (char *)a->v + i * a->elem;
}

static inline uint64_t mix(uint64_t h, uint64_t x)
{
	return (h ^ x) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
}

/*
 * The index masks the low bits, and mix() only carries bits upwards:
 * fold every bit down (murmur3's finalizer) so keys differing only in
 * high bits (numeric labels, addresses) still spread.
 */
static uint32_t finish(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return (uint32_t)h;
}

static uint32_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return finish(h);
}

static uint32_t hash_function(const struct pf_function *f)
{
	uint64_t h = mix(0, f->name);

	h = mix(h, f->system_name);
	h = mix(h, f->filename);
	return finish(mix(h, f->start_line));
}

static uint32_t hash_sample(const uint64_t *locs, uint32_t nlocs,
			    const struct pf_label *labels, uint32_t nlabels)
{
	uint64_t h = mix(nlocs, nlabels);

	for (uint32_t i = 0; i < nlocs; i++)
		h = mix(h, locs[i]);
	for (uint32_t i = 0; i < nlabels; i++) {
		h = mix(h, labels[i].key);
		h = mix(h, labels[i].str);
		h = mix(h, labels[i].num);
		h = mix(h, labels[i].num_unit);
	}
	return finish(h);
}

/* Make room for element n + 1 (grow when more than half full). */
static int index_reserve(struct index *ix, size_t n)
{
	size_t cap = ix->cap ? ix->cap : 64;
	struct slot *slots;

	if (ix->cap && (n + 1) * 2 <= ix->cap)
		return 0;
	if (n >= UINT32_MAX / 2)
		return -ENOMEM;
	while ((n + 1) * 2 > cap)
		cap *= 2;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < ix->cap; i++) {
		struct slot s = ix->slots[i];
		size_t k = s.hash & (cap - 1);

		if (!s.idx1)
			continue;
		while (slots[k].idx1)
			k = (k + 1) & (cap - 1);
		slots[k] = s;
	}
	free(ix->slots);
	ix->slots = slots;
	ix->cap = cap;
	return 0;
}

/* First slot of hash's probe sequence; walk with index_next(). */
static size_t index_first(const struct index *ix, uint32_t hash)
{
	return hash & (ix->cap - 1);
}

static size_t index_next(const struct index *ix, size_t k)
{
	return (k + 1) & (ix->cap - 1);
}

/*
 * Empty slot k, shifting later members of its cluster back so that no
 * probe sequence is broken (linear probing deletion, Knuth 6.4 R).
 */
static void index_remove(struct index *ix, size_t k)
{
	size_t j = k;

	for (;;) {
		size_t home;

		ix->slots[k].idx1 = 0;
		do {
			j = index_next(ix, j);
			if (!ix->slots[j].idx1)
				return;
			home = index_first(ix, ix->slots[j].hash);
		} while (k <= j ? k < home && home <= j
				: k < home || home <= j);
		ix->slots[k] = ix->slots[j];
		k = j;
	}
}

/* Drop the strings interned since the table held n (failed calls). */
static void strings_truncate(struct profile *p, size_t n)
{
	struct index *ix = &p->string_ix;

	while (p->strings.n > n) {
		char *s = *(char **)vec_at(&p->strings, p->strings.n - 1);
		size_t k;

		for (k = index_first(ix, hash_str(s));
		     ix->slots[k].idx1 != p->strings.n; k = index_next(ix, k))
			;
		index_remove(ix, k);
		free(s);
		p->strings.n--;
	}
}

static bool str_ok(const struct profile *p, int64_t idx)
{
	return idx >= 0 && (uint64_t)idx < p->strings.n;
}

int profile_new(struct profile **out)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->strings.elem = sizeof(char *);
	p->types.elem = sizeof(struct pf_value_type);
	p->comments.elem = sizeof(int64_t);
	p->stats.elem = sizeof(struct pf_stat);
	p->mappings.elem = sizeof(struct pf_mapping);
	p->locations.elem = sizeof(struct pf_location);
	p->functions.elem = sizeof(struct pf_function);
	p->samples.elem = sizeof(struct pf_sample);
	if (profile_intern(p, "") < 0) {	/* index 0 is always "" */
		profile_free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->strings.n; i++)
		free(*(char **)vec_at(&p->strings, i));
	for (size_t i = 0; i < p->locations.n; i++)
		free(((struct pf_location *)vec_at(&p->locations, i))->lines);
	/* One block per sample, starting with its values. */
	for (size_t i = 0; i < p->samples.n; i++)
		free(((struct pf_sample *)vec_at(&p->samples, i))->values);
	free(p->strings.v);
	free(p->string_ix.slots);
	free(p->types.v);
	free(p->comments.v);
	free(p->stats.v);
	free(p->mappings.v);
	free(p->locations.v);
	free(p->functions.v);
	free(p->function_ix.slots);
	free(p->samples.v);
	free(p->sample_ix.slots);
	free(p);
}

/* What one malloc() of n bytes takes from the heap, about (glibc: an
 * 8-byte header, 16-byte granules, 32 bytes at least). */
static size_t heap_bytes(size_t n)
{
	size_t m = (n + 8 + 15) & ~(size_t)15;

	return m < 32 ? 32 : m;
}

static size_t vec_bytes(const struct vec *a)
{
	return a->cap ? heap_bytes(a->cap * a->elem) : 0;
}

static size_t index_bytes(const struct index *ix)
{
	return ix->cap ? heap_bytes(ix->cap * sizeof(*ix->slots)) : 0;
}

size_t profile_mem_bytes(const struct profile *p)
{
	size_t m = heap_bytes(sizeof(*p));

	m += vec_bytes(&p->strings) + index_bytes(&p->string_ix) +
	     vec_bytes(&p->types) + vec_bytes(&p->comments) +
	     vec_bytes(&p->stats) + vec_bytes(&p->mappings) +
	     vec_bytes(&p->locations) + vec_bytes(&p->functions) +
	     index_bytes(&p->function_ix) + vec_bytes(&p->samples) +
	     index_bytes(&p->sample_ix);
	for (size_t i = 0; i < p->strings.n; i++)
		m += heap_bytes(strlen(*(char **)vec_at(&p->strings, i)) + 1);
	for (size_t i = 0; i < p->locations.n; i++) {
		const struct pf_location *l = vec_at(&p->locations, i);

		if (l->lines)
			m += heap_bytes(l->nlines * sizeof(*l->lines));
	}
	for (size_t i = 0; i < p->samples.n; i++) {
		const struct pf_sample *s = vec_at(&p->samples, i);

		m += heap_bytes(p->types.n * sizeof(int64_t) +
				s->nlocs * sizeof(uint64_t) +
				s->nlabels * sizeof(struct pf_label));
	}
	return m;
}

int64_t profile_intern(struct profile *p, const char *s)
{
	struct index *ix = &p->string_ix;
	uint32_t hash;
	size_t k;
	char *copy;

	if (!s)
		s = "";
	if (p->strings.n && !*s)
		return 0;
	hash = hash_str(s);
	if (vec_reserve(&p->strings, 1) ||
	    index_reserve(ix, p->strings.n))
		return -ENOMEM;
	for (k = index_first(ix, hash); ix->slots[k].idx1;
	     k = index_next(ix, k)) {
		size_t i = ix->slots[k].idx1 - 1;

		if (ix->slots[k].hash == hash &&
		    !strcmp(*(char **)vec_at(&p->strings, i), s))
			return i;
	}
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	*(char **)vec_at(&p->strings, p->strings.n) = copy;
	ix->slots[k] = (struct slot){ .idx1 = ++p->strings.n, .hash = hash };
	return p->strings.n - 1;
}

int profile_add_sample_type(struct profile *p, const char *type,
			    const char *unit)
{
	size_t n0 = p->strings.n;
	struct pf_value_type vt;

	if (p->types.n >= PF_MAX_SAMPLE_TYPES || p->samples.n)
		return -EINVAL;
	vt.type = profile_intern(p, type);
	vt.unit = profile_intern(p, unit);
	if (vt.type < 0 || vt.unit < 0 || vec_reserve(&p->types, 1)) {
		strings_truncate(p, n0);
		return -ENOMEM;
	}
	*(struct pf_value_type *)vec_at(&p->types, p->types.n++) = vt;
	return 0;
}

int profile_set_period(struct profile *p, const char *type, const char *unit,
		       int64_t period)
{
	size_t n0 = p->strings.n;
	int64_t t = profile_intern(p, type), u = profile_intern(p, unit);

	if (t < 0 || u < 0) {
		strings_truncate(p, n0);
		return -ENOMEM;
	}
	p->h.period_type.type = t;
	p->h.period_type.unit = u;
	p->h.period = period;
	return 0;
}

int profile_add_comment(struct profile *p, const char *text)
{
	size_t n0 = p->strings.n;
	int64_t s = profile_intern(p, text);

	if (s < 0 || vec_reserve(&p->comments, 1)) {
		strings_truncate(p, n0);
		return -ENOMEM;
	}
	*(int64_t *)vec_at(&p->comments, p->comments.n++) = s;
	return 0;
}

int profile_add_stat(struct profile *p, const char *name, const char *value)
{
	size_t n0 = p->strings.n;
	struct pf_stat st = { .name = profile_intern(p, name) };

	if (value)
		st.value = profile_intern(p, value);
	if (st.name <= 0 || st.value < 0 || (value && !st.value) ||
	    vec_reserve(&p->stats, 1)) {
		strings_truncate(p, n0);
		return st.name == 0 || (value && !st.value) ? -EINVAL : -ENOMEM;
	}
	*(struct pf_stat *)vec_at(&p->stats, p->stats.n++) = st;
	return 0;
}

struct pf_header *profile_header(struct profile *p)
{
	return &p->h;
}

int profile_add_mapping(struct profile *p, const struct pf_mapping *m,
			uint64_t *id)
{
	struct pf_mapping *dst;

	if (!str_ok(p, m->filename) || !str_ok(p, m->build_id))
		return -EINVAL;
	if (vec_reserve(&p->mappings, 1))
		return -ENOMEM;
	dst = vec_at(&p->mappings, p->mappings.n++);
	*dst = *m;
	dst->id = p->mappings.n;
	*id = dst->id;
	return 0;
}

static bool function_equal(const struct pf_function *a,
			   const struct pf_function *b)
{
	return a->name == b->name && a->system_name == b->system_name &&
	       a->filename == b->filename && a->start_line == b->start_line;
}

/* A NULL system_name means "same as name", the common case for C. */
int profile_add_function(struct profile *p, const char *name,
			 const char *system_name, const char *filename,
			 int64_t start_line, uint64_t *id)
{
	struct index *ix = &p->function_ix;
	struct pf_function f;
	size_t n0 = p->strings.n, k;
	uint32_t hash;

	memset(&f, 0, sizeof(f));	/* padding too: tables compare by bytes */
	f.start_line = start_line;
	f.name = profile_intern(p, name);
	f.system_name = profile_intern(p, system_name ? system_name : name);
	f.filename = profile_intern(p, filename);
	if (f.name < 0 || f.system_name < 0 || f.filename < 0 ||
	    vec_reserve(&p->functions, 1) ||
	    index_reserve(ix, p->functions.n)) {
		strings_truncate(p, n0);
		return -ENOMEM;
	}
	hash = hash_function(&f);
	for (k = index_first(ix, hash); ix->slots[k].idx1;
	     k = index_next(ix, k)) {
		const struct pf_function *g =
			vec_at(&p->functions, ix->slots[k].idx1 - 1);

		if (ix->slots[k].hash == hash && function_equal(g, &f)) {
			*id = g->id;
			return 0;
		}
	}
	f.id = p->functions.n + 1;
	*(struct pf_function *)vec_at(&p->functions, p->functions.n++) = f;
	ix->slots[k] = (struct slot){ .idx1 = f.id, .hash = hash };
	*id = f.id;
	return 0;
}

int profile_mark_runtime(struct profile *p, uint64_t id)
{
	if (!id || id > p->functions.n)
		return -EINVAL;
	((struct pf_function *)vec_at(&p->functions, id - 1))->runtime = true;
	return 0;
}

int profile_add_location(struct profile *p, uint64_t mapping_id,
			 uint64_t address, const struct pf_line *lines,
			 uint32_t nlines, uint64_t *id)
{
	struct pf_location *loc;
	struct pf_line *copy = NULL;

	if (mapping_id && !profile_mapping(p, mapping_id))
		return -EINVAL;
	for (uint32_t i = 0; i < nlines; i++)
		if (!profile_function(p, lines[i].function_id))
			return -EINVAL;
	if (nlines) {
		copy = malloc(nlines * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, lines, nlines * sizeof(*copy));
	}
	if (vec_reserve(&p->locations, 1)) {
		free(copy);
		return -ENOMEM;
	}
	loc = vec_at(&p->locations, p->locations.n++);
	loc->id = p->locations.n;
	loc->mapping_id = mapping_id;
	loc->address = address;
	loc->nlines = nlines;
	loc->lines = copy;
	*id = loc->id;
	return 0;
}

static bool sample_ok(const struct profile *p, const uint64_t *locs,
		      uint32_t nlocs, const struct pf_label *labels,
		      uint32_t nlabels)
{
	if ((nlocs && !locs) || (nlabels && !labels))
		return false;
	for (uint32_t i = 0; i < nlocs; i++)
		if (!profile_location(p, locs[i]))
			return false;
	for (uint32_t i = 0; i < nlabels; i++)
		if (!str_ok(p, labels[i].key) || !str_ok(p, labels[i].str) ||
		    !str_ok(p, labels[i].num_unit))
			return false;
	return true;
}

static bool sample_equal(const struct pf_sample *s, const uint64_t *locs,
			 uint32_t nlocs, const struct pf_label *labels,
			 uint32_t nlabels)
{
	return s->nlocs == nlocs && s->nlabels == nlabels &&
	       (!nlocs || !memcmp(s->loc_ids, locs, nlocs * sizeof(*locs))) &&
	       (!nlabels ||
		!memcmp(s->labels, labels, nlabels * sizeof(*labels)));
}

/* Values, labels and location ids of a sample in one 8-aligned block. */
static int sample_copy(struct pf_sample *s, const uint64_t *locs,
		       uint32_t nlocs, const struct pf_label *labels,
		       uint32_t nlabels, const int64_t *values, size_t ntypes)
{
	size_t vsz = ntypes * sizeof(*values);
	size_t lsz = (size_t)nlabels * sizeof(*labels);
	char *block = malloc(vsz + lsz + (size_t)nlocs * sizeof(*locs));

	if (!block)
		return -ENOMEM;
	s->nlocs = nlocs;
	s->nlabels = nlabels;
	s->values = memcpy(block, values, vsz);
	s->labels = (struct pf_label *)(block + vsz);
	s->loc_ids = (uint64_t *)(block + vsz + lsz);
	if (nlabels)
		memcpy(s->labels, labels, lsz);
	if (nlocs)
		memcpy(s->loc_ids, locs, nlocs * sizeof(*locs));
	return 0;
}

/* Counters wrap rather than overflow (undefined for int64_t). */
static int64_t add_wrap(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

int profile_add_sample(struct profile *p, const uint64_t *loc_ids,
		       uint32_t nlocs, const struct pf_label *labels,
		       uint32_t nlabels, const int64_t *values)
{
	struct index *ix = &p->sample_ix;
	size_t ntypes = p->types.n, k;
	struct pf_sample *s;
	uint32_t hash;

	if (!ntypes || !values ||
	    !sample_ok(p, loc_ids, nlocs, labels, nlabels))
		return -EINVAL;
	if (vec_reserve(&p->samples, 1) || index_reserve(ix, p->samples.n))
		return -ENOMEM;
	hash = hash_sample(loc_ids, nlocs, labels, nlabels);
	for (k = index_first(ix, hash); ix->slots[k].idx1;
	     k = index_next(ix, k)) {
		s = vec_at(&p->samples, ix->slots[k].idx1 - 1);
		if (ix->slots[k].hash != hash ||
		    !sample_equal(s, loc_ids, nlocs, labels, nlabels))
			continue;
		for (size_t i = 0; i < ntypes; i++)
			s->values[i] = add_wrap(s->values[i], values[i]);
		return 0;
	}
	s = vec_at(&p->samples, p->samples.n);
	if (sample_copy(s, loc_ids, nlocs, labels, nlabels, values, ntypes))
		return -ENOMEM;
	ix->slots[k] = (struct slot){ .idx1 = ++p->samples.n, .hash = hash };
	return 0;
}

const struct pf_header *profile_header_const(const struct profile *p)
{
	return &p->h;
}

const char *profile_str(const struct profile *p, int64_t idx)
{
	if (!str_ok(p, idx))
		return NULL;
	return *(char **)vec_at(&p->strings, idx);
}

size_t profile_nstrings(const struct profile *p)
{
	return p->strings.n;
}

size_t profile_nsample_types(const struct profile *p)
{
	return p->types.n;
}

const struct pf_value_type *profile_sample_type(const struct profile *p,
						size_t i)
{
	return i < p->types.n ? vec_at(&p->types, i) : NULL;
}

int profile_find_sample_type(const struct profile *p, const char *type)
{
	for (size_t i = 0; type && i < p->types.n; i++) {
		const struct pf_value_type *vt = vec_at(&p->types, i);

		if (!strcmp(profile_str(p, vt->type), type))
			return i;
	}
	return -ENOENT;
}

size_t profile_ncomments(const struct profile *p)
{
	return p->comments.n;
}

int64_t profile_comment(const struct profile *p, size_t i)
{
	return i < p->comments.n ? *(int64_t *)vec_at(&p->comments, i) : 0;
}

size_t profile_nstats(const struct profile *p)
{
	return p->stats.n;
}

const struct pf_stat *profile_stat(const struct profile *p, size_t i)
{
	return i < p->stats.n ? vec_at(&p->stats, i) : NULL;
}

size_t profile_nsamples(const struct profile *p)
{
	return p->samples.n;
}

const struct pf_sample *profile_sample(const struct profile *p, size_t i)
{
	return i < p->samples.n ? vec_at(&p->samples, i) : NULL;
}

int profile_deliver(struct profile *p, int ret, int64_t time_nanos,
		    int64_t duration_nanos, struct profile **out)
{
	if (ret) {
		profile_free(p);
		return ret;
	}
	p->h.time_nanos = time_nanos;
	p->h.duration_nanos = duration_nanos;
	*out = p;
	return 0;
}

int64_t *profile_sample_values(struct profile *p, size_t i)
{
	struct pf_sample *s = i < p->samples.n ? vec_at(&p->samples, i) : NULL;

	return s ? s->values : NULL;
}

size_t profile_nmappings(const struct profile *p)
{
	return p->mappings.n;
}

const struct pf_mapping *profile_mapping(const struct profile *p,
					 uint64_t id)
{
	return id && id <= p->mappings.n ? vec_at(&p->mappings, id - 1) : NULL;
}

size_t profile_nlocations(const struct profile *p)
{
	return p->locations.n;
}

const struct pf_location *profile_location(const struct profile *p,
					   uint64_t id)
{
	return id && id <= p->locations.n ? vec_at(&p->locations, id - 1)
					  : NULL;
}

size_t profile_nfunctions(const struct profile *p)
{
	return p->functions.n;
}

const struct pf_function *profile_function(const struct profile *p,
					   uint64_t id)
{
	return id && id <= p->functions.n ? vec_at(&p->functions, id - 1)
					  : NULL;
}

int64_t profile_total(const struct profile *p, size_t i)
{
	int64_t sum = 0;

	if (i >= p->types.n)
		return 0;
	for (size_t k = 0; k < p->samples.n; k++)
		sum = add_wrap(sum,
			       ((struct pf_sample *)vec_at(&p->samples, k))
				       ->values[i]);
	return sum;
}

static bool key_dropped(const struct profile *p, int64_t key,
			const char *const *drop)
{
	for (; *drop; drop++)
		if (!strcmp(profile_str(p, key), *drop))
			return true;
	return false;
}

/* Tables first, in order: strings are unique and functions distinct in
 * src, so every index and id comes out the same in the copy. */
static int copy_tables(const struct profile *src, struct profile *p)
{
	uint64_t id;

	for (size_t i = 1; i < profile_nstrings(src); i++)
		if (profile_intern(p, profile_str(src, i)) != (int64_t)i)
			return -ENOMEM;
	for (size_t i = 0; i < profile_nsample_types(src); i++) {
		const struct pf_value_type *vt = profile_sample_type(src, i);

		if (profile_add_sample_type(p, profile_str(src, vt->type),
					    profile_str(src, vt->unit)))
			return -ENOMEM;
	}
	for (size_t i = 0; i < profile_ncomments(src); i++)
		if (profile_add_comment(p, profile_str(src,
						       profile_comment(src, i))))
			return -ENOMEM;
	for (size_t i = 0; i < profile_nstats(src); i++) {
		const struct pf_stat *st = profile_stat(src, i);

		if (profile_add_stat(p, profile_str(src, st->name),
				     st->value ? profile_str(src, st->value)
					       : NULL))
			return -ENOMEM;
	}
	for (size_t i = 1; i <= profile_nmappings(src); i++)
		if (profile_add_mapping(p, profile_mapping(src, i), &id))
			return -ENOMEM;
	for (size_t i = 1; i <= profile_nfunctions(src); i++) {
		const struct pf_function *f = profile_function(src, i);

		if (profile_add_function(p, profile_str(src, f->name),
					 profile_str(src, f->system_name),
					 profile_str(src, f->filename),
					 f->start_line, &id) ||
		    (f->runtime && profile_mark_runtime(p, id)))
			return -ENOMEM;
	}
	for (size_t i = 1; i <= profile_nlocations(src); i++) {
		const struct pf_location *l = profile_location(src, i);

		if (profile_add_location(p, l->mapping_id, l->address,
					 l->lines, l->nlines, &id))
			return -ENOMEM;
	}
	return 0;
}

int profile_copy_dropping_labels(const struct profile *src,
				 const char *const *drop,
				 struct profile **out)
{
	struct pf_label *labels;
	struct profile *p;
	uint32_t most = 1;
	int ret;

	/* every label kept: a goroutine's pprof labels are up to 64 */
	for (size_t i = 0; i < profile_nsamples(src); i++)
		if (profile_sample(src, i)->nlabels > most)
			most = profile_sample(src, i)->nlabels;
	labels = malloc(most * sizeof(*labels));
	if (!labels)
		return -ENOMEM;
	ret = profile_new(&p);
	if (!ret)
		ret = copy_tables(src, p);
	if (!ret)
		p->h = src->h;
	for (size_t i = 0; !ret && i < profile_nsamples(src); i++) {
		const struct pf_sample *s = profile_sample(src, i);
		uint32_t n = 0;

		for (uint32_t k = 0; k < s->nlabels; k++)
			if (!key_dropped(src, s->labels[k].key, drop))
				labels[n++] = s->labels[k];
		ret = profile_add_sample(p, s->loc_ids, s->nlocs, labels, n,
					 s->values);
	}
	free(labels);
	if (ret) {
		profile_free(p);
		return ret;
	}
	*out = p;
	return 0;
}
