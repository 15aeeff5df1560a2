// SPDX-License-Identifier: GPL-2.0-or-later
/* record_read.c - windows of the flight recorder's ring as profiles. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/log.h"
#include "sampler/model/profile.h"
#include "sampler/model/profile_merge.h"
#include "sampler/record/record.h"
#include "sampler/record/record_i.h"

/* The newest process of pid the ring has samples of; NULL when none. */
static struct rproc *find_locked(struct recorder *r, pid_t pid)
{
	for (struct rproc *p = r->procs[(uint32_t)pid % PROC_BUCKETS]; p;
	     p = p->next)
		if (p->pid == pid && !p->broken && p->refs)
			return p;
	return NULL;
}

int record_creds(struct recorder *r, pid_t pid, struct proc_creds *creds,
		 bool *exited)
{
	struct rproc *p;

	pthread_mutex_lock(&r->lock);
	p = find_locked(r, pid);
	if (p && creds)
		*creds = p->creds;
	if (p && exited)
		*exited = p->exited;
	pthread_mutex_unlock(&r->lock);
	return p ? 0 : -ENOENT;
}

/* Buckets (lo, hi] in seconds make the window. */
struct span {
	uint64_t lo, hi;
};

/* One entry of a bucket, for a timeline: its thread, where it was. */
struct tentry {
	uint32_t tid, stack, count, at;
};

static int by_tid_at(const void *a, const void *b)
{
	const struct tentry *l = a, *r = b;

	if (l->tid != r->tid)
		return l->tid < r->tid ? -1 : 1;
	return (l->at > r->at) - (l->at < r->at);
}

/* One thread's stacks of second sec, e[0..n), end to end (record.h). */
static int timeline_thread(struct rproc *p, struct profile *q,
			   const struct tentry *e, size_t n, int64_t at,
			   int64_t period, const int64_t keys[2])
{
	int64_t total = 0;
	int ret = 0;

	for (size_t i = 0; i < n; i++)
		total += e[i].count * period;
	for (size_t i = 0; !ret && i < n; i++) {
		const struct rstack *s = &p->stacks[e[i].stack];
		int64_t dur = e[i].count * period;
		struct pf_label labels[4] = {
			{ .key = p->key_thread, .str = s->tid_str },
			{ .key = p->key_thread_name, .str = s->name_str },
			{ .key = keys[0] },
			{ .key = keys[1] },
		};
		int64_t values[2] = { e[i].count, dur };

		if (total > 1000000000ll)	/* more than the second */
			dur = (int64_t)((__int128)dur * 1000000000ll / total);
		at += dur;
		labels[2].num = at;
		labels[3].num = dur;
		ret = profile_add_sample(q, s->locs, s->nlocs, labels, 4,
					 values);
	}
	return ret;
}

/* p's samples of the window as a timeline, into q (p->lock held). */
static int timeline_window(struct recorder *r, struct rproc *p,
			   const struct span *w, struct profile *q,
			   uint64_t *nsamples)
{
	int64_t period = 1000000000ll / r->o.hz;
	int64_t keys[2] = { profile_intern(q, "ts"), profile_intern(q, "dur") };
	struct tentry *e = NULL;
	int ret = keys[0] < 0 || keys[1] < 0 ? -ENOMEM : 0;

	for (uint64_t sec = w->lo + 1; !ret && sec <= w->hi; sec++) {
		const struct rbucket *b = &r->buckets[sec % r->nbuckets];
		size_t n = 0;

		if (b->sec != sec)
			continue;
		free(e);
		e = malloc((b->n ? b->n : 1) * sizeof(*e));
		if (!e)
			return -ENOMEM;
		for (uint32_t k = 0; k < b->n; k++)
			if (b->e[k].proc == p)
				e[n++] = (struct tentry){
					.tid = p->stacks[b->e[k].stack].tid,
					.stack = b->e[k].stack,
					.count = b->e[k].count, .at = k,
				};
		qsort(e, n, sizeof(*e), by_tid_at);
		for (size_t i = 0, j; !ret && i < n; i = j) {
			for (j = i; j < n && e[j].tid == e[i].tid; j++)
				*nsamples += e[j].count;
			ret = timeline_thread(p, q, e + i, j - i,
					      (int64_t)(sec - w->lo - 1) *
					      1000000000ll, period, keys);
		}
	}
	free(e);
	return ret;
}

