// SPDX-License-Identifier: GPL-2.0-or-later
/* record.c - the flight recorder: per-CPU samples -> per-second buckets. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/cpu/cpu.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/perf/perf.h"
#include "sampler/model/profile.h"
#include "sampler/model/profile_merge.h"
#include "sampler/record/record.h"
#include "sampler/unwind/symbolize.h"
#include "sampler/unwind/unwind.h"

#define MAX_FRAMES 128
#define POLL_MS 100
#define DRAIN_WAIT_MS 500	/* a read waits for the rings this long */
#define PROC_BUCKETS 1024
#define CREDS_EVERY_S 5		/* a live process's credentials re-read */
#define BROKEN_KEEP_S 10	/* a process that would not load, retried */

/* A distinct (stack, thread) of one process. */
struct rstack {
	uint32_t hash;
	uint32_t nlocs;
	uint64_t *locs;		/* ids in the process's dictionary */
	uint32_t tid;
	int64_t tid_str, name_str;
};

/*
 * A process the ring holds samples of, live or exited. Only the
 * recorder's thread writes the hash chains (under recorder.lock) and
 * uses maps, unw and sym; dict and stacks change under lock, which a
 * reader takes inside recorder.lock: so a slow first symbolization of a
 * new process blocks no reader of another.
 */
struct rproc {
	pid_t pid;
	unsigned long long start;	/* tells a reused pid apart */
	pthread_mutex_t lock;		/* dict, stacks */
	_Atomic bool exited;
	bool broken;			/* would not load: samples skipped */
	struct proc_creds creds;	/* as last seen alive */
	uint64_t creds_sec;
	char comm[32];
	struct profile *dict;		/* tables, no samples */
	int64_t key_thread, key_thread_name;
	struct proc_maps *maps;		/* NULL once exited */
	struct unwinder *unw;
	struct symbolizer *sym;
	struct rstack *stacks;
	uint32_t nstacks, cap;
	uint32_t *slots;		/* hash -> stack index + 1 */
	uint32_t nslots;
	uint64_t refs;			/* bucket entries naming it */
	uint64_t seen_sec;		/* its last sample */
	uint64_t exit_ns;		/* CLOCK_REALTIME it was found gone */
	struct rproc *next;		/* in its hash chain, newest first */
};

struct rentry {
	struct rproc *proc;
	uint32_t stack;
	uint32_t count;
};

struct rbucket {
	uint64_t sec;		/* CLOCK_MONOTONIC second; 0 = empty */
	uint32_t n, cap;
	struct rentry *e;
};

struct recorder {
	struct record_opts o;
	struct perf_rec *rec;
	pthread_t thread;
	_Atomic bool stop;
	pthread_mutex_t lock;
	/* protected by lock: */
	struct rproc *procs[PROC_BUCKETS];
	struct rbucket *buckets;	/* span_s + 1, by sec % nbuckets */
	uint32_t nbuckets;
	uint64_t now_sec;		/* of the sample being added */
	struct record_stats st;
	uint64_t drained_ns;		/* samples taken before: all read */
	pid_t self;
};

static uint64_t mono_sec(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000000ull;
}

static uint32_t hash_stack(const uint64_t *locs, uint32_t n, uint32_t tid)
{
	uint64_t h = 1469598103934665603ull ^ tid;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ locs[i]) * 1099511628211ull;
	return (uint32_t)(h ^ h >> 32);
}

static void proc_unload(struct rproc *p)
{
	symbolizer_free(p->sym);
	unwinder_free(p->unw);
	maps_free(p->maps);
	p->sym = NULL;
	p->unw = NULL;
	p->maps = NULL;
}

static void proc_free(struct rproc *p)
{
	proc_unload(p);
	pthread_mutex_destroy(&p->lock);
	for (uint32_t i = 0; i < p->nstacks; i++)
		free(p->stacks[i].locs);
	free(p->stacks);
	free(p->slots);
	profile_free(p->dict);
	free(p);
}

/* What a process holds, roughly: its dictionary and its stacks. */
static uint64_t proc_mem(const struct rproc *p)
{
	uint64_t m = sizeof(*p) + p->cap * sizeof(*p->stacks) +
		     p->nslots * sizeof(*p->slots);

	for (uint32_t i = 0; i < p->nstacks; i++)
		m += p->stacks[i].nlocs * sizeof(uint64_t);
	if (p->dict)
		m += profile_nlocations(p->dict) * 72 +
		     profile_nfunctions(p->dict) * 80 +
		     profile_nstrings(p->dict) * 64 +
		     profile_nmappings(p->dict) * 96;
	return m;
}

