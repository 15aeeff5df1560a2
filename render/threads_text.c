// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * threads_text.c - thread dumps as Go's goroutine?debug=1 and ?debug=2.
 *
 * Both forms sort an array of sample indices: debug=1 by stack (to find
 * the groups), then the groups by count; debug=2 by tid.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/folded.h"
#include "sampler/model/profile.h"
#include "render/threads_text.h"

enum tlabel {
	TL_THREAD, TL_NAME, TL_STATE, TL_SYSCALL, TL_GOROUTINE, TL_WAIT,
	TL_CREATED_BY, TL_CREATED_AT, TL_LOCKED, TL__COUNT
};

static const char *const tlabel_keys[TL__COUNT] = {
	[TL_THREAD] = "thread", [TL_NAME] = "thread_name",
	[TL_STATE] = "state", [TL_SYSCALL] = "syscall",
	[TL_GOROUTINE] = "goroutine", [TL_WAIT] = "wait_minutes",
	[TL_CREATED_BY] = "created_by", [TL_CREATED_AT] = "created_at",
	[TL_LOCKED] = "locked_to_thread",
};

/* Label values of one sample; "" when absent. */
static void sample_labels(const struct profile *p, const struct pf_sample *s,
			  const char *v[TL__COUNT])
{
	for (int k = 0; k < TL__COUNT; k++)
		v[k] = "";
	for (uint32_t i = 0; i < s->nlabels; i++) {
		const char *key = profile_str(p, s->labels[i].key);

		for (int k = 0; k < TL__COUNT; k++)
			if (key && !strcmp(key, tlabel_keys[k]))
				v[k] = profile_str(p, s->labels[i].str);
	}
	for (int k = 0; k < TL__COUNT; k++)
		if (!v[k])
			v[k] = "";
}

/* The comments a Go program's dump carries about its goroutines
 * (gothreads.c): printed as "# ..." lines. */
#define GO_COMMENT "goroutines: "

static void put_go_comments(struct folded_buf *b, const struct profile *p)
{
	for (size_t i = 0; i < profile_ncomments(p); i++) {
		const char *c = profile_str(p, profile_comment(p, i));

		if (c && !strncmp(c, GO_COMMENT, strlen(GO_COMMENT)))
			folded_buf_printf(b, "# %s\n", c);
	}
}

static const char *label_of(const struct profile *p,
			    const struct pf_sample *s, enum tlabel k)
{
	const char *v[TL__COUNT];

	sample_labels(p, s, v);
	return v[k];
}

/* Whether the dump is a Go program's, with goroutines. */
static bool has_goroutines(const struct profile *p)
{
	for (size_t i = 0; i < profile_nsamples(p); i++)
		if (*label_of(p, profile_sample(p, i), TL_GOROUTINE))
			return true;
	return false;
}

static int cmp_stack(const struct pf_sample *a, const struct pf_sample *b)
{
	uint32_t n = a->nlocs < b->nlocs ? a->nlocs : b->nlocs;

	for (uint32_t i = 0; i < n; i++)
		if (a->loc_ids[i] != b->loc_ids[i])
			return a->loc_ids[i] < b->loc_ids[i] ? -1 : 1;
	return (a->nlocs > b->nlocs) - (a->nlocs < b->nlocs);
}

/* What the sorts compare: the profile, and each sample's "# labels:"
 * text (label_set()). */
struct sort_ctx {
	const struct profile *p;
	char **sets;
};

static int cmp_label_set(const struct sort_ctx *c, size_t a, size_t b)
{
	return strcmp(c->sets[a], c->sets[b]);
}

static int cmp_by_stack(const void *x, const void *y, void *arg)
{
	const struct sort_ctx *ctx = arg;
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	int c = cmp_stack(profile_sample(ctx->p, i),
			  profile_sample(ctx->p, j));

	if (!c)
		c = cmp_label_set(ctx, i, j);
	if (!c)
		c = (*(const size_t *)x > *(const size_t *)y) -
		    (*(const size_t *)x < *(const size_t *)y);
	return c;
}

/* A run of the sorted index with one stack, or one label set in it. */
struct run {
	size_t start, n;	/* in the sorted index */
	int64_t count;
};

static int cmp_run(const void *x, const void *y, void *arg)
{
	const struct run *a = x, *b = y;

	(void)arg;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return (a->start > b->start) - (a->start < b->start);
}

static int64_t sample_count(const struct pf_sample *s)
{
	return s->values[0];
}

