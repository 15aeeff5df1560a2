// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * text.c - `go tool pprof -top` tables.
 *
 * Written from pprof's rules (internal/report and internal/measurement)
 * so the output matches it line for line: nodes are functions (frame
 * keys of folded.h), flat goes to the leaf, cum to each distinct
 * function of a sample, nodes with cum under 0.5% of the flat sum are
 * dropped (their flat is lost: pprof calls it residual), and every
 * value is printed in the unit that suits the smallest one.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "render/folded.h"
#include "sampler/model/profile.h"
#include "render/text.h"

#define NODE_FRACTION 0.005

struct unit {
	const char *name;	/* canonical, as printed */
	const char *aliases[4];
	double factor;
};

struct unit_type {
	const struct unit *units;
	size_t n;
	size_t dflt;		/* used when nothing scales to >= 1 */
};

static const struct unit mem_units[] = {
	{ "B", { "b", "byte" }, 1 },
	{ "kB", { "kb", "kbyte", "kilobyte" }, 1024.0 },
	{ "MB", { "mb", "mbyte", "megabyte" }, 1048576.0 },
	{ "GB", { "gb", "gbyte", "gigabyte" }, 1073741824.0 },
	{ "TB", { "tb", "tbyte", "terabyte" }, 1099511627776.0 },
	{ "PB", { "pb", "pbyte", "petabyte" }, 1125899906842624.0 },
};

static const struct unit time_units[] = {
	{ "ns", { "ns", "nanosecond" }, 1 },
	{ "us", { "\xce\xbcs", "us", "microsecond" }, 1e3 },
	{ "ms", { "ms", "millisecond" }, 1e6 },
	{ "s", { "s", "sec", "second" }, 1e9 },
	{ "hrs", { "hour", "hr" }, 3600e9 },
};

static const struct unit_type unit_types[] = {
	{ mem_units, sizeof(mem_units) / sizeof(mem_units[0]), 0 },
	{ time_units, sizeof(time_units) / sizeof(time_units[0]), 3 },
};

/* pprof's sniffUnit: lower case, a plural 's' dropped, then aliases. */
static const struct unit *sniff(const struct unit_type *ut, const char *u)
{
	char low[64];
	size_t n = strlen(u), i, k;

	if (n >= sizeof(low))
		return NULL;
	for (i = 0; i <= n; i++)
		low[i] = (u[i] >= 'A' && u[i] <= 'Z') ? u[i] - 'A' + 'a' : u[i];
	if (n > 2 && low[n - 1] == 's')
		low[n - 1] = '\0';
	for (i = 0; i < ut->n; i++)
		for (k = 0; k < 4 && ut->units[i].aliases[k]; k++)
			if (!strcmp(low, ut->units[i].aliases[k]))
				return &ut->units[i];
	return NULL;
}

static bool is_auto(const char *to)
{
	return !strcmp(to, "minimum") || !strcmp(to, "auto");
}

static bool convert(const struct unit_type *ut, int64_t value,
		    const char *from, const char *to, double *v,
		    const char **u)
{
	const struct unit *fu = sniff(ut, from), *tu = NULL;
	double f = 0;
	size_t i;

	if (!fu)
		return false;
	*v = (double)value * fu->factor;
	if (is_auto(to)) {
		for (i = 0; i < ut->n; i++)
			if (ut->units[i].factor >= f &&
			    *v / ut->units[i].factor >= 1.0) {
				f = ut->units[i].factor;
				tu = &ut->units[i];
			}
	} else {
		tu = sniff(ut, to);
	}
	if (!tu)
		tu = &ut->units[ut->dflt];
	*v /= tu->factor;
	*u = tu->name;
	return true;
}

/* pprof's measurement.Scale. */
static void scale(int64_t value, const char *from, const char *to,
		  double *v, const char **u)
{
	static const char *const plain[] = { "count", "sample", "unit",
					     "minimum", "auto" };
	size_t i;

	if (value < 0 && -value > 0) {
		scale(-value, from, to, v, u);
		*v = -*v;
		return;
	}
	for (i = 0; i < sizeof(unit_types) / sizeof(unit_types[0]); i++)
		if (convert(&unit_types[i], value, from, to, v, u))
			return;
	*v = (double)value;
	*u = to;
	for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (!strcmp(to, plain[i]))
			*u = "";
}

/* pprof's measurement.ScaledLabel. */
static void scaled_label(int64_t value, const char *from, const char *to,
			 char *buf, size_t len)
{
	const char *u;
	double v;
	size_t n;

	scale(value, from, to, &v, &u);
	snprintf(buf, len, "%.2f", v);
	n = strlen(buf);
	if (n > 3 && !strcmp(buf + n - 3, ".00"))
		buf[n - 3] = '\0';
	if (!strcmp(buf, "0") || !strcmp(buf, "-0")) {
		snprintf(buf, len, "0");
		return;
	}
	n = strlen(buf);
	snprintf(buf + n, len > n ? len - n : 0, "%s", u);
}