static int proc_load(struct recorder *r, struct rproc *p)
{
	struct pf_header *h;
	int ret;

	ret = profile_new(&p->dict);
	if (!ret && (profile_add_sample_type(p->dict, "samples", "count") ||
		     profile_add_sample_type(p->dict, "cpu", "nanoseconds") ||
		     profile_set_period(p->dict, "cpu", "nanoseconds",
					1000000000ll / r->o.hz) ||
		     proc_name_profile(p->dict, p->pid, "cpu")))
		ret = -ENOMEM;
	if (ret)
		return ret;
	p->key_thread = profile_intern(p->dict, "thread");
	p->key_thread_name = profile_intern(p->dict, "thread_name");
	h = profile_header(p->dict);
	if (p->key_thread < 0 || p->key_thread_name < 0 || h->command < 0)
		return -ENOMEM;
	if (proc_comm(p->pid, p->pid, p->comm, sizeof(p->comm)))
		strcpy(p->comm, "?");
	ret = proc_creds(p->pid, &p->creds);
	if (!ret)
		ret = maps_load(p->pid, r->o.cache, &p->maps);
	if (!ret)
		ret = unwinder_new(p->maps, &p->unw);
	if (!ret)
		ret = symbolizer_new(p->dict, p->maps, &p->sym);
	return ret;
}

/* The live context of pid, made the first time it shows; NULL when it
 * cannot be had (then its samples are skipped). */
static struct rproc *proc_get(struct recorder *r, pid_t pid)
{
	struct rproc **head = &r->procs[(uint32_t)pid % PROC_BUCKETS];
	struct rproc *p;

	/* the recorder's thread alone writes the chains: no lock to read */
	for (p = *head; p; p = p->next)
		if (p->pid == pid && !p->exited)
			return p->broken ? NULL : p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->seen_sec = r->now_sec;
	p->creds_sec = r->now_sec;
	pthread_mutex_init(&p->lock, NULL);
	/* loaded before readers can see it: maps and files take time */
	if (proc_stat_fields(pid, NULL, &p->start) || proc_load(r, p)) {
		proc_unload(p);
		p->broken = true;
	}
	pthread_mutex_lock(&r->lock);
	p->next = *head;
	*head = p;
	if (!p->broken)
		r->st.procs++;
	pthread_mutex_unlock(&r->lock);
	return p->broken ? NULL : p;
}

static int stacks_grow(struct rproc *p)
{
	uint32_t n = p->nslots ? p->nslots * 2 : 64;
	uint32_t *slots = calloc(n, sizeof(*slots));
	struct rstack *s;

	if (!slots)
		return -ENOMEM;
	s = realloc(p->stacks, (n / 2) * sizeof(*s));
	if (!s) {
		free(slots);
		return -ENOMEM;
	}
	p->stacks = s;
	p->cap = n / 2;
	for (uint32_t i = 0; i < p->nstacks; i++) {
		uint32_t h = p->stacks[i].hash & (n - 1);

		while (slots[h])
			h = (h + 1) & (n - 1);
		slots[h] = i + 1;
	}
	free(p->slots);
	p->slots = slots;
	p->nslots = n;
	return 0;
}

/* The index of (locs, tid) in p's stacks, added when new; -ENOMEM. */
static int64_t stack_of(struct rproc *p, const uint64_t *locs, uint32_t n,
			uint32_t tid)
{
	uint32_t hash = hash_stack(locs, n, tid), h;
	struct rstack *s;
	char buf[32];

	if (p->nstacks + 1 > p->cap && stacks_grow(p))
		return -ENOMEM;
	for (h = hash & (p->nslots - 1); p->slots[h];
	     h = (h + 1) & (p->nslots - 1)) {
		s = &p->stacks[p->slots[h] - 1];
		if (s->hash == hash && s->tid == tid && s->nlocs == n &&
		    !memcmp(s->locs, locs, n * sizeof(*locs)))
			return p->slots[h] - 1;
	}
	s = &p->stacks[p->nstacks];
	*s = (struct rstack){ .hash = hash, .nlocs = n, .tid = tid };
	s->locs = malloc((n ? n : 1) * sizeof(*locs));
	if (!s->locs)
		return -ENOMEM;
	memcpy(s->locs, locs, n * sizeof(*locs));
	snprintf(buf, sizeof(buf), "%u", tid);
	s->tid_str = profile_intern(p->dict, buf);
	if (proc_comm(p->pid, tid, buf, sizeof(buf)))
		strcpy(buf, "?");
	s->name_str = profile_intern(p->dict, buf);
	if (s->tid_str < 0 || s->name_str < 0) {
		free(s->locs);
		return -ENOMEM;
	}
	p->slots[h] = ++p->nstacks;
	return p->nstacks - 1;
}

