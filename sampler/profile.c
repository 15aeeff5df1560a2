// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * profile.c - the profile model: interned strings, dense tables, samples
 * merged through a hash of (location ids, labels).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

/* A growable array of fixed-size elements. */
struct vec {
	void *v;
	size_t n, cap, elem;
};

/* Open addressing over indices + 1 into a vec (0 = empty slot). */
struct index {
	uint32_t *slots;
	size_t cap;		/* power of two */
};

struct profile {
	struct pf_header h;
	struct vec strings;	/* char * */
	struct index string_ix;
	struct vec types;	/* struct pf_value_type */
	struct vec comments;	/* int64_t */
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
	h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

typedef uint64_t (*hash_fn)(const struct profile *p, size_t i);

/* Rebuild when more than half full: keeps probe chains short. */
static int index_grow(struct index *ix, size_t n, const struct profile *p,
		      hash_fn hash)
{
	size_t cap = ix->cap ? ix->cap : 64;
	uint32_t *slots;

	if (ix->cap && (n + 1) * 2 <= ix->cap)
		return 0;
	while ((n + 1) * 2 > cap)
		cap *= 2;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t s = hash(p, i) & (cap - 1);

		while (slots[s])
			s = (s + 1) & (cap - 1);
		slots[s] = i + 1;
	}
	free(ix->slots);
	ix->slots = slots;
	ix->cap = cap;
	return 0;
}

static uint64_t string_hash(const struct profile *p, size_t i)
{
	return hash_str(*(char **)vec_at(&p->strings, i));
}

static uint64_t function_hash_of(const struct pf_function *f)
{
	uint64_t h = mix(0, f->name);

	h = mix(h, f->system_name);
	h = mix(h, f->filename);
	return mix(h, f->start_line);
}

static uint64_t function_hash(const struct profile *p, size_t i)
{
	return function_hash_of(vec_at(&p->functions, i));
}

static uint64_t sample_hash_of(const uint64_t *locs, uint32_t nlocs,
			       const struct pf_label *labels,
			       uint32_t nlabels)
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
	return h;
}

static uint64_t sample_hash(const struct profile *p, size_t i)
{
	const struct pf_sample *s = vec_at(&p->samples, i);

	return sample_hash_of(s->loc_ids, s->nlocs, s->labels, s->nlabels);
}

int profile_new(struct profile **out)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->strings.elem = sizeof(char *);
	p->types.elem = sizeof(struct pf_value_type);
	p->comments.elem = sizeof(int64_t);
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
	for (size_t i = 0; i < p->samples.n; i++) {
		struct pf_sample *s = vec_at(&p->samples, i);

		free(s->loc_ids);
		free(s->labels);
		free(s->values);
	}
	free(p->strings.v);
	free(p->string_ix.slots);
	free(p->types.v);
	free(p->comments.v);
	free(p->mappings.v);
	free(p->locations.v);
	free(p->functions.v);
	free(p->function_ix.slots);
	free(p->samples.v);
	free(p->sample_ix.slots);
	free(p);
}

int64_t profile_intern(struct profile *p, const char *s)
{
	struct index *ix = &p->string_ix;
	size_t slot;
	char *copy;

	if (!s)
		s = "";
	if (p->strings.n && !*s)
		return 0;
	if (ix->cap) {
		for (slot = hash_str(s) & (ix->cap - 1); ix->slots[slot];
		     slot = (slot + 1) & (ix->cap - 1)) {
			size_t i = ix->slots[slot] - 1;

			if (!strcmp(*(char **)vec_at(&p->strings, i), s))
				return i;
		}
	}
	if (vec_reserve(&p->strings, 1) ||
	    index_grow(ix, p->strings.n, p, string_hash))
		return -ENOMEM;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	*(char **)vec_at(&p->strings, p->strings.n) = copy;
	for (slot = hash_str(s) & (ix->cap - 1); ix->slots[slot];
	     slot = (slot + 1) & (ix->cap - 1))
		;
	ix->slots[slot] = ++p->strings.n;
	return p->strings.n - 1;
}

int profile_add_sample_type(struct profile *p, const char *type,
			    const char *unit)
{
	struct pf_value_type vt;

	if (p->types.n >= PF_MAX_SAMPLE_TYPES || p->samples.n)
		return -EINVAL;
	vt.type = profile_intern(p, type);
	vt.unit = profile_intern(p, unit);
	if (vt.type < 0 || vt.unit < 0 || vec_reserve(&p->types, 1))
		return -ENOMEM;
	*(struct pf_value_type *)vec_at(&p->types, p->types.n++) = vt;
	return 0;
}

int profile_set_period(struct profile *p, const char *type, const char *unit,
		       int64_t period)
{
	int64_t t = profile_intern(p, type), u = profile_intern(p, unit);

	if (t < 0 || u < 0)
		return -ENOMEM;
	p->h.period_type.type = t;
	p->h.period_type.unit = u;
	p->h.period = period;
	return 0;
}

