// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * flame.c - interactive SVG flame graphs.
 *
 * Samples are merged into a call tree (a node per distinct root-first
 * path, found through one hash table keyed by parent and frame), children
 * are sorted by name, and the tree is written depth-first so that a
 * frame's descendants follow it: the script finds a subtree as "the next
 * frames drawn above it" and needs no ids or parent links in the file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/flame.h"
#include "render/folded.h"
#include "sampler/model/profile.h"
#include "render/text.h"

#define WIDTH		1200
#define PAD		10
#define GRAPH_W		(WIDTH - 2 * PAD)
#define FRAME_H		16
#define TOP		72
#define BOTTOM		28
#define CHAR_W		6.6	/* 11px monospace; the script agrees */
#define DEFAULT_MIN_PX	0.1
#define NONE		UINT32_MAX

struct fnode {
	int64_t key;
	int64_t value;
	int64_t base;		/* diff: the base's value, positive */
	uint32_t parent, child, next;
	uint32_t depth;
};

struct tree {
	struct folded_walk w;
	struct fnode *nodes;
	uint32_t n, cap;
	uint32_t *slots;	/* hash of (parent, key) -> node */
	size_t nslots;
	const char *unit;
	int64_t total;
	int64_t vmin;		/* frames below this value are left out */
	uint32_t max_depth;	/* of the frames drawn */
	bool diff;		/* flame_opts.diff */
	bool *runtime;		/* runtime_keys(), or NULL */
};

/* Whether s is a base sample of a differential profile. */
static bool is_base(const struct profile *p, const struct pf_sample *s)
{
	for (uint32_t i = 0; i < s->nlabels; i++)
		if (!strcmp(profile_str(p, s->labels[i].key), "pprof::base"))
			return true;
	return false;
}

static size_t slot_hash(uint32_t parent, int64_t key, size_t n)
{
	uint64_t h = ((uint64_t)parent << 32 ^ (uint64_t)key) *
		     0x9e3779b97f4a7c15ull;

	return (h >> 17) % n;
}

static int tree_grow(struct tree *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 4096, i, h;
	uint32_t *s;
	struct fnode *nn;

	nn = realloc(t->nodes, (n / 2) * sizeof(*nn));
	if (!nn)
		return -ENOMEM;
	t->nodes = nn;
	t->cap = n / 2;
	s = malloc(n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s, 0xff, n * sizeof(*s));
	for (i = 0; i < t->n; i++) {
		h = slot_hash(t->nodes[i].parent, t->nodes[i].key, n);
		while (s[h] != NONE)
			h = (h + 1) % n;
		s[h] = i;
	}
	free(t->slots);
	t->slots = s;
	t->nslots = n;
	return 0;
}

/* The child of parent for key, created if new; NONE on -ENOMEM. */
static uint32_t tree_child(struct tree *t, uint32_t parent, int64_t key)
{
	struct fnode *c;
	size_t h;

	if (t->n + 1 > t->cap && tree_grow(t))
		return NONE;
	h = slot_hash(parent, key, t->nslots);
	for (; t->slots[h] != NONE; h = (h + 1) % t->nslots) {
		c = &t->nodes[t->slots[h]];
		if (c->parent == parent && c->key == key)
			return t->slots[h];
	}
	t->slots[h] = t->n;
	c = &t->nodes[t->n];
	*c = (struct fnode){ .key = key, .parent = parent, .child = NONE,
			     .next = NONE };
	if (parent != NONE) {
		c->depth = t->nodes[parent].depth + 1;
		c->next = t->nodes[parent].child;
		t->nodes[parent].child = t->n;
	}
	return t->n++;
}

static int tree_build(struct tree *t, size_t vi)
{
	const struct profile *p = t->w.p;
	size_t ns = profile_nsamples(p), i, k;
	uint32_t cur;

	if (tree_child(t, NONE, 0) == NONE)	/* "all" */
		return -ENOMEM;
	for (i = 0; i < ns; i++) {
		const struct pf_sample *s = profile_sample(p, i);
		int64_t v = s->values[vi];
		bool base = t->diff && is_base(p, s);

		if (!v)
			continue;
		if (folded_walk_stack(&t->w, s))
			return -ENOMEM;
		cur = 0;
		if (base)
			t->nodes[0].base -= v;
		else
			t->nodes[0].value += v;
		for (k = 0; k < t->w.n; k++) {
			cur = tree_child(t, cur, t->w.keys[k]);
			if (cur == NONE)
				return -ENOMEM;
			if (base)
				t->nodes[cur].base -= v;
			else
				t->nodes[cur].value += v;
		}
	}
	t->total = t->nodes[0].value;
	return 0;
}