/* p's samples of the window, as a profile sharing p's dictionary ids. */
static int proc_window(struct recorder *r, struct rproc *p,
		       const struct span *w, bool timeline,
		       struct profile **out, uint64_t *nsamples)
{
	uint32_t *counts;
	static const char *const none[] = { NULL };
	int64_t period = 1000000000ll / r->o.hz;
	struct profile *q = NULL;
	int ret;

	*nsamples = 0;
	pthread_mutex_lock(&p->lock);
	counts = calloc(p->nstacks ? p->nstacks : 1, sizeof(*counts));
	if (!counts) {
		pthread_mutex_unlock(&p->lock);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < r->nbuckets; i++) {
		const struct rbucket *b = &r->buckets[i];

		if (!b->sec || b->sec <= w->lo || b->sec > w->hi)
			continue;
		for (uint32_t k = 0; k < b->n; k++)
			if (b->e[k].proc == p)
				counts[b->e[k].stack] += b->e[k].count;
	}
	ret = profile_copy_dropping_labels(p->dict, none, &q);
	if (!ret && timeline)
		ret = timeline_window(r, p, w, q, nsamples);
	for (uint32_t i = 0; !ret && !timeline && i < p->nstacks; i++) {
		const struct rstack *s = &p->stacks[i];
		struct pf_label labels[2] = {
			{ .key = p->key_thread, .str = s->tid_str },
			{ .key = p->key_thread_name, .str = s->name_str },
		};
		int64_t values[2] = { counts[i], counts[i] * period };

		if (!counts[i])
			continue;
		*nsamples += counts[i];
		ret = profile_add_sample(q, s->locs, s->nlocs, labels, 2,
					 values);
	}
	pthread_mutex_unlock(&p->lock);
	free(counts);
	if (ret) {
		profile_free(q);
		return ret;
	}
	*out = q;
	return 0;
}