/* Drop every entry of b (its processes lose their references). */
static void bucket_clear(struct rbucket *b)
{
	for (uint32_t i = 0; i < b->n; i++)
		b->e[i].proc->refs--;
	b->n = 0;
	b->sec = 0;
}

/* A sample of second sec (CLOCK_MONOTONIC, the time the kernel took it:
 * a busy recorder reads its rings late). */
static int bucket_add(struct recorder *r, struct rproc *p, uint32_t stack,
		      uint64_t sec)
{
	struct rbucket *b = &r->buckets[sec % r->nbuckets];
	struct rentry *e;

	if (b->sec > sec || sec + r->o.span_s <= r->now_sec)
		return 0;	/* older than the span */
	if (b->sec != sec) {
		bucket_clear(b);
		b->sec = sec;
	}
	/* At most hz x CPUs entries a second: a scan is enough. */
	for (uint32_t i = b->n; i-- > 0;)
		if (b->e[i].proc == p && b->e[i].stack == stack) {
			b->e[i].count++;
			return 0;
		}
	if (b->n == b->cap) {
		uint32_t cap = b->cap ? b->cap * 2 : 32;

		e = realloc(b->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		b->e = e;
		b->cap = cap;
	}
	b->e[b->n++] = (struct rentry){ .proc = p, .stack = stack,
					.count = 1 };
	p->refs++;
	return 0;
}

static void on_sample(const struct perf_sample *s, void *arg)
{
	struct recorder *r = arg;
	uint64_t pcs[MAX_FRAMES], locs[MAX_FRAMES];
	struct rproc *p;
	int64_t stack;
	int n;

	if (!s->pid || s->pid == (uint32_t)r->self)
		return;
	p = proc_get(r, s->pid);
	if (!p)
		return;
	unwind_stack(p->unw, &s->regs, s->stack, s->stack_len, pcs,
		     MAX_FRAMES, &n);
	pthread_mutex_lock(&p->lock);
	stack = 0;
	for (int i = 0; !stack && i < n; i++)
		stack = symbolizer_location(p->sym, pcs[i], &locs[i]);
	if (!stack)
		stack = stack_of(p, locs, n, s->tid);
	pthread_mutex_unlock(&p->lock);
	if (stack < 0)
		return;
	pthread_mutex_lock(&r->lock);
	if (!bucket_add(r, p, stack, s->time ? s->time / 1000000000ull
					     : r->now_sec)) {
		p->seen_sec = r->now_sec;
		r->st.samples++;
	}
	pthread_mutex_unlock(&r->lock);
}

/* The oldest bucket with entries, or NULL. */
static struct rbucket *oldest(struct recorder *r)
{
	struct rbucket *o = NULL;

	for (uint32_t i = 0; i < r->nbuckets; i++)
		if (r->buckets[i].sec && (!o || r->buckets[i].sec < o->sec))
			o = &r->buckets[i];
	return o;
}

static uint64_t mem_held(struct recorder *r)
{
	uint64_t m = r->nbuckets * sizeof(struct rbucket);

	for (uint32_t i = 0; i < r->nbuckets; i++)
		m += r->buckets[i].cap * sizeof(struct rentry);
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct rproc *p = r->procs[b]; p; p = p->next)
			m += proc_mem(p);
	return m;
}

/* Whether p exited (or its pid was reused). Its maps go at the next
 * sweep, on the recorder's thread, which alone uses them. */
static void check_exit(struct rproc *p)
{
	unsigned long long start;

	if (p->exited || p->broken ||
	    (!proc_stat_fields(p->pid, NULL, &start) && start == p->start))
		return;
	p->exit_ns = clock_ns(CLOCK_REALTIME);
	p->exited = true;
}

/* Processes no bucket names any more go; exits are noticed. */
static void sweep_procs(struct recorder *r, uint64_t now)
{
	for (size_t b = 0; b < PROC_BUCKETS; b++) {
		struct rproc **pp = &r->procs[b], *p;

		while ((p = *pp)) {
			bool gone = p->broken ? now - p->seen_sec >
						BROKEN_KEEP_S : !p->refs;

			check_exit(p);
			if (p->exited && p->maps)
				proc_unload(p);
			if (!p->exited && !p->broken &&
				   now - p->creds_sec >= CREDS_EVERY_S) {
				proc_creds(p->pid, &p->creds);
				p->creds_sec = now;
			}
			if (gone) {
				*pp = p->next;
				if (!p->broken)
					r->st.procs--;
				proc_free(p);
				continue;
			}
			pp = &p->next;
		}
	}
}

/* Once a second: buckets past the span go, then the oldest while over
 * the memory bound, then the processes they named. */