static int name_cmp(const void *a, const void *b, void *ctx)
{
	struct tree *t = ctx;
	const struct fnode *l = &t->nodes[*(const uint32_t *)a];
	const struct fnode *r = &t->nodes[*(const uint32_t *)b];
	int c = strcmp(folded_walk_name(&t->w, l->key),
		       folded_walk_name(&t->w, r->key));

	return c ? c : (l->key > r->key) - (l->key < r->key);
}

/* Relink every child list in name order. */
static int tree_sort(struct tree *t)
{
	uint32_t *tmp = malloc((t->n + 1) * sizeof(*tmp)), i, c, k;

	if (!tmp)
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		k = 0;
		for (c = t->nodes[i].child; c != NONE; c = t->nodes[c].next)
			tmp[k++] = c;
		if (k < 2)
			continue;
		qsort_r(tmp, k, sizeof(*tmp), name_cmp, t);
		t->nodes[i].child = tmp[0];
		for (c = 0; c + 1 < k; c++)
			t->nodes[tmp[c]].next = tmp[c + 1];
		t->nodes[tmp[k - 1]].next = NONE;
	}
	free(tmp);
	return 0;
}

static int value_desc(const void *a, const void *b)
{
	int64_t l = *(const int64_t *)a, r = *(const int64_t *)b;

	return (l < r) - (l > r);
}

/*
 * The smallest value drawn: min_width_px's worth, raised so that at most
 * FLAME_MAX_FRAMES frames are drawn. A child never outweighs its parent,
 * so the frames kept always form a tree.
 */
static int pick_vmin(struct tree *t, double min_px)
{
	int64_t *v;
	uint32_t i, k = 0;

	t->vmin = 1;
	if (min_px > 0)
		t->vmin = (int64_t)(min_px * t->total / GRAPH_W);
	if (t->vmin < 1)
		t->vmin = 1;
	v = malloc(t->n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < t->n; i++)
		if (t->nodes[i].value >= t->vmin)
			v[k++] = t->nodes[i].value;
	if (k > FLAME_MAX_FRAMES) {
		qsort(v, k, sizeof(*v), value_desc);
		t->vmin = v[FLAME_MAX_FRAMES] + 1;
	}
	t->max_depth = 0;
	for (i = 0; i < t->n; i++)
		if (t->nodes[i].value >= t->vmin &&
		    t->nodes[i].depth > t->max_depth)
			t->max_depth = t->nodes[i].depth;
	free(v);
	return 0;
}

