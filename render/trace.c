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
	int64_t state;		/* an off-CPU interval's state, or 0 */
	int64_t dur;		/* its length in ns */
	long pid;		/* its process (a whole-host trace) */
	int64_t comm;		/* that process's command string, or 0 */
	size_t i;		/* the profile's sample */
};

struct keys {
	int64_t thread, thread_name, ts, state, dur, pid, comm;
};

static int by_thread_time(const void *a, const void *b)
{
	const struct tsample *l = a, *r = b;

	if (l->pid != r->pid)
		return l->pid < r->pid ? -1 : 1;
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
static void put_event(struct folded_buf *b, const char *ph, long pid,
		      long tid, int64_t ns, const char *name)
{
	folded_buf_printf(b, ",\n{\"ph\":\"%s\",\"pid\":%ld,\"tid\":%ld,"
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
		} else if (l->key == k->state)
			t->state = l->str;
		else if (l->key == k->dur)
			t->dur = l->num;
		else if (l->key == k->pid)
			t->pid = strtol(profile_str(p, l->str), NULL, 10);
		else if (l->key == k->comm)
			t->comm = l->str;
	}
}

static int64_t key_of(const struct profile *p, const char *s)
{
	for (size_t i = 1; i < profile_nstrings(p); i++)
		if (!strcmp(profile_str(p, i), s))
			return i;
	return -1;
}

/* One thread's track as it is written: the on-CPU frames open, or the
 * off-CPU slice open (wait, with its stack), and where they reach. */
struct track {
	struct folded_buf *b;
	struct folded_walk *w;
	long pid, tid;
	int64_t *open;
	size_t nopen, cap;
	char *wait, *stack;
	int64_t end;		/* of the last slice, open or not */
};

static void close_all(struct track *t)
{
	while (t->nopen) {
		t->nopen--;
		put_event(t->b, "E", t->pid, t->tid, t->end,
			  folded_walk_name(t->w, t->open[t->nopen]));
	}
	if (t->wait)
		put_event(t->b, "E", t->pid, t->tid, t->end, t->wait);
	free(t->wait);
	free(t->stack);
	t->wait = t->stack = NULL;
}

/* An on-CPU sample: the period before its time. */
static int put_cpu(struct track *t, const struct tsample *s, int64_t period)
{
	struct folded_walk *w = t->w;
	int64_t start = s->ts - (s->dur > 0 ? s->dur : period), at;
	size_t keep = 0;

	if (folded_walk_stack(w, profile_sample(w->p, s->i)))
		return -ENOMEM;
	/* off the CPU between the two, or in a wait: everything closes */
	if (t->wait || (t->nopen && start > t->end + period / 2))
		close_all(t);
	at = t->nopen || start < t->end ? t->end : (start > 0 ? start : 0);
	while (keep < t->nopen && keep < w->n &&
	       t->open[keep] == w->keys[keep])
		keep++;
	while (t->nopen > keep) {
		t->nopen--;
		put_event(t->b, "E", t->pid, t->tid, at,
			  folded_walk_name(w, t->open[t->nopen]));
	}
	if (w->n > t->cap) {
		int64_t *o = realloc(t->open, w->n * sizeof(*o));

		if (!o)
			return -ENOMEM;
		t->open = o;
		t->cap = w->n;
	}
	for (; t->nopen < w->n; t->nopen++) {
		t->open[t->nopen] = w->keys[t->nopen];
		put_event(t->b, "B", t->pid, t->tid, at,
			  folded_walk_name(w, w->keys[t->nopen]));
	}
	t->end = s->ts > at ? s->ts : at;
	return 0;
}

/* A wait's name: its system call ("[syscall] NAME" frame), else its
 * state (runnable: woken, waiting for a CPU). */
static const char *wait_name(const struct folded_walk *w, const char *state)
{
	static const char sc[] = "[syscall] ";

	if (!strcmp(state, "runnable"))
		return state;
	for (size_t i = w->n; i-- > 0;) {
		const char *f = folded_walk_name(w, w->keys[i]);

		if (!strncmp(f, sc, sizeof(sc) - 1) && f[sizeof(sc) - 1])
			return f + sizeof(sc) - 1;
	}
	return state;
}

/* The waiting stack, root first, as the folded format writes it. */
static char *stack_text(const struct folded_walk *w)
{
	struct folded_buf b = { 0 };
	char *s;
	size_t len;

	for (size_t i = 0; i < w->n; i++) {
		if (i)
			folded_buf_puts(&b, ";");
		folded_buf_puts(&b, folded_walk_name(w, w->keys[i]));
	}
	if (!w->n)
		folded_buf_puts(&b, "");
	if (folded_buf_finish(&b, &s, &len))
		return NULL;
	return s;
}

/* An off-CPU interval [ts - dur, ts) from the wall sampler's look, cut
 * to the time between the on-CPU samples around it (cpu_start: where
 * the next one begins): a slice named by its wait, or more of the one
 * open when it is the same wait at the same stack. */