/* Split idx[start, start + n) into runs where same() holds. */
static struct run *split_runs(const struct sort_ctx *c, const size_t *idx,
			      size_t start, size_t n, bool labels,
			      size_t *nruns)
{
	const struct profile *p = c->p;
	struct run *r = calloc(n ? n : 1, sizeof(*r));
	size_t k = 0;

	if (!r)
		return NULL;
	for (size_t i = start; i < start + n; i++) {
		const struct pf_sample *s = profile_sample(p, idx[i]);
		const struct pf_sample *prev =
			i > start ? profile_sample(p, idx[i - 1]) : NULL;
		bool same = prev && (labels ? !cmp_label_set(c, idx[i - 1],
							     idx[i])
					    : !cmp_stack(prev, s));

		if (!same)
			r[k++] = (struct run){ .start = i };
		r[k - 1].n++;
		r[k - 1].count += sample_count(s);
	}
	qsort_r(r, k, sizeof(*r), cmp_run, NULL);
	*nruns = k;
	return r;
}

/* The length of the UTF-8 sequence at s, and its code point into *cp;
 * 0 when it is not one (Go's strconv takes such a byte as \xNN). */
static int utf8_at(const unsigned char *s, uint32_t *cp)
{
	int n = s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : s[0] >= 0xe0 ? 3 :
		s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	uint32_t v = n == 4 ? s[0] & 7u : n == 3 ? s[0] & 15u : s[0] & 31u;

	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3fu);
	}
	if ((n == 3 && (v < 0x800 || (v >= 0xd800 && v < 0xe000))) ||
	    (n == 4 && (v < 0x10000 || v > 0x10ffff)))
		return 0;
	*cp = v;
	return n;
}

/* Code points Go's strconv.IsPrint says no to, among the common ones:
 * the C1 controls and the invisible spaces and marks (the rest of
 * Unicode is taken as printable). */
static bool go_unprintable(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0xa0) || cp == 0xad ||
	       (cp >= 0x2000 && cp <= 0x200f) ||
	       (cp >= 0x2028 && cp <= 0x202f) ||
	       (cp >= 0x205f && cp <= 0x206f) || cp == 0x3000 ||
	       cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb) ||
	       (cp >= 0xd800 && cp <= 0xdfff);
}

/* s quoted as Go's %q (strconv.Quote) writes it: how Go prints a label
 * set (runtime/pprof's labelMap.String()). */
static void put_quoted(struct folded_buf *b, const char *str)
{
	static const char esc[] = "\a\b\f\n\r\t\v";
	static const char name[] = "abfnrtv";
	const unsigned char *s = (const unsigned char *)str;
	const char *e;
	uint32_t cp;
	int n;

	folded_buf_puts(b, "\"");
	for (; *s; s += n) {
		n = 1;
		if (*s == '"' || *s == '\\') {
			folded_buf_printf(b, "\\%c", *s);
		} else if (*s < 0x20 && (e = strchr(esc, *s))) {
			folded_buf_printf(b, "\\%c", name[e - esc]);
		} else if (*s < 0x20 || *s == 0x7f) {
			folded_buf_printf(b, "\\x%02x", *s);
		} else if (*s < 0x80) {
			folded_buf_put(b, (const char *)s, 1);
		} else if (!(n = utf8_at(s, &cp))) {
			n = 1;
			folded_buf_printf(b, "\\x%02x", *s);
		} else if (go_unprintable(cp)) {
			folded_buf_printf(b, cp > 0xffff ? "\\U%08x" : "\\u%04x",
					  cp);
		} else {
			folded_buf_put(b, (const char *)s, (size_t)n);
		}
	}
	folded_buf_puts(b, "\"");
}