/* XML text: escaped, invalid UTF-8 and control bytes as '?'. */
static void put_esc_n(struct folded_buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k, len;

	while (i < n) {
		unsigned char c = u[i];

		len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 :
		      (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		for (k = 1; len && k < len; k++)
			if (i + k >= n || (u[i + k] & 0xc0) != 0x80)
				len = 0;
		if (len > 1 && c >= 0xc2 && c <= 0xf4) {
			folded_buf_put(b, s + i, len);
			i += len;
			continue;
		}
		i++;
		if (c == '&')
			folded_buf_puts(b, "&amp;");
		else if (c == '<')
			folded_buf_puts(b, "&lt;");
		else if (c == '>')
			folded_buf_puts(b, "&gt;");
		else if (c == '"')
			folded_buf_puts(b, "&quot;");
		else if (c == '\'')
			folded_buf_puts(b, "&apos;");
		else if (c >= 0x80 || (c < 0x20 && c != '\t'))
			folded_buf_put(b, "?", 1);
		else
			folded_buf_put(b, (const char *)&c, 1);
	}
}

static void put_esc(struct folded_buf *b, const char *s)
{
	put_esc_n(b, s, strlen(s));
}

/* The label that fits w px, as the script computes it. */
static void put_label(struct folded_buf *b, const char *name, double w)
{
	int fit = (int)((w - 6) / CHAR_W);
	size_t n = strlen(name);

	if (fit < 3)
		return;
	if (n <= (size_t)fit) {
		put_esc(b, name);
		return;
	}
	n = fit - 2;
	while (n && ((unsigned char)name[n] & 0xc0) == 0x80)
		n--;
	put_esc_n(b, name, n);
	folded_buf_puts(b, "..");
}

/* Frames of a runtime (pf_function.runtime: Python's functions, Java's
 * methods), in every kind of profile: purples, apart from the native
 * frames around them. */
#define PALETTE_RUNTIME (FLAME_OFFCPU + 1)

/*
 * Each palette: per channel a base and a span the name's hash moves it
 * through, and which byte of the hash does (so channels vary apart).
 */
static const struct {
	int base[3], span[3], byte[3];
} palettes[] = {
	[FLAME_WARM] = { { 205, 0, 0 }, { 50, 230, 55 }, { 2, 0, 1 } },
	[FLAME_MEMORY] = { { 0, 170, 0 }, { 40, 70, 60 }, { 0, 1, 2 } },
	/* cool blues: time spent off the CPU */
	[FLAME_OFFCPU] = { { 20, 90, 190 }, { 50, 100, 65 }, { 0, 1, 2 } },
	[PALETTE_RUNTIME] = { { 140, 70, 200 }, { 60, 50, 55 }, { 0, 1, 2 } },
};

/*
 * Which keys are the names of runtime frames (pf_function.runtime, set by
 * the sampler that read them from the runtime), by string index: NULL
 * when none is, so most profiles need no array.
 */
static int runtime_keys(const struct profile *p, bool **out)
{
	size_t n = profile_nfunctions(p);

	*out = NULL;
	for (uint64_t id = 1; id <= n; id++) {
		const struct pf_function *f = profile_function(p, id);

		if (!f->runtime || f->name <= 0)
			continue;
		if (!*out && !(*out = calloc(profile_nstrings(p), 1)))
			return -ENOMEM;
		(*out)[f->name] = true;
	}
	return 0;
}

static void colour(const char *name, enum flame_palette pal, char out[8])
{
	uint32_t h = 2166136261u;
	int c[3];

	if ((unsigned)pal >= sizeof(palettes) / sizeof(palettes[0]))
		pal = FLAME_WARM;
	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	for (int i = 0; i < 3; i++)
		c[i] = palettes[pal].base[i] + (int)(palettes[pal].span[i] *
			((h >> (8 * palettes[pal].byte[i])) & 0xff) / 255.0);
	snprintf(out, 8, "#%02x%02x%02x", c[0] & 0xff, c[1] & 0xff,
		 c[2] & 0xff);
}

/*
 * A differential frame's fill: white where nothing changed, to full red
 * where it is all new, full blue where it all went (the change relative
 * to the larger of the two values).
 */
static void diff_colour(int64_t value, int64_t base, char out[8])
{
	int64_t big = value > base ? value : base;
	double r = big ? (double)(value - base) / big : 0;
	int fade = 230 - (int)(200 * (r < 0 ? -r : r));

	if (r >= 0)
		snprintf(out, 8, "#ff%02x%02x", fade & 0xff, fade & 0xff);
	else
		snprintf(out, 8, "#%02x%02xff", fade & 0xff, fade & 0xff);
}

static void put_diff_title(struct folded_buf *b, const struct fnode *f,
			   const char *unit)
{
	char nv[64], bv[64], dv[64];
	int64_t d = f->value - f->base;

	text_format_value(f->value, unit, nv, sizeof(nv));
	text_format_value(f->base, unit, bv, sizeof(bv));
	text_format_value(d < 0 ? -d : d, unit, dv, sizeof(dv));
	folded_buf_printf(b, " (new %s, base %s, delta %s%s", nv, bv,
			  d < 0 ? "-" : "+", dv);
	if (f->base)
		folded_buf_printf(b, ", %+.1f%%)", 100.0 * d / f->base);
	else
		folded_buf_puts(b, ", new)");
}

static void put_frame(struct folded_buf *b, struct tree *t, uint32_t i,
		      int64_t offset, enum flame_palette mem)
{
	const struct fnode *f = &t->nodes[i];
	const char *name = i ? folded_walk_name(&t->w, f->key) : "all";
	double tot = t->total ? (double)t->total : 1;
	double x = PAD + offset * GRAPH_W / tot;
	double w = i ? f->value * GRAPH_W / tot : GRAPH_W;
	int y = TOP + (t->max_depth - f->depth) * FRAME_H;
	char val[64], fill[8];

	text_format_value(f->value, t->unit, val, sizeof(val));
	if (t->diff)
		diff_colour(f->value, f->base, fill);
	else
		colour(name, t->runtime && f->key > 0 && t->runtime[f->key] ?
		       (enum flame_palette)PALETTE_RUNTIME : mem, fill);
	folded_buf_printf(b, "<g class=\"frame\" data-v=\"%" PRId64
			  "\"", f->value);
	if (t->diff)
		folded_buf_printf(b, " data-d=\"%" PRId64 "\"",
				  f->value - f->base);
	folded_buf_puts(b, "><title>");
	put_esc(b, name);
	if (t->diff)
		put_diff_title(b, f, t->unit);
	else
		folded_buf_printf(b, " (%s, %.2f%%)", val,
				  100.0 * f->value / tot);
	folded_buf_printf(b, "</title><rect x=\"%.2f\" "
			  "y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\""
			  "/><text x=\"%.2f\" y=\"%d\">", x, y, w, FRAME_H - 1,
			  fill, x + 3, y + FRAME_H - 4);
	put_label(b, name, w);
	folded_buf_puts(b, "</text></g>\n");
}

/* Depth first, children in name order, without recursion. */
static int put_frames(struct folded_buf *b, struct tree *t,
		      enum flame_palette mem)
{
	uint32_t *stack = malloc((t->max_depth + 2) * sizeof(*stack));
	int64_t *off = malloc((t->max_depth + 2) * sizeof(*off));
	uint32_t sp = 0, c;

	if (!stack || !off) {
		free(stack);
		free(off);
		return -ENOMEM;
	}
	stack[0] = 0;
	off[0] = 0;
	put_frame(b, t, 0, 0, mem);
	/* stack[d] is the node drawn last at depth d; off[d] its end. */
	c = t->nodes[0].child;
	while (1) {
		for (; c != NONE && t->nodes[c].value < t->vmin;
		     c = t->nodes[c].next)
			off[sp] += t->nodes[c].value;
		if (c == NONE) {
			if (!sp)
				break;
			c = t->nodes[stack[sp]].next;
			sp--;
			continue;
		}
		put_frame(b, t, c, off[sp], mem);
		off[sp + 1] = off[sp];
		off[sp] += t->nodes[c].value;
		stack[++sp] = c;
		c = t->nodes[c].child;
	}
	free(stack);
	free(off);
	return 0;
}

static const char style[] =
	"<style>\n"
	"text{font-family:monospace;font-size:11px;fill:#000}\n"
	".frame{cursor:pointer}\n"
	".frame text{pointer-events:none}\n"
	".frame:hover rect{stroke:#000;stroke-width:0.5}\n"
	".dim{opacity:0.6}\n"
	".ctl{cursor:pointer;font-size:12px;fill:#225}\n"
	".off{opacity:0.35}\n"
	".on{fill:#e600e6}\n"
	".title{font-size:17px;text-anchor:middle}\n"
	".sub{font-size:12px;text-anchor:middle;fill:#444}\n"
	"</style>\n";

/*
 * Frames are found by class and read once: x, width, depth (-y), name
 * (the <title> up to its last " ("), value (data-v). en[i] is the index
 * after i's subtree, which depth-first order makes contiguous.
 */
static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"var PAD = 10, GW = 1180, CW = 6.6, HIT = '#e600e6';\n"
	"var fr = [], ox = [], ow = [], dy = [], nm = [], vs = [], fl = [];\n"
	"var rc = [], tx = [], en = [], zoomed = -1, searching = false;\n"
	"function byId(id) { return document.getElementById(id); }\n"
	"function part(g, tag) { return g.getElementsByTagName(tag)[0]; }\n"
	"function place(i, x, w) {\n"
	"  var r = rc[i], t = tx[i];\n"
	"  var n = Math.floor((w - 6) / CW), s = nm[i];\n"
	"  r.setAttribute('x', x.toFixed(2));\n"
	"  r.setAttribute('width', w.toFixed(2));\n"
	"  t.setAttribute('x', (x + 3).toFixed(2));\n"
	"  t.textContent = n < 3 ? '' :\n"
	"    (s.length <= n ? s : s.substring(0, n - 2) + '..');\n"
	"}\n"
	"function zoom(i) {\n"
	"  var x0 = ox[i], s = GW / ow[i], j, g;\n"
	"  for (j = 0; j < fr.length; j++) {\n"
	"    g = fr[j];\n"
	"    if (j >= i && j < en[i]) {\n"
	"      g.style.display = '';\n"
	"      g.classList.remove('dim');\n"
	"      place(j, PAD + (ox[j] - x0) * s, ow[j] * s);\n"
	"    } else if (j < i && en[j] > i) {\n"
	"      g.style.display = '';\n"
	"      g.classList.add('dim');\n"
	"      place(j, PAD, GW);\n"
	"    } else {\n"
	"      g.style.display = 'none';\n"
	"    }\n"
	"  }\n"
	"  zoomed = i;\n"
	"  byId('reset').classList.remove('off');\n"
	"}\n"
	"function unzoom() {\n"
	"  for (var j = 0; j < fr.length; j++) {\n"
	"    fr[j].style.display = '';\n"
	"    fr[j].classList.remove('dim');\n"
	"    place(j, ox[j], ow[j]);\n"
	"  }\n"
	"  zoomed = -1;\n"
	"  byId('reset').classList.add('off');\n"
	"}\n"
	"function search(re) {\n"
	"  var j, r, rx, sum = 0, cov = 0, pct;\n"
	"  var clear = re === null || re === undefined || re === '';\n"
	"  if (!clear)\n"
	"    rx = re instanceof RegExp ? re : new RegExp(re);\n"
	"  for (j = 0; j < fr.length; j++) {\n"
	"    r = rc[j];\n"
	"    if (!clear && rx.test(nm[j])) {\n"
	"      r.setAttribute('fill', HIT);\n"
	"      if (j >= cov) { sum += vs[j]; cov = en[j]; }\n"
	"    } else {\n"
	"      r.setAttribute('fill', fl[j]);\n"
	"    }\n"
	"  }\n"
	"  searching = !clear;\n"
	"  byId('search').classList.toggle('on', searching);\n"
	"  pct = vs[0] ? 100 * sum / vs[0] : 0;\n"
	"  byId('matched').textContent = clear ? ' ' :\n"
	"    'Matched: ' + pct.toFixed(1) + '%';\n"
	"  return clear ? 0 : pct;\n"
	"}\n"
	"function ask() {\n"
	"  if (searching) { search(null); return; }\n"
	"  var re = prompt('Search frames (regular expression)', '');\n"
	"  if (re) search(re);\n"
	"}\n"
	"function show(e) {\n"
	"  byId('details').textContent = part(this, 'title').textContent;\n"
	"}\n"
	"function hide(e) { byId('details').textContent = ' '; }\n"
	"function init() {\n"
	"  var gs = document.getElementsByClassName('frame'), i, j, g, r, t;\n"
	"  for (i = 0; i < gs.length; i++) {\n"
	"    g = gs[i];\n"
	"    r = part(g, 'rect');\n"
	"    t = part(g, 'title').textContent;\n"
	"    fr.push(g);\n"
	"    rc.push(r);\n"
	"    tx.push(part(g, 'text'));\n"
	"    ox.push(+r.getAttribute('x'));\n"
	"    ow.push(+r.getAttribute('width'));\n"
	"    dy.push(-r.getAttribute('y'));\n"
	"    nm.push(t.substring(0, t.lastIndexOf(' (')));\n"
	"    vs.push(+g.getAttribute('data-v'));\n"
	"    fl.push(r.getAttribute('fill'));\n"
	"    g.addEventListener('click', zoom.bind(null, i));\n"
	"    g.addEventListener('mouseover', show);\n"
	"    g.addEventListener('mouseout', hide);\n"
	"  }\n"
	"  for (i = gs.length - 1; i >= 0; i--) {\n"
	"    for (j = i + 1; j < gs.length && dy[j] > dy[i]; j = en[j]);\n"
	"    en[i] = j;\n"
	"  }\n"
	"  byId('reset').addEventListener('click', unzoom);\n"
	"  byId('search').addEventListener('click', ask);\n"
	"}\n"
	"init();\n"
	"]]></script>\n";

static int default_titles(const struct profile *p, const struct tree *t,
			  size_t vi, char **title, char **sub)
{
	const struct pf_header *h = profile_header_const(p);
	const struct pf_value_type *st = profile_sample_type(p, vi);
	const char *kind = profile_str(p, h->kind);
	const char *cmd = profile_str(p, h->command);
	char win[64] = "", tot[64];

	if (h->duration_nanos)
		text_format_value(h->duration_nanos, "nanoseconds", win,
				  sizeof(win));
	text_format_value(t->total, t->unit, tot, sizeof(tot));
	if (asprintf(title, "%s%sprofile: pid %d%s%s%s", kind,
		     *kind ? " " : "", h->pid, *cmd ? " (" : "", cmd,
		     *cmd ? ")" : "") < 0)
		goto fail;
	/* An empty graph says why, if the profile does (its last
	 * comment: "process N did not run ..."). */
	if (!t->total && profile_ncomments(p)) {
		if (asprintf(sub, "%s", profile_str(p, profile_comment(p,
				profile_ncomments(p) - 1))) < 0) {
			free(*title);
			goto fail;
		}
	} else if (asprintf(sub, "%s (%s)%s%s, total %s",
		     profile_str(p, st->type), profile_str(p, st->unit),
		     *win ? ", window " : "", win, tot) < 0) {
		free(*title);
		goto fail;
	}
	return 0;
fail:
	*title = *sub = NULL;
	return -ENOMEM;
}

static void put_document(struct folded_buf *b, struct tree *t,
			 const char *title, const char *sub,
			 enum flame_palette mem)
{
	int h = TOP + (t->max_depth + 1) * FRAME_H + BOTTOM;

	folded_buf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\" "
			  "standalone=\"no\"?>\n<svg version=\"1.1\" "
			  "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
			  "xmlns=\"http://www.w3.org/2000/svg\">\n", WIDTH, h,
			  WIDTH, h);
	folded_buf_puts(b, style);
	folded_buf_printf(b, "<rect x=\"0\" y=\"0\" width=\"%d\" "
			  "height=\"%d\" fill=\"#f6f6f0\"/>\n", WIDTH, h);
	folded_buf_printf(b, "<text class=\"title\" x=\"%d\" y=\"24\">",
			  WIDTH / 2);
	put_esc(b, title);
	folded_buf_printf(b, "</text>\n<text class=\"sub\" x=\"%d\" "
			  "y=\"44\">", WIDTH / 2);
	put_esc(b, sub);
	folded_buf_printf(b, "</text>\n<text id=\"reset\" class=\"ctl off\" "
			  "x=\"%d\" y=\"62\">Reset Zoom</text>\n"
			  "<text id=\"search\" class=\"ctl\" x=\"%d\" "
			  "y=\"62\" text-anchor=\"end\">Search</text>\n"
			  "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
			  "<text id=\"matched\" x=\"%d\" y=\"%d\" "
			  "text-anchor=\"end\"> </text>\n", PAD, WIDTH - PAD,
			  PAD, h - 10, WIDTH - PAD, h - 10);
	folded_buf_puts(b, "<g id=\"frames\">\n");
	if (put_frames(b, t, mem) && !b->err)
		b->err = -ENOMEM;
	folded_buf_puts(b, "</g>\n");
	folded_buf_puts(b, script);
	folded_buf_puts(b, "</svg>\n");
}