static void sweep(struct recorder *r)
{
	uint64_t now = mono_sec();
	struct rbucket *b;

	pthread_mutex_lock(&r->lock);
	for (uint32_t i = 0; i < r->nbuckets; i++)
		if (r->buckets[i].sec &&
		    r->buckets[i].sec + r->o.span_s <= now)
			bucket_clear(&r->buckets[i]);
	sweep_procs(r, now);
	r->st.mem_bytes = mem_held(r);
	while (r->st.mem_bytes > r->o.mem_bytes && (b = oldest(r)) &&
	       b->sec != now) {
		bucket_clear(b);
		r->st.dropped_buckets++;
		sweep_procs(r, now);
		r->st.mem_bytes = mem_held(r);
	}
	pthread_mutex_unlock(&r->lock);
}

static void *record_main(void *arg)
{
	struct recorder *r = arg;
	uint64_t swept = 0;
	int ret;

	cpu_raise_priority();	/* see cpu.h: a lagging reader loses */
	while (!atomic_load(&r->stop)) {
		uint64_t now = mono_sec();

		pthread_mutex_lock(&r->lock);
		r->now_sec = now;
		pthread_mutex_unlock(&r->lock);
		uint64_t t = clock_ns(CLOCK_MONOTONIC);

		ret = perf_poll(r->rec, POLL_MS, on_sample, r);
		pthread_mutex_lock(&r->lock);
		r->drained_ns = t;
		pthread_mutex_unlock(&r->lock);
		if (ret) {
			pr_err("record: reading the samples failed: %s; the "
			       "recorder stops", strerror(-ret));
			break;
		}
		if (now != swept) {
			swept = now;
			sweep(r);
			pthread_mutex_lock(&r->lock);
			r->st.lost = perf_lost(r->rec);
			r->st.cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
			pthread_mutex_unlock(&r->lock);
		}
	}
	return NULL;
}

int record_start(const struct record_opts *o, struct recorder **out)
{
	struct recorder *r;
	int ret;

	if (!o->hz || !o->span_s)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->o = *o;
	r->self = getpid();
	r->nbuckets = o->span_s + 2;
	r->buckets = calloc(r->nbuckets, sizeof(*r->buckets));
	if (!r->buckets) {
		free(r);
		return -ENOMEM;
	}
	pthread_mutex_init(&r->lock, NULL);
	r->now_sec = mono_sec();
	ret = perf_open_system(o->hz, false, &r->rec);
	if (!ret) {
		ret = -pthread_create(&r->thread, NULL, record_main, r);
		if (ret)
			perf_close(r->rec);
	}
	if (ret) {
		pthread_mutex_destroy(&r->lock);
		free(r->buckets);
		free(r);
		return ret;
	}
	*out = r;
	return 0;
}

void record_stop(struct recorder *r)
{
	if (!r)
		return;
	atomic_store(&r->stop, true);
	pthread_join(r->thread, NULL);
	pr_info("record: stopped: samples=%llu lost=%llu procs=%u "
		"mem_bytes=%llu dropped_buckets=%llu cpu_ms=%llu",
		(unsigned long long)r->st.samples,
		(unsigned long long)r->st.lost, r->st.procs,
		(unsigned long long)r->st.mem_bytes,
		(unsigned long long)r->st.dropped_buckets,
		(unsigned long long)(r->st.cpu_ns / 1000000));
	perf_close(r->rec);
	for (uint32_t i = 0; i < r->nbuckets; i++) {
		bucket_clear(&r->buckets[i]);
		free(r->buckets[i].e);
	}
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct rproc *p = r->procs[b], *next; p; p = next) {
			next = p->next;
			proc_free(p);
		}
	free(r->buckets);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

unsigned record_span_s(const struct recorder *r)
{
	return r->o.span_s;
}

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

void record_get_stats(struct recorder *r, struct record_stats *st)
{
	pthread_mutex_lock(&r->lock);
	*st = r->st;
	pthread_mutex_unlock(&r->lock);
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
	uint64_t n = 0;
	int ret;

	if (!q->window_ms || q->window_ms + q->end_ago_ms > end_ms)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	/* The rings may hold the last moments still (a busy recorder reads
	 * them late): wait for a reading that began after now, a little. */
	for (int i = 0; i < DRAIN_WAIT_MS / 5 && r->drained_ns < now_ns &&
	     !atomic_load(&r->stop); i++) {
		pthread_mutex_unlock(&r->lock);
		usleep(5000);
		pthread_mutex_lock(&r->lock);
	}
	if (q->pid) {
		proc = find_locked(r, q->pid);
		if (proc)	/* the sweep may not have seen it go yet */
			check_exit(proc);
		ret = proc ? proc_window(r, proc, &w, q->timeline, &p, &n)
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
