/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sane-profile.h - assert_sane_profile(): every invariant of profile.h,
 * checked from the outside through the public accessors. Shared by the
 * tests of the profile model and of its renderers.
 *
 * Returns true when the profile is sane, else prints the first broken
 * invariant to stderr (prefixed by where) and returns false.
 */
#ifndef PROFFS_SANE_PROFILE_H
#define PROFFS_SANE_PROFILE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/model/profile.h"

#define SANE_FAIL(...)							\
	do {								\
		fprintf(stderr, "insane profile (%s): ", where);	\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		goto out;						\
	} while (0)

static inline int sane_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static inline int sane_cmp_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

static inline int sane_cmp_func(const void *a, const void *b)
{
	const struct pf_function *f = *(const struct pf_function *const *)a;
	const struct pf_function *g = *(const struct pf_function *const *)b;

	if (f->name != g->name)
		return sane_cmp_i64(f->name, g->name);
	if (f->system_name != g->system_name)
		return sane_cmp_i64(f->system_name, g->system_name);
	if (f->filename != g->filename)
		return sane_cmp_i64(f->filename, g->filename);
	return sane_cmp_i64(f->start_line, g->start_line);
}

/* Orders samples by their merge key (location ids, labels). */
static inline int sane_cmp_sample(const void *a, const void *b)
{
	const struct pf_sample *s = *(const struct pf_sample *const *)a;
	const struct pf_sample *t = *(const struct pf_sample *const *)b;
	int c;

	if (s->nlocs != t->nlocs)
		return s->nlocs < t->nlocs ? -1 : 1;
	if (s->nlabels != t->nlabels)
		return s->nlabels < t->nlabels ? -1 : 1;
	for (uint32_t i = 0; i < s->nlocs; i++)
		if (s->loc_ids[i] != t->loc_ids[i])
			return s->loc_ids[i] < t->loc_ids[i] ? -1 : 1;
	for (uint32_t i = 0; i < s->nlabels; i++) {
		const struct pf_label *l = &s->labels[i], *m = &t->labels[i];

		if ((c = sane_cmp_i64(l->key, m->key)) ||
		    (c = sane_cmp_i64(l->str, m->str)) ||
		    (c = sane_cmp_i64(l->num, m->num)) ||
		    (c = sane_cmp_i64(l->num_unit, m->num_unit)))
			return c;
	}
	return 0;
}

static inline bool sane_str(const struct profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < profile_nstrings(p) && profile_str(p, i);
}

/* No two elements of v[0..n) compare equal; sorts v. */
static inline bool sane_unique(const void **v, size_t n,
			       int (*cmp)(const void *, const void *))
{
	qsort(v, n, sizeof(*v), cmp);
	for (size_t i = 1; i < n; i++)
		if (!cmp(&v[i - 1], &v[i]))
			return false;
	return true;
}

static inline bool sane_tables(const struct profile *p, const char *where)
{
	size_t ns = profile_nstrings(p), nt = profile_nsample_types(p);
	const struct pf_header *h = profile_header_const(p);
	bool ok = false;

	if (!ns || !profile_str(p, 0) || strcmp(profile_str(p, 0), ""))
		SANE_FAIL("string 0 is not \"\"");
	if (profile_str(p, ns) || profile_str(p, -1))
		SANE_FAIL("string index out of range is not NULL");
	if (nt > PF_MAX_SAMPLE_TYPES || profile_sample_type(p, nt))
		SANE_FAIL("%zu sample types", nt);
	for (size_t i = 0; i < nt; i++)
		if (!sane_str(p, profile_sample_type(p, i)->type) ||
		    !sane_str(p, profile_sample_type(p, i)->unit))
			SANE_FAIL("sample type %zu: bad string", i);
	if (!sane_str(p, h->period_type.type) ||
	    !sane_str(p, h->period_type.unit) ||
	    !sane_str(p, h->default_sample_type) ||
	    !sane_str(p, h->command) || !sane_str(p, h->kind))
		SANE_FAIL("header: bad string");
	for (size_t i = 0; i < profile_ncomments(p); i++)
		if (!sane_str(p, profile_comment(p, i)))
			SANE_FAIL("comment %zu: bad string", i);
	for (uint64_t id = 1; id <= profile_nmappings(p); id++) {
		const struct pf_mapping *m = profile_mapping(p, id);

		if (!m || m->id != id)
			SANE_FAIL("mapping %lu: id not dense",
				  (unsigned long)id);
		if (!sane_str(p, m->filename) || !sane_str(p, m->build_id))
			SANE_FAIL("mapping %lu: bad string", (unsigned long)id);
	}
	if (profile_mapping(p, 0) ||
	    profile_mapping(p, profile_nmappings(p) + 1))
		SANE_FAIL("mapping id out of range is not NULL");
	ok = true;
out:
	return ok;
}