int flame_render(const struct profile *p, const struct flame_opts *o,
		 char **buf, size_t *len)
{
	static const struct flame_opts dflt = { .sample_index = -1 };
	struct folded_buf out = { 0 };
	struct tree t = { 0 };
	char *title = NULL, *sub = NULL;
	size_t vi;
	int ret;

	if (!o)
		o = &dflt;
	ret = folded_sample_index(p, o->sample_index, &vi);
	if (ret)
		return ret;
	t.unit = profile_str(p, profile_sample_type(p, vi)->unit);
	t.diff = o->diff;
	ret = folded_walk_init(&t.w, p);
	if (ret)
		return ret;
	ret = runtime_keys(p, &t.runtime);
	if (!ret)
		ret = tree_build(&t, vi);
	if (!ret)
		ret = tree_sort(&t);
	if (!ret)
		ret = pick_vmin(&t, o->min_width_px ? o->min_width_px :
				DEFAULT_MIN_PX);
	if (!ret)
		ret = default_titles(p, &t, vi, &title, &sub);
	if (ret)
		goto out;
	/* An empty graph's subtitle is why it is empty, if the profile
	 * says (default_titles), whatever the caller's subtitle. */
	put_document(&out, &t, o->title ? o->title : title,
		     o->subtitle && (t.total || !profile_ncomments(p)) ?
		     o->subtitle : sub, o->palette);
	ret = folded_buf_finish(&out, buf, len);
out:
	free(title);
	free(sub);
	free(t.runtime);
	free(t.slots);
	free(t.nodes);
	folded_walk_fini(&t.w);
	return ret;
}
