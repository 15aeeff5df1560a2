// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * registry.c - sessions, parked reads and the short-lived result cache.
 *
 * One mutex (registry.lock) guards every session field marked so below.
 * It is never held while calling a front end's callback: the FUSE front
 * end's interrupt callback runs with the request's own lock held and takes
 * registry.lock (registry_wait_cancel), so answering under registry.lock
 * could deadlock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampler/clock.h"
#include "fs/core/errors.h"
#include "fs/core/name.h"
#include "fs/core/dispatch.h"
#include "fs/core/kinds.h"
#include "sampler/log.h"
#include "fs/core/output.h"
#include "sampler/model/profile.h"
#include "fs/core/registry.h"
#include "fs/core/run.h"
#include "sampler/unwind/kallsyms.h"

enum waiter_state { W_NEW, W_QUEUED, W_DONE };

/* A parked wait. Freed with its session, never earlier: a front end may
 * cancel it just after its answer (libfuse calls the interrupt callback
 * after the reply; an HTTP connection closes after its callback ran). */
struct reg_wait {
	struct session *s;
	struct reg_handle *h;
	uint64_t off;
	size_t size;			/* 0: the size; REG_ALL: every byte */
	registry_cb cb;
	void *arg;
	bool own_handle;		/* opened for this wait alone */
	enum waiter_state state;	/* protected by registry.lock */
	bool interrupted;		/* protected by registry.lock */
	struct reg_wait *next;		/* in the session's queue */
	struct reg_wait *next_all;	/* every waiter of the session */
};

struct rendered {
	struct proffs_request req;	/* format, sample, debug matter */
	uint8_t *buf;
	size_t len;
	int err;
	_Atomic bool consumed;		/* a file reader read it to its end */
	struct rendered *next;
};

struct session_key {
	pid_t pid;
	uid_t uid;			/* pid 0: whose processes */
	enum proffs_kind kind;
	uint64_t window_ms;
	uint32_t hz;
	uint32_t rate;
	bool rate_named;		/* heap_throttle.h: not the default */
	bool kernel;
	bool last;			/* from the recorder */
	enum proffs_base base;
	uint64_t base_ms;
};

struct session {
	unsigned id;
	struct registry *r;
	struct session_key key;
	struct proffs_request req;	/* the first request, for sampling */
	_Atomic bool stop;
	/* protected by registry.lock: */
	int refs;
	int nhandles;
	bool listed;
	bool done;
	int err;
	uint64_t done_ms;
	uint64_t start_ms;
	struct profile *prof;
	struct rendered *outs;
	struct reg_wait *queue;		/* reads parked until done */
	struct reg_wait *all_waiters;
	struct session *next;
};

struct reg_handle {
	struct session *s;
	struct proffs_request req;
	struct reg_handle *prev, *next;	/* open handles, registry.lock */
};

const unsigned registry_latency_bounds_ms[REGISTRY_LATENCY_BUCKETS] = {
	10, 100, 1000, 5000, 10000, 30000, 60000, 300000,
};

struct registry {
	struct registry_opts o;
	pthread_mutex_t lock;
	pthread_cond_t idle;		/* signalled when nthreads drops */
	struct session *list;		/* protected by lock */
	struct reg_handle *handles;	/* protected by lock */
	unsigned nrunning;		/* protected by lock */
	unsigned nthreads;		/* protected by lock */
	unsigned next_id;		/* protected by lock */
	struct registry_stats stats;	/* protected by lock */
};

/* Requests of the same key share a session: the kind's row says which
 * parameters change what is measured (kinds.h). */
static void key_of(const struct reg_target *t,
		   const struct proffs_request *req, struct session_key *k)
{
	const struct kind_ops *kind = kinds_row(req->kind);

	memset(k, 0, sizeof(*k));
	k->pid = t->pid;
	k->uid = t->pid ? 0 : t->uid;
	k->kind = req->kind;
	k->window_ms = kinds_window_ms(req);
	/* Parameters a kind ignores must not split sessions. */
	k->hz = kind->key & KIND_KEY_HZ ? req->hz : 0;
	k->rate = kind->key & KIND_KEY_RATE ? req->rate : 0;
	k->rate_named = kind->key & KIND_KEY_RATE && req->rate_named;
	k->kernel = kind->frames != KIND_FRAMES_NONE && req->kernel &&
		    t->kernel;
	if (kind->key & KIND_KEY_PAST) {
		k->last = req->last;
		k->base = req->base;
		k->base_ms = req->base_ms;
	}
}

