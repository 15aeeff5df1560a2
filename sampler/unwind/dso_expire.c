// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dso_expire.c - the dso cache's bound and expiry (see dso.h): which
 * objects nobody uses any more, and letting them go. Every function here
 * but dso_note_user() takes the cache's lock; an object is only ever
 * referenced anew under that lock (or by a holder of a reference), so one
 * the cache alone holds stays so while the sweep looks at it.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "sampler/clock.h"
#include "sampler/log.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/dso_i.h"

/* Called with c->lock held: drop every entry of d, and the cache's
 * reference (the last one: nobody else holds d). */
static void cache_drop(struct dso_cache *c, struct dso *d)
{
	for (size_t i = 0; i < c->ntab; i++)
		for (struct cache_ent **pe = &c->tab[i], *e; (e = *pe);) {
			if (e->dso != d) {
				pe = &e->next;
				continue;
			}
			*pe = e->next;
			c->nent--;
			c->nobj -= e->owner;
			free(e);
		}
	c->expired++;
	dso_put(d);
}

void dso_note_user(struct dso *d, pid_t pid)
{
	for (int i = 0; i < DSO_USERS; i++)
		if (atomic_load_explicit(&d->users[i], memory_order_relaxed) ==
		    pid)
			return;
	atomic_store_explicit(&d->users[atomic_fetch_add(&d->next_user, 1) %
					DSO_USERS], pid, memory_order_relaxed);
}

/* Whether a process seen mapping d may still run (a reused pid keeps d a
 * little longer, within the cache's bound). */
static bool dso_mapped(struct dso *d)
{
	for (int i = 0; i < DSO_USERS; i++) {
		pid_t pid = atomic_load_explicit(&d->users[i],
						 memory_order_relaxed);

		if (pid > 0 && (!kill(pid, 0) || errno == EPERM))
			return true;
	}
	return false;
}

/* Called with c->lock held: the dso nobody but the cache holds, let go
 * of longest ago and at or before until_ms, or NULL. */
static struct dso *cache_oldest_unused(const struct dso_cache *c,
				       uint64_t until_ms)
{
	struct dso *best = NULL;
	uint64_t best_ms = 0;

	for (size_t i = 0; i < c->ntab; i++)
		for (struct cache_ent *e = c->tab[i]; e; e = e->next) {
			uint64_t t = atomic_load_explicit(
				&e->dso->last_put_ms, memory_order_relaxed);

			if (e->owner && atomic_load(&e->dso->refs) == 1 &&
			    t <= until_ms && (!best || t < best_ms)) {
				best = e->dso;
				best_ms = t;
			}
		}
	return best;
}

/* Called with c->lock held: a dso nobody but the cache holds, idle for
 * the expiry time, that no process seen mapping it runs; or NULL. */
static struct dso *cache_expired(const struct dso_cache *c, uint64_t ms)
{
	for (size_t i = 0; i < c->ntab; i++)
		for (struct cache_ent *e = c->tab[i]; e; e = e->next)
			if (e->owner && atomic_load(&e->dso->refs) == 1 &&
			    ms - atomic_load(&e->dso->last_put_ms) >=
			    c->idle_ms && !dso_mapped(e->dso))
				return e->dso;
	return NULL;
}

/* Called with c->lock held: the bytes of the dsos the cache holds, and
 * of those in use, into c->bytes and c->in_use. */
static void cache_count(struct dso_cache *c)
{
	c->bytes = c->in_use = 0;
	for (size_t i = 0; i < c->ntab; i++)
		for (struct cache_ent *e = c->tab[i]; e; e = e->next) {
			uint64_t m;

			if (!e->owner)
				continue;
			m = dso_mem_bytes(e->dso);
			c->bytes += m;
			if (atomic_load(&e->dso->refs) > 1)
				c->in_use += m;
		}
}

/* Called with c->lock held: past the byte bound, the least recently let
 * go of the idle dsos go, but none let go within the grace time (a
 * profile read every few seconds keeps its objects). In-use dsos stay:
 * when they alone exceed the bound, that is said once an hour at most
 * (with how many times it happened), and the recorder lets go of what
 * it can (dso_cache_pressed). */