void text_format_value(int64_t value, const char *unit, char *buf,
		       size_t len)
{
	scaled_label(value, unit, "auto", buf, len);
}

/* pprof's measurement.Percentage: 6 columns. */
static void percentage(int64_t value, int64_t total, char *buf, size_t len)
{
	double r = total ? (double)value / (double)total * 100 : 0;

	if (r < 0)
		r = -r;

	if (r >= 99.95 && r <= 100.05)
		snprintf(buf, len, "  100%%");
	else if (r >= 1.0)
		snprintf(buf, len, "%5.2f%%", r);
	else
		snprintf(buf, len, "%5.2g%%", r);
}

struct node {
	int64_t key;
	int64_t flat, cum;
	size_t stamp;		/* last sample (1-based) counted in cum */
	bool kept;
	bool in_inline, in_plain;
};

/* Call edges between kept nodes, for the (inline) marks. */
struct edge {
	size_t from1, to;	/* from1 = slot + 1; 0 = empty bucket */
	bool inlined;		/* every occurrence was inlined */
};

struct top {
	struct folded_walk w;
	const char *unit;	/* sample unit */
	const char *out_unit;	/* the table's unit */
	size_t vi;
	struct node *nodes;	/* by folded_key_slot() */
	int64_t total, flat_sum, shown;
	size_t nnodes, dropped;
	struct edge *edges;
	size_t nedges, edge_cap;
	size_t *order;		/* slots of kept nodes, sorted */
	size_t nkept;
};

static int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

static void count_sample(struct top *t, size_t sid, int64_t v)
{
	struct folded_walk *w = &t->w;
	size_t i;

	for (i = 0; i < w->n; i++) {
		struct node *n = &t->nodes[folded_key_slot(w, w->keys[i])];

		n->key = w->keys[i];
		if (n->stamp != sid) {
			n->stamp = sid;
			n->cum += v;
		}
	}
	if (w->n)
		t->nodes[folded_key_slot(w, w->keys[w->n - 1])].flat += v;
}

static int count_all(struct top *t)
{
	const struct profile *p = t->w.p;
	size_t ns = profile_nsamples(p), i;
	int ret;

	for (i = 0; i < ns; i++) {
		const struct pf_sample *s = profile_sample(p, i);
		int64_t v = s->values[t->vi];

		t->total += abs64(v);
		if (!v)
			continue;
		ret = folded_walk_stack(&t->w, s);
		if (ret)
			return ret;
		count_sample(t, i + 1, v);
	}
	return 0;
}