static bool same_rendering(const struct proffs_request *a,
			   const struct proffs_request *b)
{
	return a->format == b->format && a->debug == b->debug &&
	       !strcmp(a->sample, b->sample);
}

static void session_free(struct session *s)
{
	struct rendered *o, *on;
	struct reg_wait *w, *wn;

	for (o = s->outs; o; o = on) {
		on = o->next;
		free(o->buf);
		free(o);
	}
	for (w = s->all_waiters; w; w = wn) {
		wn = w->next_all;
		free(w);
	}
	profile_free(s->prof);
	free(s);
}

/* Drop a reference; called with registry.lock held. */
static void session_put_locked(struct session *s)
{
	if (--s->refs == 0)
		session_free(s);
}

static void unlist_locked(struct registry *r, struct session *s)
{
	struct session **pp;

	if (!s->listed)
		return;
	for (pp = &r->list; *pp != s; pp = &(*pp)->next)
		;
	*pp = s->next;
	s->listed = false;
	session_put_locked(s);
}

/* Drop finished results nobody holds that are older than cache_ms. */
static void expire_locked(struct registry *r)
{
	uint64_t now = now_ms();
	struct session *s, *next;

	for (s = r->list; s; s = next) {
		next = s->next;
		if (s->done && !s->nhandles &&
		    now - s->done_ms >= r->o.cache_ms)
			unlist_locked(r, s);
	}
}

static struct rendered *find_output_locked(struct session *s,
					   const struct proffs_request *req)
{
	for (struct rendered *o = s->outs; o; o = o->next)
		if (same_rendering(&o->req, req))
			return o;
	return NULL;
}

/*
 * A running session of key k, or a result of it still fresh. For a stat
 * (for_size), also a result someone still has open however old: its
 * size is the size of the file being read (an fstat reaches the daemon
 * as a stat of the name).
 *
 * A result is fresh for cache_ms, until a reader of the mount has read
 * req's rendering of it to the end: what opens a name twice (go tool
 * pprof's sniff, then its read; a browser's stat, then its read; cp's
 * stat) gets one session, while `watch cat cpu_1s.txt`, a second read
 * of memstats.txt or `proffs top` get a new one each time. Other
 * renderings of the same window stay fresh (cpu_2s.pb.gz, then
 * cpu_2s.svg: the same samples), and so do results only HTTP clients
 * read (Go's pprof fetches a URL twice, from two processes). A thread
 * dump stays for cache_ms whoever read it: it stops every thread, and
 * a dump while a heap agent is being loaded waits for it.
 */
static struct session *find_locked(struct registry *r,
				   const struct session_key *k,
				   const struct proffs_request *req,
				   bool for_size)
{
	uint64_t now = now_ms();

	for (struct session *s = r->list; s; s = s->next) {
		struct rendered *o;

		if (memcmp(&s->key, k, sizeof(*k)) || atomic_load(&s->stop))
			continue;
		if (for_size && s->nhandles)
			return s;
		/* Still held open by its last readers, but too old to serve
		 * a new one (FUSE releases files asynchronously). */
		if (s->done && now - s->done_ms >= r->o.cache_ms)
			continue;
		if (s->done && s->key.kind != PROFFS_KIND_GOROUTINE &&
		    (o = find_output_locked(s, req)) &&
		    atomic_load(&o->consumed))
			continue;
		return s;
	}
	return NULL;
}