/* Whether key is one of the labels a dump sets itself (tlabel_keys). */
static bool own_label(const char *key)
{
	for (int k = 0; k < TL__COUNT; k++)
		if (!strcmp(key, tlabel_keys[k]))
			return true;
	return false;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/*
 * The text of s's "# labels:" line, malloc()ed: its state, system call
 * and thread name, and of a goroutine its pprof labels (every label
 * the dump does not set itself), each as "key":"value" quoted as Go
 * quotes them, in the order Go prints a label set in (the quoted pairs
 * sorted), joined by ", ", in braces. NULL: no memory.
 */
static char *label_set(const struct profile *p, const struct pf_sample *s)
{
	static const enum tlabel shown[] = { TL_STATE, TL_SYSCALL, TL_NAME };
	struct folded_buf out = { 0 };
	char **pairs, *text = NULL;
	size_t np = 0, len;
	bool go = *label_of(p, s, TL_GOROUTINE);

	pairs = calloc(s->nlabels + 1, sizeof(*pairs));
	if (!pairs)
		return NULL;
	for (uint32_t i = 0; i < s->nlabels; i++) {
		const char *key = profile_str(p, s->labels[i].key);
		const char *val = profile_str(p, s->labels[i].str);
		struct folded_buf b = { 0 };
		bool want = false;

		if (!key || !val || s->labels[i].num_unit)
			continue;
		for (size_t k = 0; k < sizeof(shown) / sizeof(shown[0]); k++)
			if (!strcmp(key, tlabel_keys[shown[k]]) && *val)
				want = true;
		if (!want && !(go && !own_label(key)))
			continue;
		put_quoted(&b, key);
		folded_buf_puts(&b, ":");
		put_quoted(&b, val);
		if (folded_buf_finish(&b, &pairs[np], &len))
			goto out;
		np++;
	}
	qsort(pairs, np, sizeof(*pairs), cmp_str);
	folded_buf_puts(&out, "{");
	for (size_t i = 0; i < np; i++) {
		/* the same label twice (a key given twice): once, as a
		 * map holds it */
		if (i && !strcmp(pairs[i], pairs[i - 1]))
			continue;
		folded_buf_puts(&out, i ? ", " : "");
		folded_buf_puts(&out, pairs[i]);
	}
	folded_buf_puts(&out, "}");
	folded_buf_finish(&out, &text, &len);
out:
	for (size_t i = 0; i < np; i++)
		free(pairs[i]);
	free(pairs);
	return text;
}

static void put_group(struct folded_buf *b, const struct sort_ctx *c,
		      const size_t *idx, const struct run *g)
{
	const struct profile *p = c->p;
	const struct pf_sample *s = profile_sample(p, idx[g->start]);
	struct run *sets;
	size_t nsets;

	folded_buf_printf(b, "%" PRId64 " @", g->count);
	for (uint32_t i = 0; i < s->nlocs; i++)
		folded_buf_printf(b, " 0x%" PRIx64,
				  profile_location(p, s->loc_ids[i])->address);
	folded_buf_puts(b, "\n");
	sets = split_runs(c, idx, g->start, g->n, true, &nsets);
	if (!sets) {
		b->err = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < nsets; i++) {
		folded_buf_printf(b, "# labels: %s",
				  c->sets[idx[sets[i].start]]);
		if (nsets > 1)
			folded_buf_printf(b, " (%" PRId64 " %s)",
					  sets[i].count,
					  *label_of(p, s, TL_GOROUTINE) ?
					  "goroutines" : "threads");
		folded_buf_puts(b, "\n");
	}
	free(sets);
	for (uint32_t i = 0; i < s->nlocs; i++)
		folded_put_hash_frames(b, p, profile_location(p, s->loc_ids[i]));
	folded_buf_puts(b, "\n");
}

static int render_grouped(struct folded_buf *b, const struct profile *p,
			  size_t *idx, size_t n)
{
	struct sort_ctx c = { .p = p };
	struct run *groups = NULL;
	size_t ngroups;
	int ret = -ENOMEM;

	c.sets = calloc(n ? n : 1, sizeof(*c.sets));
	if (!c.sets)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!(c.sets[i] = label_set(p, profile_sample(p, i))))
			goto out;
	qsort_r(idx, n, sizeof(*idx), cmp_by_stack, &c);
	groups = split_runs(&c, idx, 0, n, false, &ngroups);
	if (!groups)
		goto out;
	folded_buf_printf(b, "%s profile: total %" PRId64 "\n",
			  has_goroutines(p) ? "goroutine" : "threads",
			  profile_total(p, 0));
	put_go_comments(b, p);
	for (size_t i = 0; i < ngroups && !b->err; i++)
		put_group(b, &c, idx, &groups[i]);
	ret = 0;
out:
	free(groups);
	for (size_t i = 0; i < n; i++)
		free(c.sets[i]);
	free(c.sets);
	return ret;
}

/* Goroutines first, by id, then threads by tid. */
static void sample_order(const struct profile *p, size_t i, long long *key)
{
	const char *v[TL__COUNT];

	sample_labels(p, profile_sample(p, i), v);
	key[0] = *v[TL_GOROUTINE] ? 0 : 1;
	key[1] = *v[TL_GOROUTINE] ? strtoll(v[TL_GOROUTINE], NULL, 10) :
		 *v[TL_THREAD] ? strtoll(v[TL_THREAD], NULL, 10) : -1;
}

static int cmp_by_tid(const void *x, const void *y, void *arg)
{
	const struct profile *p = arg;
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	long long a[2], b[2];

	sample_order(p, i, a);
	sample_order(p, j, b);
	for (int k = 0; k < 2; k++)
		if (a[k] != b[k])
			return a[k] < b[k] ? -1 : 1;
	return (i > j) - (i < j);
}

/* Frames Go's own goroutine dump leaves out (traceback.go's
 * showfuncinfo at GOTRACEBACK's default): the runtime's unexported
 * functions, runtime.gopark and its like. */