static inline bool sane_code(const struct profile *p, const char *where)
{
	size_t nf = profile_nfunctions(p);
	const void **v = calloc(nf + 1, sizeof(*v));
	bool ok = false;

	if (!v)
		SANE_FAIL("out of memory");
	for (uint64_t id = 1; id <= nf; id++) {
		const struct pf_function *f = profile_function(p, id);

		if (!f || f->id != id)
			SANE_FAIL("function %lu: id not dense",
				  (unsigned long)id);
		if (!sane_str(p, f->name) || !sane_str(p, f->system_name) ||
		    !sane_str(p, f->filename))
			SANE_FAIL("function %lu: bad string",
				  (unsigned long)id);
		v[id - 1] = f;
	}
	if (profile_function(p, 0) || profile_function(p, nf + 1))
		SANE_FAIL("function id out of range is not NULL");
	if (!sane_unique(v, nf, sane_cmp_func))
		SANE_FAIL("duplicate function");
	for (uint64_t id = 1; id <= profile_nlocations(p); id++) {
		const struct pf_location *l = profile_location(p, id);

		if (!l || l->id != id)
			SANE_FAIL("location %lu: id not dense",
				  (unsigned long)id);
		if (l->mapping_id && !profile_mapping(p, l->mapping_id))
			SANE_FAIL("location %lu: bad mapping",
				  (unsigned long)id);
		if (l->nlines && !l->lines)
			SANE_FAIL("location %lu: NULL lines",
				  (unsigned long)id);
		for (uint32_t k = 0; k < l->nlines; k++)
			if (!profile_function(p, l->lines[k].function_id))
				SANE_FAIL("location %lu: bad function",
					  (unsigned long)id);
	}
	if (profile_location(p, 0) ||
	    profile_location(p, profile_nlocations(p) + 1))
		SANE_FAIL("location id out of range is not NULL");
	ok = true;
out:
	free(v);
	return ok;
}

static inline bool sane_samples(const struct profile *p, const char *where)
{
	size_t n = profile_nsamples(p), nt = profile_nsample_types(p);
	const void **v = calloc(n + 1, sizeof(*v));
	int64_t sums[PF_MAX_SAMPLE_TYPES] = { 0 };
	bool ok = false;

	if (!v)
		SANE_FAIL("out of memory");
	if (n && !nt)
		SANE_FAIL("samples without sample types");
	for (size_t i = 0; i < n; i++) {
		const struct pf_sample *s = profile_sample(p, i);

		if (!s || !s->values || (s->nlocs && !s->loc_ids) ||
		    (s->nlabels && !s->labels))
			SANE_FAIL("sample %zu: NULL array", i);
		for (uint32_t k = 0; k < s->nlocs; k++)
			if (!profile_location(p, s->loc_ids[k]))
				SANE_FAIL("sample %zu: bad location %lu", i,
					  (unsigned long)s->loc_ids[k]);
		for (uint32_t k = 0; k < s->nlabels; k++)
			if (!sane_str(p, s->labels[k].key) ||
			    !sane_str(p, s->labels[k].str) ||
			    !sane_str(p, s->labels[k].num_unit))
				SANE_FAIL("sample %zu: bad label string", i);
		for (size_t k = 0; k < nt; k++)
			sums[k] = (int64_t)((uint64_t)sums[k] +
					    (uint64_t)s->values[k]);
		v[i] = s;
	}
	if (profile_sample(p, n))
		SANE_FAIL("sample index out of range is not NULL");
	for (size_t k = 0; k < nt; k++)
		if (profile_total(p, k) != sums[k])
			SANE_FAIL("total %zu: %ld != %ld", k,
				  (long)profile_total(p, k), (long)sums[k]);
	if (!sane_unique(v, n, sane_cmp_sample))
		SANE_FAIL("two samples with the same stack and labels");
	ok = true;
out:
	free(v);
	return ok;
}

/* Interned: each string once. */
static inline bool sane_strings(const struct profile *p, const char *where)
{
	size_t n = profile_nstrings(p);
	const void **v = calloc(n + 1, sizeof(*v));
	bool ok = false;

	if (!v)
		SANE_FAIL("out of memory");
	for (size_t i = 0; i < n; i++)
		if (!(v[i] = profile_str(p, i)))
			SANE_FAIL("string %zu is NULL", i);
	if (!sane_unique(v, n, sane_cmp_str))
		SANE_FAIL("a string is in the table twice");
	ok = true;
out:
	free(v);
	return ok;
}

static inline bool assert_sane_profile(const struct profile *p,
				       const char *where)
{
	return sane_tables(p, where) && sane_strings(p, where) &&
	       sane_code(p, where) && sane_samples(p, where);
}

#endif
