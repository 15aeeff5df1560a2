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
 * of longest ago, or NULL. */
static struct dso *cache_oldest_unused(const struct dso_cache *c)
{
	struct dso *best = NULL;
	uint64_t best_ms = UINT64_MAX;

	for (size_t i = 0; i < c->ntab; i++)
		for (struct cache_ent *e = c->tab[i]; e; e = e->next) {
			uint64_t t = atomic_load_explicit(
				&e->dso->last_put_ms, memory_order_relaxed);

			if (e->owner && atomic_load(&e->dso->refs) == 1 &&
			    t < best_ms) {
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
	while (c->nobj > c->max && (d = cache_oldest_unused(c))) {
		cache_drop(c, d);
		dropped++;
	}
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

void dso_cache_stats(struct dso_cache *c, struct dso_cache_stats *st)
{
	dso_cache_sweep(c, true);
	pthread_mutex_lock(&c->lock);
	*st = (struct dso_cache_stats){ .objects = c->nobj, .max = c->max,
					.idle_ms = c->idle_ms,
					.expired = c->expired };
	pthread_mutex_unlock(&c->lock);
	if (c->inflate_dir) {	/* set before the cache is shared */
		st->kept_bytes = dso_debug_kept_bytes(c->inflate_dir);
		st->kept_max = dso_debug_kept_max;
	}
}