/* Render req's format unless already there. Called without the lock. */
static struct rendered *render_one(struct session *s,
				   const struct proffs_request *req)
{
	struct registry *r = s->r;
	struct rendered *o, *have;

	pthread_mutex_lock(&r->lock);
	have = find_output_locked(s, req);
	pthread_mutex_unlock(&r->lock);
	if (have)
		return have;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->req = *req;
	o->err = dispatch_render(s->prof, req, &o->buf, &o->len);
	if (o->err == -EINVAL)	/* the request's fault: sample= unknown */
		pr_notice("session %u: cannot render %s%s%s: EINVAL: no such "
			  "sample type", s->id, name_format_str(req->format),
			  req->sample[0] ? " sample=" : "", req->sample);
	else if (o->err)
		pr_err("session %u: rendering %s failed: %s", s->id,
		       name_format_str(req->format), strerror(-o->err));
	pthread_mutex_lock(&r->lock);
	have = find_output_locked(s, req);
	if (!have) {
		o->next = s->outs;
		s->outs = o;
	}
	pthread_mutex_unlock(&r->lock);
	if (have) {	/* another thread was quicker */
		free(o->buf);
		free(o);
		return have;
	}
	return o;
}

/* A reply of len bytes; first: the first of a reader (a result served). */
static void count_served(struct registry *r, bool first, size_t len)
{
	pthread_mutex_lock(&r->lock);
	r->stats.served += first;
	r->stats.bytes += len;
	pthread_mutex_unlock(&r->lock);
}

static void answer_ref(struct reg_wait *w, int err);

/* Answer one parked request: err is 0 (the session's outcome decides) or
 * -EINTR. A size waiter's handle is released here: it only lived for it. */
static void answer(struct reg_wait *w, int err)
{
	struct session *s = w->s;
	struct registry *r = s->r;

	/* The reply points into the session's buffers: keep them (and w)
	 * until it has returned, even if the release of the last handle
	 * runs meanwhile on another thread. */
	pthread_mutex_lock(&r->lock);
	s->refs++;
	pthread_mutex_unlock(&r->lock);
	answer_ref(w, err);
	pthread_mutex_lock(&r->lock);
	session_put_locked(s);
	pthread_mutex_unlock(&r->lock);
}

/* The slice of o that w asks for, counted as handed out; a file read
 * that reaches its end marks o read, so that the next open starts a new
 * window (find_locked). */
static void slice(struct registry *r, const struct reg_wait *w,
		  const struct rendered *o, const uint8_t **buf, size_t *n)
{
	if (w->size == REG_ALL) {
		*buf = o->buf;
		*n = o->len;
		count_served(r, true, o->len);
		return;
	}
	if (!w->size || w->off >= o->len)
		return;
	*buf = o->buf + w->off;
	*n = o->len - w->off < w->size ? o->len - w->off : w->size;
	if (w->off + *n >= o->len)
		atomic_store(&((struct rendered *)o)->consumed, true);
	count_served(r, !w->off, *n);
}

static void answer_ref(struct reg_wait *w, int err)
{
	struct session *s = w->s;
	const struct rendered *o = NULL;
	const uint8_t *buf = NULL;
	size_t n = 0;

	if (!err && s->err)
		err = s->err == -ECANCELED ? -EINTR : s->err;
	if (!err) {
		o = render_one(s, &w->h->req);
		err = !o ? -ENOMEM : o->err;
	}
	if (!err)
		slice(s->r, w, o, &buf, &n);
	w->cb(w->arg, err, buf, n, err ? 0 : o->len);
	if (w->own_handle)
		registry_release(w->h);
}

static void reply_waiters(struct reg_wait *list)
{
	for (struct reg_wait *w = list, *next; w; w = next) {
		next = w->next;
		answer(w, 0);
	}
}

/* Render what open handles want before anyone is answered, so every
 * reader of one format gets the same bytes from the first read on. */
static void render_wanted(struct session *s)
{
	struct proffs_request wanted[8];
	int n = 0;

	pthread_mutex_lock(&s->r->lock);
	for (struct reg_wait *w = s->queue; w && n < 8; w = w->next)
		wanted[n++] = w->h->req;
	pthread_mutex_unlock(&s->r->lock);
	for (int i = 0; i < n; i++)
		render_one(s, &wanted[i]);
}

/* Which latency bucket ms falls in (the last: above every bound). */
static unsigned latency_bucket(uint64_t ms)
{
	unsigned b = 0;

	while (b < REGISTRY_LATENCY_BUCKETS &&
	       ms > registry_latency_bounds_ms[b])
		b++;
	return b;
}