static int edge_grow(struct top *t)
{
	struct edge *old = t->edges, *ne;
	size_t ocap = t->edge_cap, cap = ocap ? ocap * 2 : 1024, i, h;

	ne = calloc(cap, sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	for (i = 0; i < ocap; i++) {
		if (!old[i].from1)
			continue;
		h = (old[i].from1 * 0x9e3779b97f4a7c15ull ^ old[i].to) %
		    cap;
		while (ne[h].from1)
			h = (h + 1) % cap;
		ne[h] = old[i];
	}
	free(old);
	t->edges = ne;
	t->edge_cap = cap;
	return 0;
}

/* pprof's AddToEdgeDiv: an edge is inline only if always inlined. */
static int edge_add(struct top *t, size_t from, size_t to, bool inlined)
{
	size_t h;

	if ((t->nedges + 1) * 2 > t->edge_cap && edge_grow(t))
		return -ENOMEM;
	h = ((from + 1) * 0x9e3779b97f4a7c15ull ^ to) % t->edge_cap;
	for (; t->edges[h].from1; h = (h + 1) % t->edge_cap) {
		if (t->edges[h].from1 == from + 1 && t->edges[h].to == to) {
			t->edges[h].inlined &= inlined;
			return 0;
		}
	}
	t->edges[h] = (struct edge){ from + 1, to, inlined };
	t->nedges++;
	return 0;
}

static int link_sample(struct top *t)
{
	struct folded_walk *w = &t->w;
	size_t i, slot, parent = SIZE_MAX;
	int ret;

	for (i = 0; i < w->n; i++) {
		slot = folded_key_slot(w, w->keys[i]);
		if (!t->nodes[slot].kept)
			continue;
		if (parent != SIZE_MAX && parent != slot) {
			ret = edge_add(t, parent, slot, w->inlined[i]);
			if (ret)
				return ret;
		}
		parent = slot;
	}
	return 0;
}

static int link_all(struct top *t)
{
	const struct profile *p = t->w.p;
	size_t ns = profile_nsamples(p), i;
	int ret;

	for (i = 0; i < ns; i++) {
		const struct pf_sample *s = profile_sample(p, i);

		if (!s->values[t->vi])
			continue;
		ret = folded_walk_stack(&t->w, s);
		if (!ret)
			ret = link_sample(t);
		if (ret)
			return ret;
	}
	for (i = 0; i < t->edge_cap; i++) {
		struct edge *e = &t->edges[i];

		if (!e->from1)
			continue;
		if (e->inlined)
			t->nodes[e->to].in_inline = true;
		else
			t->nodes[e->to].in_plain = true;
	}
	return 0;
}

static void trim(struct top *t)
{
	int64_t cutoff;
	size_t i;

	for (i = 0; i < t->w.nkeys; i++)
		t->flat_sum += t->nodes[i].flat;
	cutoff = abs64((int64_t)((double)t->flat_sum * NODE_FRACTION));
	for (i = 0; i < t->w.nkeys; i++) {
		struct node *n = &t->nodes[i];

		if (!n->flat && !n->cum)
			continue;
		t->nnodes++;
		n->kept = !cutoff || abs64(n->cum) >= cutoff;
		if (!n->kept) {
			t->dropped++;
			continue;
		}
		t->order[t->nkept++] = i;
		t->shown += n->flat;
	}
}

/* pprof's FlatNameOrder; qsort_r's context is the top. */
static int node_cmp(const void *a, const void *b, void *ctx)
{
	struct top *t = ctx;
	const struct node *l = &t->nodes[*(const size_t *)a];
	const struct node *r = &t->nodes[*(const size_t *)b];
	int c;

	if (abs64(l->flat) != abs64(r->flat))
		return abs64(l->flat) > abs64(r->flat) ? -1 : 1;
	c = strcmp(folded_walk_name(&t->w, l->key),
		   folded_walk_name(&t->w, r->key));
	if (c)
		return c;
	if (abs64(l->cum) != abs64(r->cum))
		return abs64(l->cum) > abs64(r->cum) ? -1 : 1;
	return l->key < r->key ? -1 : l->key > r->key;
}

/* pprof's selectOutputUnit. */
static void select_unit(struct top *t)
{
	int64_t min = 0, max = t->total, m;
	const char *umin, *umax, *u;
	double v;
	size_t i;

	t->out_unit = "minimum";
	if (!t->nkept)
		return;
	for (i = 0; i < t->nkept; i++) {
		const struct node *n = &t->nodes[t->order[i]];

		m = n->flat ? abs64(n->flat) : abs64(n->cum);
		if (m > 0 && (!min || m < min))
			min = m;
	}
	if (!min)
		min = max;
	scale(min, t->unit, "minimum", &v, &umin);
	scale(max, t->unit, "minimum", &v, &umax);
	u = umin;
	if (strcmp(umin, umax) && min * 100 < max)
		scale(100 * min, t->unit, "minimum", &v, &u);
	t->out_unit = *u ? u : t->unit;
}

static void fmt_value(const struct top *t, int64_t v, char *buf,
		      size_t len)
{
	scaled_label(v, t->unit, t->out_unit, buf, len);
}

static void put_time(struct folded_buf *b, int64_t nanos)
{
	time_t sec = nanos / 1000000000;
	char s[80], ampm[4];
	struct tm tm;

	if (!localtime_r(&sec, &tm))
		return;
	/* Go's "Jan 2, 2006 at 3:04pm (MST)". */
	strftime(ampm, sizeof(ampm), "%p", &tm);
	ampm[0] = ampm[0] == 'P' ? 'p' : 'a';
	ampm[1] = 'm';
	strftime(s, sizeof(s), "%b %-d, %Y at %-I:%M", &tm);
	folded_buf_printf(b, "Time: %s%s", s, ampm);
	strftime(s, sizeof(s), " (%Z)\n", &tm);
	folded_buf_puts(b, s);
}

static void put_duration(struct folded_buf *b, const struct top *t,
			 int64_t dur)
{
	char d[64], tot[64], pct[16] = "";
	const char *u;
	double ns;

	scaled_label(dur, "nanoseconds", "auto", d, sizeof(d));
	fmt_value(t, t->total, tot, sizeof(tot));
	scale(t->total, t->unit, "nanoseconds", &ns, &u);
	if (!strcmp(u, "ns") && ns != 0)
		percentage((int64_t)ns, dur, pct, sizeof(pct));
	folded_buf_printf(b, "Duration: %s, Total samples = %s %s%s%s\n", d,
			  tot, *pct ? "(" : "", pct, *pct ? ")" : "");
}

/* pprof's ProfileLabels. */
static void put_profile_labels(struct folded_buf *b, const struct top *t)
{
	const struct profile *p = t->w.p;
	const struct pf_header *h = profile_header_const(p);
	const struct pf_mapping *m = profile_mapping(p, 1);
	size_t i;

	if (!h->pid && *profile_str(p, h->command)) {
		/* a whole host's (/prof/all): not its first process's */
		folded_buf_printf(b, "File: %s\n", profile_str(p, h->command));
	} else if (h->pid && h->name > 0 && *profile_str(p, h->name)) {
		/* the process's own name, not its first mapping's file */
		folded_buf_printf(b, "File: %s\n", profile_str(p, h->name));
	} else if (m && *profile_str(p, m->filename)) {
		const char *f = profile_str(p, m->filename);
		const char *base = strrchr(f, '/');

		folded_buf_printf(b, "File: %s\n", base && base[1] ?
				  base + 1 : f);
	}
	if (m && *profile_str(p, m->build_id))
		folded_buf_printf(b, "Build ID: %s\n",
				  profile_str(p, m->build_id));
	for (i = 0; i < profile_ncomments(p); i++) {
		const char *c = profile_str(p, profile_comment(p, i));

		if (c[0] != '#')
			folded_buf_printf(b, "%s\n", c);
	}
	folded_buf_printf(b, "Type: %s\n",
			  profile_str(p, profile_sample_type(p, t->vi)->type));
	if (h->time_nanos)
		put_time(b, h->time_nanos);
	if (h->duration_nanos)
		put_duration(b, t, h->duration_nanos);
}

static void put_header(struct folded_buf *b, const struct top *t)
{
	char a[64], c[64], pct[16];

	put_profile_labels(b, t);
	fmt_value(t, t->shown, a, sizeof(a));
	fmt_value(t, t->total, c, sizeof(c));
	percentage(t->shown, t->total, pct, sizeof(pct));
	folded_buf_printf(b, "Showing nodes accounting for %s, %s of %s "
			  "total\n", a, pct + strspn(pct, " "), c);
	if (t->total && t->dropped) {
		fmt_value(t, abs64((int64_t)((double)t->total *
					     NODE_FRACTION)), a, sizeof(a));
		folded_buf_printf(b, "Dropped %zu node%s (cum <= %s)\n",
				  t->dropped, t->dropped > 1 ? "s" : "", a);
	}
	folded_buf_printf(b, "%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat",
			  "sum", "cum", "cum");
}

static void put_rows(struct folded_buf *b, const struct top *t)
{
	char flat[64], cum[64], fp[16], sp[16], cp[16];
	int64_t sum = 0;
	size_t i;

	for (i = 0; i < t->nkept; i++) {
		const struct node *n = &t->nodes[t->order[i]];
		const char *inl = "";

		if (n->in_inline)
			inl = n->in_plain ? " (partial-inline)" : " (inline)";
		sum += n->flat;
		fmt_value(t, n->flat, flat, sizeof(flat));
		fmt_value(t, n->cum, cum, sizeof(cum));
		percentage(n->flat, t->total, fp, sizeof(fp));
		percentage(sum, t->total, sp, sizeof(sp));
		percentage(n->cum, t->total, cp, sizeof(cp));
		folded_buf_printf(b, "%10s %s %s %10s %s  %s%s\n", flat, fp,
				  sp, cum, cp, folded_walk_name(&t->w, n->key),
				  inl);
	}
}

int text_top_render(const struct profile *p, int sample_index, char **buf,
		    size_t *len)
{
	struct folded_buf out = { 0 };
	struct top t = { 0 };
	int ret;

	ret = folded_sample_index(p, sample_index, &t.vi);
	if (ret)
		return ret;
	t.unit = profile_str(p, profile_sample_type(p, t.vi)->unit);
	ret = folded_walk_init(&t.w, p);
	if (ret)
		return ret;
	t.nodes = calloc(t.w.nkeys, sizeof(*t.nodes));
	t.order = calloc(t.w.nkeys, sizeof(*t.order));
	ret = -ENOMEM;
	if (!t.nodes || !t.order)
		goto out;
	ret = count_all(&t);
	if (ret)
		goto out;
	trim(&t);
	ret = link_all(&t);
	if (ret)
		goto out;
	qsort_r(t.order, t.nkept, sizeof(*t.order), node_cmp, &t);
	select_unit(&t);
	put_header(&out, &t);
	put_rows(&out, &t);
	ret = folded_buf_finish(&out, buf, len);
out:
	free(t.edges);
	free(t.order);
	free(t.nodes);
	folded_walk_fini(&t.w);
	return ret;
}
