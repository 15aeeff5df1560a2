// SPDX-License-Identifier: GPL-2.0-or-later
/* pseudoloc.c - name -> location, through the profile's interned names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/model/profile.h"
#include "sampler/offcpu/pseudoloc.h"

#define NAME_MAX_LEN 160

/* The profile interns names: a string index identifies a name, and a
 * table by string index (grown as the profile's strings grow) holds its
 * location. */
struct pseudolocs {
	struct profile *p;
	uint64_t *by_str;	/* location id, 0 = none */
	size_t n;
};

int pseudolocs_new(struct profile *p, struct pseudolocs **out)
{
	struct pseudolocs *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return -ENOMEM;
	ps->p = p;
	*out = ps;
	return 0;
}

void pseudolocs_free(struct pseudolocs *ps)
{
	if (!ps)
		return;
	free(ps->by_str);
	free(ps);
}

static int reserve(struct pseudolocs *ps, size_t idx)
{
	size_t n = ps->n ? ps->n : 256;
	uint64_t *v;

	if (idx < ps->n)
		return 0;
	while (n <= idx)
		n *= 2;
	v = realloc(ps->by_str, n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memset(v + ps->n, 0, (n - ps->n) * sizeof(*v));
	ps->by_str = v;
	ps->n = n;
	return 0;
}

int pseudoloc(struct pseudolocs *ps, const char *prefix, const char *name,
	      uint64_t *loc)
{
	char text[NAME_MAX_LEN];
	struct pf_line line = { 0 };
	int64_t idx;
	int ret;

	snprintf(text, sizeof(text), "%s%s", prefix, name);
	idx = profile_intern(ps->p, text);
	if (idx < 0)
		return (int)idx;
	ret = reserve(ps, idx);
	if (ret)
		return ret;
	if (ps->by_str[idx]) {
		*loc = ps->by_str[idx];
		return 0;
	}
	ret = profile_add_function(ps->p, text, NULL, NULL, 0,
				   &line.function_id);
	if (!ret)
		ret = profile_add_location(ps->p, 0, 0, &line, 1, loc);
	if (!ret)
		ps->by_str[idx] = *loc;
	return ret;
}