static void count_outcome_locked(struct registry *r, struct session *s,
				 int err, const struct run_outcome *out)
{
	struct registry_kind_stats *k = &r->stats.kind[s->key.kind];

	if (err == -ECANCELED) {
		r->stats.stopped++;
		k->stopped++;
	} else if (err) {
		k->failed++;
	} else {
		k->done++;
	}
	k->samples += out->samples;
	k->lost += out->lost;
	k->latency[latency_bucket(out->elapsed_ms)]++;
	k->latency_sum_ms += out->elapsed_ms;
}

/* A failed session, for errors.txt: under the pid it profiled (an
 * /all session under its uid). */
static void note_failure(struct session *s, int err)
{
	char name[64];

	if (!err || err == -ECANCELED || !s->r->o.errors)
		return;
	if (s->key.window_ms)
		snprintf(name, sizeof(name), "%s_%llums",
			 name_kind_str(s->key.kind),
			 (unsigned long long)s->key.window_ms);
	else
		snprintf(name, sizeof(name), "%s", name_kind_str(s->key.kind));
	errlog_add(s->r->o.errors, s->key.pid,
		   s->key.pid ? ERRLOG_NO_UID : s->key.uid, name, err, NULL);
}

static void finish(struct session *s, int err, struct profile *prof,
		   const struct run_outcome *out)
{
	struct registry *r = s->r;
	struct reg_wait *queue, *w;

	note_failure(s, err);

	s->prof = prof;
	if (!err)
		render_wanted(s);
	pthread_mutex_lock(&r->lock);
	s->done = true;
	s->err = err;
	s->done_ms = now_ms();
	r->nrunning--;
	count_outcome_locked(r, s, err, out);
	if (err)	/* never serve a failure from the cache */
		unlist_locked(r, s);
	queue = s->queue;
	s->queue = NULL;
	for (w = queue; w; w = w->next)
		w->state = W_DONE;
	pthread_mutex_unlock(&r->lock);
	reply_waiters(queue);
}

static void *session_main(void *arg)
{
	struct session *s = arg;
	struct registry *r = s->r;
	struct profile *prof = NULL;
	struct run_outcome out = { 0 };
	int ret;
	struct run_ctx rc = {
		.id = s->id, .pid = s->key.pid, .uid = s->key.uid,
		.req = &s->req,
		.stop = &s->stop, .dsos = r->o.dsos, .heap = r->o.heap,
		.turns = r->o.turns,
		.ksyms = r->o.ksyms, .pykeep = r->o.pykeep,
		.max_stacks = r->o.max_stacks, .offcpu = r->o.offcpu,
		.rec = r->o.rec ? *r->o.rec : NULL,
	};

	ret = dispatch_run(&rc, &prof, &out);
	finish(s, ret, prof, &out);
	pthread_mutex_lock(&r->lock);
	session_put_locked(s);
	r->nthreads--;
	pthread_cond_broadcast(&r->idle);
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* why: where a refusal's reason goes, whylen bytes (may be 0). A
 * session from the recorder alone (a last window) answers at once: it
 * runs on the caller's thread (*here set: session_main() after the lock
 * goes), which answers reads already at the daemon's serving priority
 * (daemon.h), where a new thread would first wait for a CPU. */