static size_t cache_shrink(struct dso_cache *c, uint64_t ms)
{
	uint64_t until = ms > c->grace_ms ? ms - c->grace_ms : 0;
	size_t dropped = 0;
	struct dso *d;
	bool over;

	cache_count(c);
	while (c->max_bytes && c->bytes > c->max_bytes &&
	       (d = cache_oldest_unused(c, until))) {
		c->bytes -= dso_mem_bytes(d);
		cache_drop(c, d);
		dropped++;
	}
	over = c->max_bytes && c->in_use > c->max_bytes;
	c->overs += over && !c->over;
	if (over && !c->over && (!c->said_ms ||
				 ms - c->said_ms >= DSO_CACHE_SAY_MS)) {
		/* a notice: the bound works as told, nothing failed */
		pr_notice("dso: objects in use hold %.1f MiB, over the "
			  "cache's bound (dso_mem=%.1f MiB), %llu time%s since "
			  "the last such line; idle ones go once let go",
			  c->in_use / 1048576.0, c->max_bytes / 1048576.0,
			  (unsigned long long)c->overs,
			  c->overs == 1 ? "" : "s");
		c->said_ms = ms ? ms : 1;
		c->overs = 0;
	}
	c->over = over;
	return dropped;
}

void dso_cache_sweep(struct dso_cache *c, bool now)
{
	uint64_t ms = now_ns() / 1000000;
	size_t dropped = 0;
	struct dso *d;

	pthread_mutex_lock(&c->lock);
	if (!now && ms - c->swept_ms < DSO_CACHE_SWEEP_MS) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	c->swept_ms = ms;
	/* A reference is only taken under the lock, or from a holder: one
	 * held by the cache alone stays so while we look. */
	while ((d = cache_expired(c, ms))) {
		cache_drop(c, d);
		dropped++;
	}
	while (c->nobj > c->max && (d = cache_oldest_unused(c, UINT64_MAX))) {
		cache_drop(c, d);
		dropped++;
	}
	dropped += cache_shrink(c, ms);
	pthread_mutex_unlock(&c->lock);
	if (dropped)
		malloc_trim(0);	/* give the freed tables back to the system */
}

void dso_cache_set_limits(struct dso_cache *c, uint64_t idle_ms, size_t max)
{
	pthread_mutex_lock(&c->lock);
	c->idle_ms = idle_ms;
	c->max = max;
	pthread_mutex_unlock(&c->lock);
}

void dso_cache_set_bytes(struct dso_cache *c, uint64_t max_bytes,
			 uint64_t grace_ms)
{
	pthread_mutex_lock(&c->lock);
	c->max_bytes = max_bytes;
	c->grace_ms = grace_ms;
	pthread_mutex_unlock(&c->lock);
}

bool dso_cache_pressed(struct dso_cache *c)
{
	bool over;

	pthread_mutex_lock(&c->lock);
	over = c->over;
	pthread_mutex_unlock(&c->lock);
	return over;
}

void dso_cache_stats(struct dso_cache *c, struct dso_cache_stats *st)
{
	dso_cache_sweep(c, true);
	pthread_mutex_lock(&c->lock);
	*st = (struct dso_cache_stats){ .objects = c->nobj, .max = c->max,
					.idle_ms = c->idle_ms,
					.expired = c->expired,
					.bytes = c->bytes, .in_use = c->in_use,
					.max_bytes = c->max_bytes,
					.grace_ms = c->grace_ms };
	for (size_t i = 0; i < c->ntab; i++)
		for (struct cache_ent *e = c->tab[i]; e; e = e->next)
			if (e->owner)
				st->rows += dso_rows_held(e->dso);
	pthread_mutex_unlock(&c->lock);
	dso_rows_counters(&st->row_hits, &st->row_misses, &st->rows_full);
	if (c->inflate_dir) {	/* set before the cache is shared */
		st->kept_bytes = dso_debug_kept_bytes(c->inflate_dir);
		st->kept_max = DSO_DEBUG_CACHE_MAX;
	}
}