static int put_wait(struct track *t, const struct tsample *s,
		    const char *state, int64_t cpu_start, int64_t period)
{
	struct folded_walk *w = t->w;
	int64_t start = s->ts - s->dur, end = s->ts;
	const char *name;
	char *stack;

	if (start < t->end)
		start = t->end;
	if (start < 0)
		start = 0;
	if (end > cpu_start)
		end = cpu_start;
	if (end <= start)
		return 0;
	if (folded_walk_stack(w, profile_sample(w->p, s->i)))
		return -ENOMEM;
	name = wait_name(w, state);
	stack = stack_text(w);
	if (!stack)
		return -ENOMEM;
	if (t->wait && !strcmp(t->wait, name) && !strcmp(t->stack, stack) &&
	    start <= t->end + period / 2) {
		free(stack);
		t->end = end;
		return 0;
	}
	close_all(t);
	t->wait = strdup(name);
	t->stack = stack;
	if (!t->wait)
		return -ENOMEM;
	folded_buf_printf(t->b, ",\n{\"ph\":\"B\",\"pid\":%ld,\"tid\":%ld,"
			  "\"ts\":%" PRId64 ".%03d,\"cat\":\"off-cpu\","
			  "\"name\":\"", t->pid, t->tid, start / 1000,
			  (int)(start % 1000));
	put_json(t->b, name);
	folded_buf_puts(t->b, "\",\"args\":{\"state\":\"");
	put_json(t->b, state);
	folded_buf_puts(t->b, "\",\"stack\":\"");
	put_json(t->b, stack);
	folded_buf_puts(t->b, "\"}}");
	t->end = end;
	return 0;
}

/* One thread's slices: samples ts[0..n) of it, in time order. */
static int put_thread(struct folded_buf *b, struct folded_walk *w,
		      const struct tsample *ts, size_t n, int64_t period)
{
	struct track t = { .b = b, .w = w, .pid = n ? ts[0].pid : 0,
			   .tid = n ? ts[0].tid : 0 };
	int64_t cpu_start = INT64_MAX;
	int64_t *next_cpu = malloc((n ? n : 1) * sizeof(*next_cpu));
	int ret = 0;

	if (!next_cpu)
		return -ENOMEM;
	/* where the next on-CPU sample's period begins, for each sample */
	for (size_t i = n; i-- > 0;) {
		next_cpu[i] = cpu_start;
		if (!ts[i].state)
			cpu_start = ts[i].ts - (ts[i].dur > 0 ? ts[i].dur
							      : period);
	}
	for (size_t i = 0; i < n && !ret; i++)
		ret = ts[i].state ?
		      put_wait(&t, &ts[i], profile_str(w->p, ts[i].state),
			       next_cpu[i], period) :
		      put_cpu(&t, &ts[i], period);
	close_all(&t);
	free(t.open);
	free(next_cpu);
	return ret;
}

/* A process's name, then its threads' (ts[0..n) sorted by pid, tid). */
static void put_metadata(struct folded_buf *b, const struct profile *p,
			 const struct tsample *ts, size_t n)
{
	const struct pf_header *h = profile_header_const(p);

	folded_buf_puts(b, "{\"traceEvents\":[");
	if (!n || ts[0].pid == h->pid) {
		folded_buf_printf(b, "\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
				  "\"name\":\"process_name\",\"args\":"
				  "{\"name\":\"", h->pid, h->pid);
		put_json(b, profile_str(p, h->command));
		folded_buf_puts(b, "\"}}");
	}
	for (size_t i = 0; i < n; i++) {
		if (i && ts[i].tid == ts[i - 1].tid &&
		    ts[i].pid == ts[i - 1].pid)
			continue;
		if (ts[i].pid != h->pid &&
		    (!i || ts[i].pid != ts[i - 1].pid)) {
			folded_buf_printf(b, "%s\n{\"ph\":\"M\",\"pid\":%ld,"
					  "\"tid\":%ld,\"name\":"
					  "\"process_name\",\"args\":"
					  "{\"name\":\"", i ? "," : "",
					  ts[i].pid, ts[i].pid);
			put_json(b, profile_str(p, ts[i].comm));
			folded_buf_printf(b, " %ld\"}}", ts[i].pid);
		}
		folded_buf_printf(b, ",\n{\"ph\":\"M\",\"pid\":%ld,\"tid\":%ld,"
				  "\"name\":\"thread_name\",\"args\":{\"name\":"
				  "\"", ts[i].pid, ts[i].tid);
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
		.state = key_of(p, "state"),
		.dur = key_of(p, "dur"),
		.pid = key_of(p, "pid"),
		.comm = key_of(p, "comm"),
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

		ts[n] = (struct tsample){ .i = i, .pid = h->pid };
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
	put_metadata(&out, p, ts, n);
	for (size_t i = 0, j; !ret && i < n; i = j) {
		for (j = i; j < n && ts[j].tid == ts[i].tid &&
			    ts[j].pid == ts[i].pid; j++)
			;
		ret = put_thread(&out, &w, ts + i, j - i, period);
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
