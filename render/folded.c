// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * folded.c - collapsed stacks, and the stack walk shared with flame.c and
 * text.c.
 *
 * Each sample becomes one "a;b;c" line; the lines are sorted and equal
 * neighbours merged, so samples that differ only in labels (or in
 * locations that name the same functions) become one line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/folded.h"
#include "sampler/model/profile.h"

static int buf_reserve(struct folded_buf *b, size_t n)
{
	char *ns;
	size_t ncap;

	if (b->err)
		return b->err;
	if (b->len + n + 1 <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 4096;
	while (ncap < b->len + n + 1)
		ncap *= 2;
	ns = realloc(b->s, ncap);
	if (!ns)
		return b->err = -ENOMEM;
	b->s = ns;
	b->cap = ncap;
	return 0;
}

void folded_buf_put(struct folded_buf *b, const char *s, size_t n)
{
	if (buf_reserve(b, n))
		return;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void folded_buf_puts(struct folded_buf *b, const char *s)
{
	folded_buf_put(b, s, strlen(s));
}

void folded_buf_printf(struct folded_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 && !b->err)
		b->err = -EINVAL;
	if (n < 0 || buf_reserve(b, n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
}

int folded_buf_finish(struct folded_buf *b, char **buf, size_t *len)
{
	if (!b->err && !b->s)
		folded_buf_put(b, "", 0);
	if (b->err) {
		free(b->s);
		b->s = NULL;
		return b->err;
	}
	*buf = b->s;
	*len = b->len;
	b->s = NULL;
	return 0;
}

int folded_sample_index(const struct profile *p, int sample_index,
			size_t *out)
{
	const struct pf_header *h = profile_header_const(p);
	size_t n = profile_nsample_types(p), i;

	if (!n || sample_index < -1 || (sample_index >= 0 &&
					(size_t)sample_index >= n))
		return -EINVAL;
	if (sample_index >= 0) {
		*out = sample_index;
		return 0;
	}
	*out = n - 1;
	for (i = 0; h->default_sample_type && i < n; i++)
		if (profile_sample_type(p, i)->type == h->default_sample_type)
			*out = i;
	return 0;
}

int folded_walk_init(struct folded_walk *w, const struct profile *p)
{
	size_t nmap = profile_nmappings(p), i;

	memset(w, 0, sizeof(*w));
	w->p = p;
	w->nkeys = profile_nstrings(p) + nmap + 1;
	w->dso_names = calloc(nmap + 1, sizeof(*w->dso_names));
	if (!w->dso_names)
		return -ENOMEM;
	for (i = 0; i < nmap; i++) {
		const struct pf_mapping *m = profile_mapping(p, i + 1);
		const char *file = profile_str(p, m->filename);
		const char *base = strrchr(file, '/');

		base = base ? base + 1 : file;
		if (!*base)
			continue;
		if (asprintf(&w->dso_names[i], "[%s]", base) < 0) {
			w->dso_names[i] = NULL;
			folded_walk_fini(w);
			return -ENOMEM;
		}
	}
	return 0;
}

void folded_walk_fini(struct folded_walk *w)
{
	size_t i, nmap;

	if (!w->p)
		return;
	nmap = profile_nmappings(w->p);
	for (i = 0; w->dso_names && i < nmap; i++)
		free(w->dso_names[i]);
	free(w->dso_names);
	free(w->keys);
	free(w->inlined);
	memset(w, 0, sizeof(*w));
}

static int walk_reserve(struct folded_walk *w, size_t n)
{
	int64_t *k;
	bool *in;
	size_t cap = w->cap ? w->cap : 64;

	if (n <= w->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	k = realloc(w->keys, cap * sizeof(*k));
	if (!k)
		return -ENOMEM;
	w->keys = k;
	in = realloc(w->inlined, cap * sizeof(*in));
	if (!in)
		return -ENOMEM;
	w->inlined = in;
	w->cap = cap;
	return 0;
}

static int64_t line_key(const struct profile *p, const struct pf_line *l)
{
	const struct pf_function *f = profile_function(p, l->function_id);

	return f ? f->name : 0;
}

static int64_t bare_key(const struct folded_walk *w,
			const struct pf_location *loc)
{
	const struct pf_mapping *m = profile_mapping(w->p, loc->mapping_id);

	if (m && w->dso_names[m->id - 1])
		return -(int64_t)m->id;
	return 0;
}

int folded_walk_stack(struct folded_walk *w, const struct pf_sample *s)
{
	const struct pf_location *loc;
	size_t total = 0, i;
	uint32_t j;

	for (i = 0; i < s->nlocs; i++) {
		loc = profile_location(w->p, s->loc_ids[i]);
		total += loc && loc->nlines ? loc->nlines : 1;
	}
	if (walk_reserve(w, total))
		return -ENOMEM;
	w->n = 0;
	for (i = s->nlocs; i-- > 0;) {
		loc = profile_location(w->p, s->loc_ids[i]);
		if (!loc || !loc->nlines) {
			w->inlined[w->n] = false;
			w->keys[w->n++] = loc ? bare_key(w, loc) : 0;
			continue;
		}
		for (j = loc->nlines; j-- > 0;) {
			w->inlined[w->n] = j != loc->nlines - 1;
			w->keys[w->n++] = line_key(w->p, &loc->lines[j]);
		}
	}
	return 0;
}

const char *folded_walk_name(const struct folded_walk *w, int64_t key)
{
	if (key > 0)
		return profile_str(w->p, key);
	if (key < 0)
		return w->dso_names[-key - 1];
	return "<unknown>";
}

size_t folded_key_slot(const struct folded_walk *w, int64_t key)
{
	if (key >= 0)
		return key;
	return profile_nstrings(w->p) + (size_t)(-key - 1);
}

struct line {
	char *s;
	int64_t v;
};

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->s,
		      ((const struct line *)b)->s);
}

static int stack_line(struct folded_walk *w, const struct pf_sample *s,
		      struct folded_buf *tmp, char **out)
{
	size_t i;
	int ret = folded_walk_stack(w, s);

	if (ret)
		return ret;
	tmp->len = 0;
	for (i = 0; i < w->n; i++) {
		if (i)
			folded_buf_put(tmp, ";", 1);
		folded_buf_puts(tmp, folded_walk_name(w, w->keys[i]));
	}
	folded_buf_put(tmp, "", 0);
	if (tmp->err)
		return tmp->err;
	*out = strdup(tmp->s);
	return *out ? 0 : -ENOMEM;
}

static int collect_lines(struct folded_walk *w, size_t vi,
			 struct line *lines, size_t *n)
{
	struct folded_buf tmp = { 0 };
	size_t i, ns = profile_nsamples(w->p);
	int ret = 0;

	*n = 0;
	for (i = 0; i < ns && !ret; i++) {
		const struct pf_sample *s = profile_sample(w->p, i);

		if (!s->values[vi])
			continue;
		ret = stack_line(w, s, &tmp, &lines[*n].s);
		if (!ret)
			lines[(*n)++].v = s->values[vi];
	}
	free(tmp.s);
	return ret;
}

int folded_render(const struct profile *p, int sample_index, char **buf,
		  size_t *len)
{
	struct folded_buf out = { 0 };
	struct folded_walk w;
	struct line *lines;
	size_t vi, n = 0, i;
	int ret;

	ret = folded_sample_index(p, sample_index, &vi);
	if (ret)
		return ret;
	ret = folded_walk_init(&w, p);
	if (ret)
		return ret;
	lines = calloc(profile_nsamples(p) + 1, sizeof(*lines));
	if (!lines) {
		ret = -ENOMEM;
		goto out_walk;
	}
	ret = collect_lines(&w, vi, lines, &n);
	if (ret)
		goto out_lines;
	qsort(lines, n, sizeof(*lines), line_cmp);
	for (i = 0; i < n; i++) {
		int64_t v = lines[i].v;

		while (i + 1 < n && !strcmp(lines[i].s, lines[i + 1].s))
			v += lines[++i].v;
		folded_buf_puts(&out, lines[i].s);
		folded_buf_printf(&out, " %" PRId64 "\n", v);
	}
	ret = folded_buf_finish(&out, buf, len);
out_lines:
	for (i = 0; i < n; i++)
		free(lines[i].s);
	free(lines);
out_walk:
	folded_walk_fini(&w);
	return ret;
}

const char *folded_mapping_file(const struct profile *p,
				const struct pf_location *loc)
{
	const struct pf_mapping *m = profile_mapping(p, loc->mapping_id);
	const char *f = m ? profile_str(p, m->filename) : NULL;

	return f && *f ? f : "?";
}

void folded_put_hash_frames(struct folded_buf *b, const struct profile *p,
			    const struct pf_location *loc)
{
	if (!loc->nlines) {
		folded_buf_printf(b, "#\t0x%" PRIx64 "\t%s\n", loc->address,
				  folded_mapping_file(p, loc));
		return;
	}
	for (uint32_t i = 0; i < loc->nlines; i++) {
		const struct pf_function *f =
			profile_function(p, loc->lines[i].function_id);
		const char *name = f ? profile_str(p, f->name) : "?";
		const char *file = f ? profile_str(p, f->filename) : "";

		folded_buf_printf(b, "#\t0x%" PRIx64 "\t%s", loc->address,
				  name);
		if (file && *file)
			folded_buf_printf(b, "\t%s:%" PRId64, file,
					  loc->lines[i].line);
		folded_buf_puts(b, "\n");
	}
}
