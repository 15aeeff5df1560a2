// SPDX-License-Identifier: GPL-2.0-or-later
/* record.c - the flight recorder: per-CPU samples -> per-second buckets. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/cpu/cpu.h"
#include "sampler/log.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/maps.h"
#include "sampler/perf/perf.h"
#include "sampler/model/profile.h"
#include "sampler/model/profile_merge.h"
#include "sampler/record/record.h"
#include "sampler/record/record_i.h"
#include "sampler/unwind/symbolize.h"
#include "sampler/unwind/unwind.h"

#define MAX_FRAMES 128
#define POLL_MS 100
#define CREDS_EVERY_S 5		/* a live process's credentials re-read */
#define BROKEN_KEEP_S 10	/* a process that would not load, retried */
/* A live process with no sample for this long lets go of its context
 * (maps, unwinder, symbolizer, and with them its hold on the dso
 * cache's objects); its next sample starts a new one (record.h). */
#define CONTEXT_IDLE_S 10
/* Over the memory bound: first the contexts of processes not sampled in
 * this long go, then the oldest buckets. */
#define CONTEXT_PRESSED_S 2

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

/* What one malloc() of n bytes takes, about (as profile_mem_bytes()). */
static uint64_t heap_bytes(uint64_t n)
{
	uint64_t m = (n + 8 + 15) & ~15ull;

	return m < 32 ? 32 : m;
}

/* What a process holds: itself, its stacks, its dictionary (strings and
 * tables, profile_mem_bytes()) and, while it has one, its context. */
static uint64_t proc_mem(const struct rproc *p)
{
	uint64_t m = heap_bytes(sizeof(*p));

	if (p->cap)
		m += heap_bytes(p->cap * sizeof(*p->stacks)) +
		     heap_bytes(p->nslots * sizeof(*p->slots));
	for (uint32_t i = 0; i < p->nstacks; i++)
		m += heap_bytes((p->stacks[i].nlocs ? p->stacks[i].nlocs : 1)
				* sizeof(uint64_t));
	if (p->dict)
		m += profile_mem_bytes(p->dict);
	return m + maps_mem_bytes(p->maps) + unwinder_mem_bytes(p->unw) +
	       symbolizer_mem_bytes(p->sym);
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
		if (p->pid == pid && !p->exited && !p->retired)
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
	uint64_t m = heap_bytes(sizeof(*r)) +
		     heap_bytes(r->nbuckets * sizeof(struct rbucket));

	for (uint32_t i = 0; i < r->nbuckets; i++)
		if (r->buckets[i].cap)
			m += heap_bytes(r->buckets[i].cap *
					sizeof(struct rentry));
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct rproc *p = r->procs[b]; p; p = p->next)
			m += proc_mem(p);
	return m;
}

/* Whether p exited (or its pid was reused). Its maps go at the next
 * sweep, on the recorder's thread, which alone uses them. */
void record_check_exit(struct rproc *p)
{
	unsigned long long start;

	if (p->exited || p->broken ||
	    (!proc_stat_fields(p->pid, NULL, &start) && start == p->start))
		return;
	p->exit_ns = clock_ns(CLOCK_REALTIME);
	p->exited = true;
}

/* Live processes not sampled for idle_s let go of their contexts. */
static void retire_idle(struct recorder *r, uint64_t now, uint64_t idle_s)
{
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct rproc *p = r->procs[b]; p; p = p->next)
			if (p->maps && !p->broken &&
			    now - p->seen_sec >= idle_s) {
				proc_unload(p);
				p->retired = true;
				r->st.retired++;
			}
}

/* Processes no bucket names any more go; exits are noticed. */
static void sweep_procs(struct recorder *r, uint64_t now)
{
	for (size_t b = 0; b < PROC_BUCKETS; b++) {
		struct rproc **pp = &r->procs[b], *p;

		while ((p = *pp)) {
			bool gone = p->broken ? now - p->seen_sec >
						BROKEN_KEEP_S : !p->refs;

			record_check_exit(p);
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

/* Rebuild p's hash of stacks over slots n (a power of two, twice the
 * stacks it may hold at least). */
static void stacks_rehash(struct rproc *p)
{
	memset(p->slots, 0, p->nslots * sizeof(*p->slots));
	for (uint32_t i = 0; i < p->nstacks; i++) {
		uint32_t h = p->stacks[i].hash & (p->nslots - 1);

		while (p->slots[h])
			h = (h + 1) & (p->nslots - 1);
		p->slots[h] = i + 1;
	}
}

/* p's stacks that no bucket names any more go; p->remap[old] is the
 * new index + 1 of the ones that stay. Tables shrink to hold 2 to 4
 * times the stacks left (dropping buckets must free memory). */
static void stacks_keep(struct rproc *p)
{
	uint32_t n = 0, size = p->nslots;

	for (uint32_t i = 0; i < p->nstacks; i++) {
		if (!p->remap[i]) {
			free(p->stacks[i].locs);
			continue;
		}
		p->stacks[n] = p->stacks[i];
		p->remap[i] = ++n;
	}
	p->nstacks = n;
	while (size > 64 && (uint64_t)n * 4 <= size / 2)
		size /= 2;
	if (size != p->nslots) {
		struct rstack *s = realloc(p->stacks, (size / 2) * sizeof(*s));
		uint32_t *slots = realloc(p->slots, size * sizeof(*slots));

		if (s)
			p->stacks = s;
		if (slots)
			p->slots = slots;
		if (s && slots) {
			p->cap = size / 2;
			p->nslots = size;
		}
	}
	stacks_rehash(p);
}

/*
 * The stacks of dropped or aged-out buckets go: a long-lived process
 * with ever new stacks would hold them all else, and dropping buckets
 * would free nothing. On the recorder's thread (which alone adds
 * stacks), under r->lock (readers) and each p->lock.
 */
static void compact_stacks(struct recorder *r)
{
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct rproc *p = r->procs[b]; p; p = p->next)
			if (p->nstacks)
				p->remap = calloc(p->nstacks,
						  sizeof(*p->remap));
	for (uint32_t i = 0; i < r->nbuckets; i++)
		for (uint32_t k = 0; k < r->buckets[i].n; k++) {
			struct rentry *e = &r->buckets[i].e[k];

			if (e->proc->remap)
				e->proc->remap[e->stack] = 1;
		}
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct rproc *p = r->procs[b]; p; p = p->next)
			if (p->remap) {
				pthread_mutex_lock(&p->lock);
				stacks_keep(p);
				pthread_mutex_unlock(&p->lock);
			}
	for (uint32_t i = 0; i < r->nbuckets; i++)
		for (uint32_t k = 0; k < r->buckets[i].n; k++) {
			struct rentry *e = &r->buckets[i].e[k];

			if (e->proc->remap)
				e->stack = e->proc->remap[e->stack] - 1;
		}
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct rproc *p = r->procs[b]; p; p = p->next) {
			free(p->remap);
			p->remap = NULL;
		}
}