static int start_locked(struct registry *r, const struct proffs_request *req,
			const struct session_key *k, struct session **out,
			bool *here, char *why, size_t whylen)
{
	struct session *s;
	pthread_attr_t attr;
	pthread_t tid;
	int ret;

	if (r->nrunning >= r->o.max_sessions) {
		if (whylen)
			snprintf(why, whylen, "max_sessions=%u reached: %u "
				 "running", r->o.max_sessions, r->nrunning);
		return -EBUSY;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->id = ++r->next_id;
	s->r = r;
	s->start_ms = now_ms();
	s->key = *k;
	s->req = *req;
	s->req.kernel = k->kernel;	/* what this caller may see */
	s->refs = 2;		/* the list's and the thread's */
	s->listed = true;
	*here = req->last;
	ret = 0;
	if (!*here) {
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		ret = pthread_create(&tid, &attr, session_main, s);
		pthread_attr_destroy(&attr);
	}
	if (ret) {
		if (whylen)
			snprintf(why, whylen, "cannot create its thread");
		free(s);
		return -ret;
	}
	s->next = r->list;
	r->list = s;
	r->nrunning++;
	r->nthreads++;
	r->stats.started++;
	pr_info("session %u start: pid=%d kind=%s window_ms=%llu hz=%u",
		s->id, (int)k->pid, name_kind_str(req->kind),
		(unsigned long long)k->window_ms, k->hz);
	*out = s;
	return 0;
}

static int open_handle(struct registry *r, const struct reg_target *t,
		       const struct proffs_request *req, bool for_size,
		       struct reg_handle **out, char *why, size_t whylen)
{
	struct reg_handle *h = calloc(1, sizeof(*h));
	struct session_key k;
	struct session *s;
	bool here = false;
	int ret = 0;

	if (whylen)
		snprintf(why, whylen, "out of memory");
	if (!h)
		return -ENOMEM;
	key_of(t, req, &k);
	pthread_mutex_lock(&r->lock);
	expire_locked(r);
	s = find_locked(r, &k, req, for_size);
	if (!s)
		ret = start_locked(r, req, &k, &s, &here, why, whylen);
	else if (s->done)
		r->stats.cache_hits++;
	else
		r->stats.joined++;
	if (!ret) {
		s->refs++;
		s->nhandles++;
		h->s = s;
		h->req = *req;
		h->next = r->handles;
		if (r->handles)
			r->handles->prev = h;
		r->handles = h;
	}
	pthread_mutex_unlock(&r->lock);
	if (ret) {
		free(h);
		return ret;
	}
	if (here)
		session_main(s);
	*out = h;
	return 0;
}

int registry_open(struct registry *r, const struct reg_target *t,
		  const struct proffs_request *req, struct reg_handle **out,
		  char *why, size_t whylen)
{
	return open_handle(r, t, req, false, out, why, whylen);
}

/* End a parked wait with -EINTR, unless it was answered already. */
static void cancel(struct reg_wait *w)
{
	struct registry *r = w->s->r;
	struct reg_wait **pp;
	bool reply = false;

	pthread_mutex_lock(&r->lock);
	if (w->state == W_QUEUED) {
		for (pp = &w->s->queue; *pp != w; pp = &(*pp)->next)
			;
		*pp = w->next;
		w->state = W_DONE;
		reply = true;
	} else if (w->state == W_NEW) {
		w->interrupted = true;
	}
	pthread_mutex_unlock(&r->lock);
	if (reply)
		answer(w, -EINTR);
}

static struct reg_wait *wait_new(struct reg_handle *h, uint64_t off,
				 size_t size, registry_cb cb, void *arg)
{
	struct registry *r = h->s->r;
	struct reg_wait *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	*w = (struct reg_wait){ .s = h->s, .h = h, .off = off, .size = size,
				.cb = cb, .arg = arg };
	pthread_mutex_lock(&r->lock);
	w->next_all = w->s->all_waiters;
	w->s->all_waiters = w;
	pthread_mutex_unlock(&r->lock);
	return w;
}

int registry_wait_new(struct reg_handle *h, uint64_t off, size_t size,
		      registry_cb cb, void *arg, struct reg_wait **out)
{
	*out = wait_new(h, off, size, cb, arg);
	return *out ? 0 : -ENOMEM;
}

/* Answer w now if the session is done (or w was cancelled), else queue it
 * until it is. */
void registry_wait_start(struct reg_wait *w)
{
	struct session *s = w->s;
	struct registry *r = s->r;
	bool now;

	pthread_mutex_lock(&r->lock);
	now = s->done || w->interrupted;
	if (!now) {
		w->state = W_QUEUED;
		w->next = s->queue;
		s->queue = w;
	} else {
		w->state = W_DONE;
	}
	pthread_mutex_unlock(&r->lock);
	if (now)
		answer(w, w->interrupted ? -EINTR : 0);
}

int registry_wait_size(struct registry *r, const struct reg_target *t,
		       const struct proffs_request *req, registry_cb cb,
		       void *arg, struct reg_wait **out)
{
	struct reg_handle *h;
	char why[96];
	int ret;

	ret = open_handle(r, t, req, true, &h, why, sizeof(why));
	if (ret) {
		pr_notice("registry: stat of pid %d kind=%s: %s: cannot start "
			  "a session: %s", (int)t->pid, name_kind_str(req->kind),
			  strerrorname_np(-ret), why);
		return ret;
	}
	*out = wait_new(h, 0, 0, cb, arg);
	if (!*out) {
		registry_release(h);
		return -ENOMEM;
	}
	(*out)->own_handle = true;
	return 0;
}

int registry_wait(struct reg_handle *h, registry_cb cb, void *arg,
		  struct reg_wait **out)
{
	int ret = registry_wait_new(h, 0, REG_ALL, cb, arg, out);

	if (!ret)
		registry_wait_start(*out);
	return ret;
}

void registry_wait_cancel(struct reg_wait *w)
{
	cancel(w);
}

void registry_count_bytes(struct registry *r, size_t len)
{
	count_served(r, false, len);
}

static void release_locked(struct registry *r, struct reg_handle *h)
{
	struct session *s = h->s;

	if (h->prev)
		h->prev->next = h->next;
	else
		r->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	/* Nobody wants it any more: stop sampling now, and make sure a new
	 * reader starts afresh instead of joining a dying one - unless the
	 * kind cannot stop halfway (a thread dump): it runs on, and a new
	 * reader joins it. */
	if (--s->nhandles == 0 && !s->done &&
	    !kinds_row(s->key.kind)->finishes) {
		atomic_store(&s->stop, true);
		unlist_locked(r, s);
	}
	session_put_locked(s);
	free(h);
}

void registry_release(struct reg_handle *h)
{
	struct registry *r = h->s->r;

	pthread_mutex_lock(&r->lock);
	release_locked(r, h);
	pthread_mutex_unlock(&r->lock);
}

int registry_result_size(struct registry *r, const struct reg_target *t,
			 const struct proffs_request *req, size_t *size)
{
	struct session_key k;
	struct rendered *o = NULL;
	struct session *s;

	key_of(t, req, &k);
	pthread_mutex_lock(&r->lock);
	expire_locked(r);
	s = find_locked(r, &k, req, true);
	if (s && s->done)
		o = find_output_locked(s, req);
	if (o && !o->err)
		*size = o->len;
	pthread_mutex_unlock(&r->lock);
	return o && !o->err ? 0 : -ENOENT;
}

int registry_new(const struct registry_opts *o, struct registry **out)
{
	struct registry *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->o = *o;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->idle, NULL);
	*out = r;
	return 0;
}