static bool go_hidden(const char *name)
{
	return !strncmp(name, "runtime.", 8) &&
	       !(name[8] >= 'A' && name[8] <= 'Z');
}

/* Whether a goroutine's stack has a frame Go would show. */
static bool go_visible(const struct profile *p, const struct pf_sample *s)
{
	for (uint32_t i = 0; i < s->nlocs; i++) {
		const struct pf_location *loc = profile_location(p,
								 s->loc_ids[i]);

		if (!loc->nlines)
			return true;
		for (uint32_t j = 0; j < loc->nlines; j++) {
			const struct pf_function *f =
				profile_function(p, loc->lines[j].function_id);
			const char *name = f ? profile_str(p, f->name) : NULL;

			if (!name || !go_hidden(name))
				return true;
		}
	}
	return false;
}

/* Go's "function(...)\n\tfile:line" pairs of one location; of a
 * goroutine (go), without the frames Go hides. */
static void put_go_frames(struct folded_buf *b, const struct profile *p,
			  const struct pf_location *loc, bool go)
{
	if (!loc->nlines) {
		folded_buf_printf(b, "?(...)\n\t%s 0x%" PRIx64 "\n",
				  folded_mapping_file(p, loc), loc->address);
		return;
	}
	for (uint32_t i = 0; i < loc->nlines; i++) {
		const struct pf_function *f =
			profile_function(p, loc->lines[i].function_id);
		const char *name = f ? profile_str(p, f->name) : "?";
		const char *file = f ? profile_str(p, f->filename) : "";

		if (go && name && go_hidden(name))
			continue;
		folded_buf_printf(b, "%s(...)\n\t", name);
		if (file && *file)
			folded_buf_printf(b, "%s:%" PRId64 "\n", file,
					  loc->lines[i].line);
		else
			folded_buf_printf(b, "%s 0x%" PRIx64 "\n",
					  folded_mapping_file(p, loc), loc->address);
	}
}

static void put_thread(struct folded_buf *b, const struct profile *p,
		       const struct pf_sample *s)
{
	const char *v[TL__COUNT];

	sample_labels(p, s, v);
	if (*v[TL_GOROUTINE]) {	/* Go's own header */
		/* as Go: every frame when none would be shown */
		bool all = !go_visible(p, s);

		folded_buf_printf(b, "goroutine %s [%s", v[TL_GOROUTINE],
				  *v[TL_STATE] ? v[TL_STATE] : "unknown");
		if (*v[TL_WAIT])
			folded_buf_printf(b, ", %s minutes", v[TL_WAIT]);
		if (*v[TL_LOCKED])
			folded_buf_puts(b, ", locked to thread");
		folded_buf_puts(b, "]:\n");
		for (uint32_t i = 0; i < s->nlocs; i++)
			put_go_frames(b, p, profile_location(p, s->loc_ids[i]),
				      !all);
		if (*v[TL_CREATED_BY])
			folded_buf_printf(b, "created by %s\n\t%s\n",
					  v[TL_CREATED_BY], v[TL_CREATED_AT]);
		folded_buf_puts(b, "\n");
		return;
	}
	folded_buf_printf(b, "thread %s [%s",
			  *v[TL_THREAD] ? v[TL_THREAD] : "?",
			  *v[TL_STATE] ? v[TL_STATE] : "unknown");
	if (*v[TL_SYSCALL])
		folded_buf_printf(b, ", %s", v[TL_SYSCALL]);
	folded_buf_printf(b, "]: %s", v[TL_NAME]);
	if (sample_count(s) > 1)
		folded_buf_printf(b, " (%" PRId64 " threads)", sample_count(s));
	folded_buf_puts(b, "\n");
	for (uint32_t i = 0; i < s->nlocs; i++)
		put_go_frames(b, p, profile_location(p, s->loc_ids[i]), false);
	folded_buf_puts(b, "\n");
}

static int render_each(struct folded_buf *b, const struct profile *p,
		       size_t *idx, size_t n)
{
	qsort_r(idx, n, sizeof(*idx), cmp_by_tid, (void *)p);
	for (size_t i = 0; i < n && !b->err; i++)
		put_thread(b, p, profile_sample(p, idx[i]));
	put_go_comments(b, p);
	return 0;
}

int threads_text_render(const struct profile *p, int debug, char **buf,
			size_t *len)
{
	struct folded_buf b = { 0 };
	size_t n = profile_nsamples(p), *idx;
	int ret;

	if (!profile_nsample_types(p))
		return -EINVAL;
	idx = malloc((n ? n : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	if (debug >= 2)
		ret = render_each(&b, p, idx, n);
	else
		ret = render_grouped(&b, p, idx, n);
	free(idx);
	if (ret) {
		free(b.s);
		return ret;
	}
	return folded_buf_finish(&b, buf, len);
}
