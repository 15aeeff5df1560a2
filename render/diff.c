// SPDX-License-Identifier: GPL-2.0-or-later
/* diff.c - a differential profile as a top table of deltas. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/diff.h"
#include "render/folded.h"
#include "sampler/model/profile.h"
#include "render/text.h"

struct row {
	int64_t key;
	int64_t flat_new, flat_base, cum_new, cum_base;
	bool used;
};

struct table {
	struct folded_walk w;
	struct row *rows;	/* by folded_key_slot() */
	uint32_t *seen;		/* cum: last sample that counted a slot */
};

static bool is_base(const struct profile *p, const struct pf_sample *s)
{
	for (uint32_t i = 0; i < s->nlabels; i++)
		if (!strcmp(profile_str(p, s->labels[i].key), "pprof::base"))
			return true;
	return false;
}

static int build(struct table *t, size_t vi, int64_t *tot_new,
		 int64_t *tot_base)
{
	const struct profile *p = t->w.p;

	for (size_t i = 0; i < profile_nsamples(p); i++) {
		const struct pf_sample *s = profile_sample(p, i);
		bool base = is_base(p, s);
		int64_t v = base ? -s->values[vi] : s->values[vi];

		if (!v)
			continue;
		if (folded_walk_stack(&t->w, s))
			return -ENOMEM;
		*(base ? tot_base : tot_new) += v;
		for (size_t k = t->w.n; k-- > 0;) {
			size_t slot = folded_key_slot(&t->w, t->w.keys[k]);
			struct row *r = &t->rows[slot];

			r->key = t->w.keys[k];
			r->used = true;
			if (k + 1 == t->w.n)	/* the leaf */
				*(base ? &r->flat_base : &r->flat_new) += v;
			/* a recursive function counts once per sample */
			if (t->seen[slot] != i + 1)
				*(base ? &r->cum_base : &r->cum_new) += v;
			t->seen[slot] = i + 1;
		}
	}
	return 0;
}

static int64_t mag(int64_t v)
{
	return v < 0 ? -v : v;
}

static int by_delta(const void *a, const void *b, void *ctx)
{
	const struct row *l = a, *r = b;
	const struct folded_walk *w = ctx;
	int64_t dl = mag(l->flat_new - l->flat_base);
	int64_t dr = mag(r->flat_new - r->flat_base);

	if (dl != dr)
		return dl < dr ? 1 : -1;
	dl = mag(l->cum_new - l->cum_base);
	dr = mag(r->cum_new - r->cum_base);
	if (dl != dr)
		return dl < dr ? 1 : -1;
	return strcmp(folded_walk_name(w, l->key), folded_walk_name(w, r->key));
}

static void put_value(struct folded_buf *b, int64_t v, const char *unit,
		      bool sign)
{
	char s[64], t[72];

	text_format_value(mag(v), unit, s, sizeof(s));
	snprintf(t, sizeof(t), "%s%s", !sign || !v ? "" : v < 0 ? "-" : "+",
		 s);
	folded_buf_printf(b, " %11s", t);
}

static void put_table(struct folded_buf *b, struct table *t, size_t n,
		      const char *unit, int64_t tot_new, int64_t tot_base)
{
	folded_buf_puts(b, "Differential profile: the new window against its "
			"base (base samples are labelled pprof::base=true)\n"
			"Total:");
	put_value(b, tot_new, unit, false);
	folded_buf_puts(b, " new,");
	put_value(b, tot_base, unit, false);
	folded_buf_puts(b, " base, delta");
	put_value(b, tot_new - tot_base, unit, true);
	folded_buf_puts(b, "\n         new        base       delta  delta%"
			"    cum delta  name\n");
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &t->rows[i];
		int64_t d = r->flat_new - r->flat_base;

		put_value(b, r->flat_new, unit, false);
		put_value(b, r->flat_base, unit, false);
		put_value(b, d, unit, true);
		if (r->flat_base)
			folded_buf_printf(b, " %+6.1f%%",
					  100.0 * d / r->flat_base);
		else
			folded_buf_printf(b, " %7s", d ? "new" : "");
		put_value(b, r->cum_new - r->cum_base, unit, true);
		folded_buf_printf(b, "  %s\n", folded_walk_name(&t->w, r->key));
	}
}

int diff_text_render(const struct profile *p, int sample_index, char **buf,
		     size_t *len)
{
	struct folded_buf out = { 0 };
	struct table t = { 0 };
	int64_t tot_new = 0, tot_base = 0;
	size_t vi, n = 0;
	int ret;

	ret = folded_sample_index(p, sample_index, &vi);
	if (ret)
		return ret;
	ret = folded_walk_init(&t.w, p);
	if (ret)
		return ret;
	t.rows = calloc(t.w.nkeys + 1, sizeof(*t.rows));
	t.seen = calloc(t.w.nkeys + 1, sizeof(*t.seen));
	ret = t.rows && t.seen ? build(&t, vi, &tot_new, &tot_base) : -ENOMEM;
	if (ret)
		goto out;
	for (size_t i = 0; i < t.w.nkeys; i++)
		if (t.rows[i].used)
			t.rows[n++] = t.rows[i];
	qsort_r(t.rows, n, sizeof(*t.rows), by_delta, &t.w);
	put_table(&out, &t, n,
		  profile_str(p, profile_sample_type(p, vi)->unit), tot_new,
		  tot_base);
	ret = folded_buf_finish(&out, buf, len);
out:
	free(t.rows);
	free(t.seen);
	folded_walk_fini(&t.w);
	return ret;
}