void registry_free(struct registry *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	for (struct session *s = r->list; s; s = s->next)
		atomic_store(&s->stop, true);
	while (r->nthreads)
		pthread_cond_wait(&r->idle, &r->lock);
	/* An aborted connection never releases its open files. */
	while (r->handles)
		release_locked(r, r->handles);
	while (r->list)
		unlist_locked(r, r->list);
	pthread_mutex_unlock(&r->lock);
	pthread_cond_destroy(&r->idle);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void registry_stats(struct registry *r, struct registry_stats *st)
{
	pthread_mutex_lock(&r->lock);
	*st = r->stats;
	st->running = r->nrunning;
	pthread_mutex_unlock(&r->lock);
}

size_t registry_running(struct registry *r, struct registry_running *out,
			size_t n)
{
	uint64_t now = now_ms();
	size_t got = 0;

	pthread_mutex_lock(&r->lock);
	for (struct session *s = r->list; s && got < n; s = s->next) {
		if (s->done || atomic_load(&s->stop))
			continue;
		out[got++] = (struct registry_running){
			.id = s->id, .pid = s->key.pid, .kind = s->key.kind,
			.window_ms = s->key.window_ms,
			.elapsed_ms = now - s->start_ms,
			.readers = s->nhandles,
		};
	}
	pthread_mutex_unlock(&r->lock);
	/* the list is newest first */
	for (size_t i = 0; i < got / 2; i++) {
		struct registry_running t = out[i];

		out[i] = out[got - 1 - i];
		out[got - 1 - i] = t;
	}
	return got;
}