static int note(struct profile *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int note(struct profile *p, const char *fmt, ...)
{
	char text[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return profile_add_comment(p, text);
}

/* A process's window: its newest rproc's, with the samples of the ones
 * it took over from (retired contexts of the same process). */
static int pid_window(struct recorder *r, struct rproc *newest,
		      const struct span *w, bool timeline,
		      struct profile **out, uint64_t *nsamples)
{
	struct rproc *head = r->procs[(uint32_t)newest->pid % PROC_BUCKETS];
	int ret = proc_window(r, newest, w, timeline, out, nsamples);

	for (struct rproc *p = head; !ret && p; p = p->next) {
		struct profile *one = NULL;
		uint64_t n;

		if (p == newest || p->pid != newest->pid || p->broken ||
		    !p->refs || p->start != newest->start)
			continue;
		ret = proc_window(r, p, w, timeline, &one, &n);
		if (!ret && n)
			ret = profile_append(*out, one, 1, 1, NULL);
		*nsamples += ret ? 0 : n;
		profile_free(one);
	}
	if (ret) {
		profile_free(*out);
		*out = NULL;
	}
	return ret;
}

/* Every process q->allow() admits, with labels pid and comm. */
static int all_window(struct recorder *r, const struct record_query *q,
		      const struct span *w, struct profile **out,
		      uint64_t *nsamples)
{
	struct profile *all = NULL;
	char pidbuf[16];
	uint64_t n;
	int ret;

	*nsamples = 0;
	ret = profile_new(&all);
	if (!ret && (profile_add_sample_type(all, "samples", "count") ||
		     profile_add_sample_type(all, "cpu", "nanoseconds") ||
		     profile_set_period(all, "cpu", "nanoseconds",
					1000000000ll / r->o.hz)))
		ret = -ENOMEM;
	if (!ret) {
		struct pf_header *h = profile_header(all);

		h->command = profile_intern(all, q->all_title ? q->all_title
							      : "all processes");
		h->kind = profile_intern(all, "cpu");
		if (h->command < 0 || h->kind < 0)
			ret = -ENOMEM;
	}
	for (size_t b = 0; !ret && b < PROC_BUCKETS; b++)
		for (struct rproc *p = r->procs[b]; !ret && p; p = p->next) {
			const char *labels[] = { "pid", pidbuf, "comm",
						 p->comm, NULL };
			struct profile *one = NULL;

			if (p->broken || !p->refs ||
			    (q->allow && !q->allow(p->pid, &p->creds,
						   p->exited, q->allow_arg)))
				continue;
			ret = proc_window(r, p, w, q->timeline, &one, &n);
			if (ret || !n) {
				profile_free(one);
				continue;
			}
			snprintf(pidbuf, sizeof(pidbuf), "%d", (int)p->pid);
			ret = profile_append(all, one, 1, 1, labels);
			*nsamples += n;
			profile_free(one);
		}
	if (ret) {
		profile_free(all);
		return ret;
	}
	*out = all;
	return 0;
}

/*
 * The rings may hold the last moments still (the recorder reads them
 * every POLL_MS): wake its thread and wait, a little, for a reading of
 * the rings from after now_ns. r->lock held.
 */
static void wait_drained(struct recorder *r, uint64_t now_ns)
{
	uint64_t one = 1, end = now_ns + DRAIN_WAIT_MS * 1000000ull;
	struct timespec ts = { .tv_sec = end / 1000000000ull,
			       .tv_nsec = end % 1000000000ull };

	if (r->drained_ns >= now_ns)
		return;
	/* a full counter (never, at one a read) would say EAGAIN: it is
	 * readable, which is all the recorder looks at */
	if (write(r->wake_fd, &one, sizeof(one)) < 0)
		pr_debug("record: waking the recorder: %s", strerror(errno));
	while (r->drained_ns < now_ns && !atomic_load(&r->stop))
		if (pthread_cond_timedwait(&r->drained, &r->lock, &ts) ==
		    ETIMEDOUT)
			break;
}

int record_profile(struct recorder *r, const struct record_query *q,
		   struct profile **out)
{
	uint64_t now_ns = clock_ns(CLOCK_MONOTONIC);
	uint64_t end_ms = now_ns / 1000000 - q->end_ago_ms;
	struct span w = {
		.hi = end_ms / 1000,
		.lo = (end_ms - q->window_ms) / 1000,
	};
	struct profile *p = NULL;
	struct rproc *proc = NULL;
	struct pf_header *h;
	uint64_t n = 0, nstacks = 0;
	int ret;

	if (!q->window_ms || q->window_ms + q->end_ago_ms > end_ms)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	wait_drained(r, now_ns);
	if (q->pid) {
		proc = find_locked(r, q->pid);
		if (proc)	/* the sweep may not have seen it go yet */
			record_check_exit(proc);
		ret = proc ? pid_window(r, proc, &w, q->timeline, &p, &n)
			   : -ESRCH;
	} else {
		ret = all_window(r, q, &w, &p, &n);
	}
	if (!ret) {
		h = profile_header(p);
		h->time_nanos = clock_ns(CLOCK_REALTIME) -
				(q->end_ago_ms + q->window_ms) * 1000000ll;
		h->duration_nanos = q->window_ms * 1000000ll;
		h->pid = q->pid;
		ret = note(p, "proffs: from the flight recorder (%u Hz per "
			   "CPU): %llu s to %llu s ago, %llu samples",
			   r->o.hz,
			   (unsigned long long)(q->end_ago_ms +
						q->window_ms) / 1000,
			   (unsigned long long)q->end_ago_ms / 1000,
			   (unsigned long long)n);
	}
	/* what the ring holds of it: its distinct stacks, every one named
	 * by a second it keeps (record.c, compact_stacks()) */
	for (struct rproc *g = proc ? r->procs[(uint32_t)proc->pid %
					       PROC_BUCKETS] : NULL;
	     !ret && g; g = g->next)
		if (g->pid == proc->pid && g->start == proc->start &&
		    !g->broken) {
			pthread_mutex_lock(&g->lock);
			nstacks += g->nstacks;
			pthread_mutex_unlock(&g->lock);
		}
	if (!ret && proc)
		ret = note(p, "proffs: the recorder holds %llu distinct "
			   "stacks of process %d", (unsigned long long)nstacks,
			   (int)proc->pid);
	if (!ret && proc && proc->exited)
		ret = note(p, "process %d exited; its samples stay until "
			   "they age out of the recorder", (int)proc->pid);
	pthread_mutex_unlock(&r->lock);
	if (ret) {
		profile_free(p);
		return ret;
	}
	*out = p;
	return 0;
}