/* Once a second: buckets past the span go. Over the memory bound:
 * idle contexts, then stacks no bucket names, then the oldest buckets
 * while it still is (and the processes and stacks they named). */
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
	retire_idle(r, now, CONTEXT_IDLE_S);
	/* the dso cache over its bound with objects in use: let go of ours
	 * that can wait (dso.h: dso_cache_pressed()) */
	if (r->o.cache && dso_cache_pressed(r->o.cache))
		retire_idle(r, now, CONTEXT_PRESSED_S);
	r->st.mem_bytes = mem_held(r);
	if (r->st.mem_bytes > r->o.mem_bytes) {
		retire_idle(r, now, CONTEXT_PRESSED_S);
		compact_stacks(r);
		r->st.mem_bytes = mem_held(r);
	}
	while (r->st.mem_bytes > r->o.mem_bytes && (b = oldest(r)) &&
	       b->sec != now) {
		bucket_clear(b);
		r->st.dropped_buckets++;
		sweep_procs(r, now);
		compact_stacks(r);
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
	pthread_setname_np(pthread_self(), "proffs-record");	/* top -H */
	while (!atomic_load(&r->stop)) {
		uint64_t now = mono_sec();

		pthread_mutex_lock(&r->lock);
		r->now_sec = now;
		pthread_mutex_unlock(&r->lock);
		uint64_t t = clock_ns(CLOCK_MONOTONIC), woken;

		ret = perf_poll(r->rec, POLL_MS, on_sample, r);
		/* A reader waits for the samples up to its request: read
		 * the rings once more, from a moment after it woke us. */
		if (!ret && read(r->wake_fd, &woken, sizeof(woken)) > 0) {
			t = clock_ns(CLOCK_MONOTONIC);
			ret = perf_poll(r->rec, 0, on_sample, r);
		}
		pthread_mutex_lock(&r->lock);
		r->drained_ns = t;
		pthread_cond_broadcast(&r->drained);
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
	pthread_condattr_t ca;
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
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->drained, &ca);
	pthread_condattr_destroy(&ca);
	r->now_sec = mono_sec();
	r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ret = r->wake_fd < 0 ? -errno : 0;
	if (!ret)
		ret = perf_open_system(o->hz, false, &r->rec);
	if (!ret) {
		ret = perf_add_wake_fd(r->rec, r->wake_fd);
		if (!ret)
			ret = -pthread_create(&r->thread, NULL, record_main,
					      r);
		if (ret)
			perf_close(r->rec);
	}
	if (ret) {
		if (r->wake_fd >= 0)
			close(r->wake_fd);
		pthread_cond_destroy(&r->drained);
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
	/* a reader still waiting sees stop at its next look */
	pthread_mutex_lock(&r->lock);
	pthread_cond_broadcast(&r->drained);
	pthread_mutex_unlock(&r->lock);
	pr_info("record: stopped: samples=%llu lost=%llu procs=%u "
		"mem_bytes=%llu dropped_buckets=%llu cpu_ms=%llu",
		(unsigned long long)r->st.samples,
		(unsigned long long)r->st.lost, r->st.procs,
		(unsigned long long)r->st.mem_bytes,
		(unsigned long long)r->st.dropped_buckets,
		(unsigned long long)(r->st.cpu_ns / 1000000));
	perf_close(r->rec);
	close(r->wake_fd);
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
	pthread_cond_destroy(&r->drained);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

unsigned record_span_s(const struct recorder *r)
{
	return r->o.span_s;
}

void record_get_stats(struct recorder *r, struct record_stats *st)
{
	pthread_mutex_lock(&r->lock);
	*st = r->st;
	st->mem_max = r->o.mem_bytes;
	pthread_mutex_unlock(&r->lock);
}
