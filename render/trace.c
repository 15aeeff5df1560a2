// SPDX-License-Identifier: GPL-2.0-or-later
/* trace.c - a timeline profile as Chrome trace events. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/folded.h"
#include "sampler/model/profile.h"
#include "render/trace.h"

struct tsample {
	long tid;
	int64_t ts;		/* ns after the window's start */
	int64_t name;		/* thread_name string index */
	size_t i;		/* the profile's sample */
};

struct keys {
	int64_t thread, thread_name, ts;
};

static int by_thread_time(const void *a, const void *b)
{
	const struct tsample *l = a, *r = b;

	if (l->tid != r->tid)
		return l->tid < r->tid ? -1 : 1;
	if (l->ts != r->ts)
		return l->ts < r->ts ? -1 : 1;
	return (l->i > r->i) - (l->i < r->i);
}

/* JSON string contents: quotes, backslashes and control bytes escaped;
 * other bytes as they are (a reader decodes invalid UTF-8 as U+FFFD). */
static void put_json(struct folded_buf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	for (; *u; u++) {
		if (*u == '"' || *u == '\\')
			folded_buf_printf(b, "\\%c", *u);
		else if (*u < 0x20)
			folded_buf_printf(b, "\\u%04x", *u);
		else
			folded_buf_put(b, (const char *)u, 1);
	}
}

/* An "E" names the slice it ends: speedscope matches an end to the
 * open frame by name, and a nameless one at the timestamp of the next
 * "B" of a recursive function ended the wrong frame ("Tried to end
 * (unnamed) when chain was on the top of the stack"). */
static void put_event(struct folded_buf *b, const char *ph, int pid,
		      long tid, int64_t ns, const char *name)
{
	folded_buf_printf(b, ",\n{\"ph\":\"%s\",\"pid\":%d,\"tid\":%ld,"
			  "\"ts\":%" PRId64 ".%03d", ph, pid, tid, ns / 1000,
			  (int)(ns % 1000));
	if (name) {
		folded_buf_puts(b, ",\"name\":\"");
		put_json(b, name);
		folded_buf_puts(b, "\"");
	}
	folded_buf_puts(b, "}");
}

/* The label values of s, by key. */
static void labels_of(const struct profile *p, const struct pf_sample *s,
		      const struct keys *k, struct tsample *t, bool *has_ts)
{
	*has_ts = false;
	for (uint32_t i = 0; i < s->nlabels; i++) {
		const struct pf_label *l = &s->labels[i];

		if (l->key == k->thread)
			t->tid = strtol(profile_str(p, l->str), NULL, 10);
		else if (l->key == k->thread_name)
			t->name = l->str;
		else if (l->key == k->ts) {
			t->ts = l->num;
			*has_ts = true;
		}
	}
}

static int64_t key_of(const struct profile *p, const char *s)
{
	for (size_t i = 1; i < profile_nstrings(p); i++)
		if (!strcmp(profile_str(p, i), s))
			return i;
	return -1;
}

/* One thread's slices: samples ts[0..n) of it, in time order. */
static int put_thread(struct folded_buf *b, struct folded_walk *w,
		      const struct tsample *ts, size_t n, int pid,
		      int64_t period)
{
	const struct profile *p = w->p;
	int64_t *open = NULL, last_end = 0;
	size_t nopen = 0, cap = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t start = ts[i].ts - period, at;
		size_t keep = 0;

		if (folded_walk_stack(w, profile_sample(p, ts[i].i)))
			goto nomem;
		/* off the CPU between the two: everything closes */
		if (nopen && start > last_end + period / 2) {
			while (nopen--)
				put_event(b, "E", pid, ts[i].tid, last_end,
					  folded_walk_name(w, open[nopen]));
			nopen = 0;
		}
		at = nopen ? last_end : (start > 0 ? start : 0);
		while (keep < nopen && keep < w->n && open[keep] == w->keys[keep])
			keep++;
		while (nopen > keep) {
			nopen--;
			put_event(b, "E", pid, ts[i].tid, at,
				  folded_walk_name(w, open[nopen]));
		}
		if (w->n > cap) {
			int64_t *o = realloc(open, w->n * sizeof(*o));

			if (!o)
				goto nomem;
			open = o;
			cap = w->n;
		}
		for (; nopen < w->n; nopen++) {
			open[nopen] = w->keys[nopen];
			put_event(b, "B", pid, ts[i].tid, at,
				  folded_walk_name(w, w->keys[nopen]));
		}
		last_end = ts[i].ts > at ? ts[i].ts : at;
	}
	while (nopen--)
		put_event(b, "E", pid, n ? ts[n - 1].tid : 0, last_end,
			  folded_walk_name(w, open[nopen]));
	free(open);
	return 0;
nomem:
	free(open);
	return -ENOMEM;
}

static void put_metadata(struct folded_buf *b, const struct profile *p,
			 const struct tsample *ts, size_t n, int pid)
{
	const struct pf_header *h = profile_header_const(p);

	folded_buf_printf(b, "{\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":%d,"
			  "\"tid\":%d,\"name\":\"process_name\",\"args\":"
			  "{\"name\":\"", pid, pid);
	put_json(b, profile_str(p, h->command));
	folded_buf_puts(b, "\"}}");
	for (size_t i = 0; i < n; i++) {
		if (i && ts[i].tid == ts[i - 1].tid)
			continue;
		folded_buf_printf(b, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%ld,"
				  "\"name\":\"thread_name\",\"args\":{\"name\":"
				  "\"", pid, ts[i].tid);
		put_json(b, profile_str(p, ts[i].name));
		folded_buf_printf(b, " %ld\"}}", ts[i].tid);
	}
}

int trace_render(const struct profile *p, char **buf, size_t *len)
{
	const struct pf_header *h = profile_header_const(p);
	struct keys k = {
		.thread = key_of(p, "thread"),
		.thread_name = key_of(p, "thread_name"),
		.ts = key_of(p, "ts"),
	};
	struct folded_buf out = { 0 };
	struct folded_walk w;
	struct tsample *ts;
	size_t n = 0, ns = profile_nsamples(p);
	int64_t period = h->period > 0 ? h->period : 10000000;
	int ret;

	if (k.ts < 0 && ns)
		return -EINVAL;
	ts = calloc(ns ? ns : 1, sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	for (size_t i = 0; i < ns; i++) {
		bool has_ts;

		ts[n] = (struct tsample){ .i = i };
		labels_of(p, profile_sample(p, i), &k, &ts[n], &has_ts);
		n += has_ts;
	}
	if (ns && !n) {		/* samples, none with a time */
		free(ts);
		return -EINVAL;
	}
	qsort(ts, n, sizeof(*ts), by_thread_time);
	ret = folded_walk_init(&w, p);
	if (ret) {
		free(ts);
		return ret;
	}
	put_metadata(&out, p, ts, n, h->pid);
	for (size_t i = 0, j; !ret && i < n; i = j) {
		for (j = i; j < n && ts[j].tid == ts[i].tid; j++)
			;
		ret = put_thread(&out, &w, ts + i, j - i, h->pid, period);
	}
	folded_buf_puts(&out, "\n],\"displayTimeUnit\":\"ms\"}\n");
	folded_walk_fini(&w);
	free(ts);
	if (ret) {
		free(out.s);
		return ret;
	}
	return folded_buf_finish(&out, buf, len);
}
