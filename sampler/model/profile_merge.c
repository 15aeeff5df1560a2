// SPDX-License-Identifier: GPL-2.0-or-later
/* profile_merge.c - one profile's samples into another's tables. */
#include <errno.h>
#include <stdlib.h>

#include "sampler/model/profile.h"
#include "sampler/model/profile_merge.h"

#define MAX_LABELS 16
#define MAX_LOCS 512

/* src id -> dst id, 0 = not copied yet; one table per kind of object. */
struct merge {
	struct profile *dst;
	const struct profile *src;
	uint64_t *maps, *fns, *locs;
};

static int64_t str_of(struct merge *m, int64_t idx)
{
	return profile_intern(m->dst, profile_str(m->src, idx));
}

static int mapping_of(struct merge *m, uint64_t id, uint64_t *out)
{
	const struct pf_mapping *sm = profile_mapping(m->src, id);
	struct pf_mapping dm;

	*out = 0;
	if (!sm)
		return 0;
	if (m->maps[id]) {
		*out = m->maps[id];
		return 0;
	}
	dm = *sm;
	dm.filename = str_of(m, sm->filename);
	dm.build_id = str_of(m, sm->build_id);
	if (dm.filename < 0 || dm.build_id < 0)
		return -ENOMEM;
	if (profile_add_mapping(m->dst, &dm, &m->maps[id]))
		return -ENOMEM;
	*out = m->maps[id];
	return 0;
}

static int function_of(struct merge *m, uint64_t id, uint64_t *out)
{
	const struct pf_function *f = profile_function(m->src, id);

	if (!f)
		return -EINVAL;
	if (!m->fns[id] &&
	    profile_add_function(m->dst, profile_str(m->src, f->name),
				 profile_str(m->src, f->system_name),
				 profile_str(m->src, f->filename),
				 f->start_line, &m->fns[id]))
		return -ENOMEM;
	if (f->runtime)
		profile_mark_runtime(m->dst, m->fns[id]);
	*out = m->fns[id];
	return 0;
}

static int location_of(struct merge *m, uint64_t id, uint64_t *out)
{
	const struct pf_location *l = profile_location(m->src, id);
	struct pf_line *lines;
	uint64_t map;
	int ret;

	if (!l)
		return -EINVAL;
	if (m->locs[id]) {
		*out = m->locs[id];
		return 0;
	}
	ret = mapping_of(m, l->mapping_id, &map);
	if (ret)
		return ret;
	lines = calloc(l->nlines ? l->nlines : 1, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (uint32_t i = 0; !ret && i < l->nlines; i++) {
		lines[i].line = l->lines[i].line;
		ret = function_of(m, l->lines[i].function_id,
				  &lines[i].function_id);
	}
	if (!ret)
		ret = profile_add_location(m->dst, map, l->address, lines,
					   l->nlines, &m->locs[id]);
	free(lines);
	*out = m->locs[id];
	return ret;
}

static int64_t scale(int64_t v, int64_t num, int64_t den)
{
	__int128 x = (__int128)v * num;

	if (den == 1)
		return (int64_t)x;
	return (int64_t)((x >= 0 ? x + den / 2 : x - den / 2) / den);
}

static int append_sample(struct merge *m, const struct pf_sample *s,
			 int64_t num, int64_t den, const char *const *extra)
{
	struct pf_label labels[MAX_LABELS];
	uint64_t locs[MAX_LOCS];
	int64_t values[PF_MAX_SAMPLE_TYPES];
	uint32_t nl = 0, nlocs = s->nlocs < MAX_LOCS ? s->nlocs : MAX_LOCS;
	int ret;

	for (uint32_t i = 0; i < nlocs; i++) {
		ret = location_of(m, s->loc_ids[i], &locs[i]);
		if (ret)
			return ret;
	}
	for (uint32_t i = 0; i < s->nlabels && nl < MAX_LABELS; i++) {
		const struct pf_label *l = &s->labels[i];

		labels[nl] = *l;
		labels[nl].key = str_of(m, l->key);
		labels[nl].str = str_of(m, l->str);
		labels[nl].num_unit = str_of(m, l->num_unit);
		if (labels[nl].key < 0 || labels[nl].str < 0 ||
		    labels[nl].num_unit < 0)
			return -ENOMEM;
		nl++;
	}
	for (size_t i = 0; extra && extra[i] && extra[i + 1] &&
	     nl < MAX_LABELS; i += 2) {
		labels[nl] = (struct pf_label){
			.key = profile_intern(m->dst, extra[i]),
			.str = profile_intern(m->dst, extra[i + 1]),
		};
		if (labels[nl].key < 0 || labels[nl].str < 0)
			return -ENOMEM;
		nl++;
	}
	for (size_t i = 0; i < profile_nsample_types(m->src); i++)
		values[i] = scale(s->values[i], num, den);
	return profile_add_sample(m->dst, locs, nlocs, labels, nl, values);
}

int profile_append(struct profile *dst, const struct profile *src,
		   int64_t num, int64_t den, const char *const *extra)
{
	struct merge m = { .dst = dst, .src = src };
	int ret = 0;

	if (profile_nsample_types(dst) != profile_nsample_types(src) ||
	    den <= 0)
		return -EINVAL;
	m.maps = calloc(profile_nmappings(src) + 1, sizeof(uint64_t));
	m.fns = calloc(profile_nfunctions(src) + 1, sizeof(uint64_t));
	m.locs = calloc(profile_nlocations(src) + 1, sizeof(uint64_t));
	if (!m.maps || !m.fns || !m.locs)
		ret = -ENOMEM;
	for (size_t i = 0; !ret && i < profile_nsamples(src); i++)
		ret = append_sample(&m, profile_sample(src, i), num, den,
				    extra);
	free(m.maps);
	free(m.fns);
	free(m.locs);
	return ret;
}