int profile_add_comment(struct profile *p, const char *text)
{
	int64_t s = profile_intern(p, text);

	if (s < 0 || vec_reserve(&p->comments, 1))
		return -ENOMEM;
	*(int64_t *)vec_at(&p->comments, p->comments.n++) = s;
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

	if (vec_reserve(&p->mappings, 1))
		return -ENOMEM;
	dst = vec_at(&p->mappings, p->mappings.n++);
	*dst = *m;
	dst->id = p->mappings.n;
	*id = dst->id;
	return 0;
}

int profile_add_function(struct profile *p, const char *name,
			 const char *system_name, const char *filename,
			 int64_t start_line, uint64_t *id)
{
	struct index *ix = &p->function_ix;
	struct pf_function f = { .start_line = start_line };
	size_t slot;

	f.name = profile_intern(p, name);
	f.system_name = profile_intern(p, system_name ? system_name : name);
	f.filename = profile_intern(p, filename);
	if (f.name < 0 || f.system_name < 0 || f.filename < 0)
		return -ENOMEM;
	if (vec_reserve(&p->functions, 1) ||
	    index_grow(ix, p->functions.n, p, function_hash))
		return -ENOMEM;
	for (slot = function_hash_of(&f) & (ix->cap - 1); ix->slots[slot];
	     slot = (slot + 1) & (ix->cap - 1)) {
		const struct pf_function *g =
			vec_at(&p->functions, ix->slots[slot] - 1);

		if (g->name == f.name && g->system_name == f.system_name &&
		    g->filename == f.filename &&
		    g->start_line == f.start_line) {
			*id = g->id;
			return 0;
		}
	}
	f.id = p->functions.n + 1;
	*(struct pf_function *)vec_at(&p->functions, p->functions.n++) = f;
	ix->slots[slot] = f.id;
	*id = f.id;
	return 0;
}

int profile_add_location(struct profile *p, uint64_t mapping_id,
			 uint64_t address, const struct pf_line *lines,
			 uint32_t nlines, uint64_t *id)
{
	struct pf_location *loc;
	struct pf_line *copy = NULL;

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

static bool sample_equal(const struct pf_sample *s, const uint64_t *locs,
			 uint32_t nlocs, const struct pf_label *labels,
			 uint32_t nlabels)
{
	return s->nlocs == nlocs && s->nlabels == nlabels &&
	       !memcmp(s->loc_ids, locs, nlocs * sizeof(*locs)) &&
	       !memcmp(s->labels, labels, nlabels * sizeof(*labels));
}

static void *dup_array(const void *src, size_t n, size_t elem)
{
	void *d = malloc(n ? n * elem : 1);

	if (d && n)
		memcpy(d, src, n * elem);
	return d;
}

int profile_add_sample(struct profile *p, const uint64_t *loc_ids,
		       uint32_t nlocs, const struct pf_label *labels,
		       uint32_t nlabels, const int64_t *values)
{
	struct index *ix = &p->sample_ix;
	size_t ntypes = p->types.n, slot;
	struct pf_sample s;

	if (!ntypes)
		return -EINVAL;
	if (vec_reserve(&p->samples, 1) ||
	    index_grow(ix, p->samples.n, p, sample_hash))
		return -ENOMEM;
	for (slot = sample_hash_of(loc_ids, nlocs, labels, nlabels) &
		    (ix->cap - 1);
	     ix->slots[slot]; slot = (slot + 1) & (ix->cap - 1)) {
		struct pf_sample *o = vec_at(&p->samples, ix->slots[slot] - 1);

		if (sample_equal(o, loc_ids, nlocs, labels, nlabels)) {
			for (size_t i = 0; i < ntypes; i++)
				o->values[i] += values[i];
			return 0;
		}
	}
	s.nlocs = nlocs;
	s.nlabels = nlabels;
	s.loc_ids = dup_array(loc_ids, nlocs, sizeof(*loc_ids));
	s.labels = dup_array(labels, nlabels, sizeof(*labels));
	s.values = dup_array(values, ntypes, sizeof(*values));
	if (!s.loc_ids || !s.labels || !s.values) {
		free(s.loc_ids);
		free(s.labels);
		free(s.values);
		return -ENOMEM;
	}
	*(struct pf_sample *)vec_at(&p->samples, p->samples.n++) = s;
	ix->slots[slot] = p->samples.n;
	return 0;
}

const struct pf_header *profile_header_const(const struct profile *p)
{
	return &p->h;
}

const char *profile_str(const struct profile *p, int64_t idx)
{
	if (idx < 0 || (size_t)idx >= p->strings.n)
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
	for (size_t i = 0; i < p->types.n; i++) {
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

size_t profile_nsamples(const struct profile *p)
{
	return p->samples.n;
}

const struct pf_sample *profile_sample(const struct profile *p, size_t i)
{
	return i < p->samples.n ? vec_at(&p->samples, i) : NULL;
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
		sum += ((struct pf_sample *)vec_at(&p->samples, k))->values[i];
	return sum;
}
