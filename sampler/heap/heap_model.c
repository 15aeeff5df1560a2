// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * heap_model.c - buckets of (stack, size) with Go-weighted counters, the
 * live set of sampled addresses, snapshots and profiles.
 *
 * Counters are doubles: weights are fractional and must add up without
 * rounding per sample; they are rounded once, when a profile is made.
 * The symbols (mappings, locations, functions) live in a profile of the
 * model's own that never holds a sample; every profile made is a copy of
 * it plus the buckets as samples.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/grow.h"
#include "sampler/heap/heap_model.h"
#include "sampler/unwind/maps.h"
#include "sampler/proc.h"
#include "sampler/model/profile.h"
#include "sampler/unwind/stackctx.h"
#include "sampler/unwind/symbolize.h"
#include "sampler/unwind/unwind.h"

#define MAX_FRAMES 128
#define LIVE_EMPTY 0
#define LIVE_TOMB 1

enum { V_ALLOC_OBJ, V_ALLOC_BYTES, V_FREE_OBJ, V_FREE_BYTES, NV };

struct bucket {
	uint64_t hash;
	uint64_t size;
	uint32_t nlocs;
	uint32_t off;		/* into locs */
	double v[NV];
};

struct live {
	uint64_t addr;		/* LIVE_EMPTY, LIVE_TOMB or an address */
	uint64_t size;		/* a bucket past max_buckets mixes sizes */
	uint32_t bucket;
	double w;		/* the objects its allocation counted for */
};

struct heap_snap {
	size_t n;
	double (*v)[NV];
	uint64_t dropped;	/* the model's count when taken */
};

struct heap_model {
	struct stack_ctx sc;	/* maps (the caller's), unwinder, symbols */
	struct profile *p;	/* symbols only, never a sample */
	int64_t key_bytes, unit_bytes;
	uint32_t max_buckets;
	size_t max_live;	/* 0 = no bound */
	uint64_t overflow_loc;	/* 0 until max_buckets is reached */
	uint64_t unknown_loc;	/* 0 until a sample does not unwind */

	struct bucket *b;
	size_t nb, capb;
	uint64_t *locs;
	size_t nlocs, caplocs;
	uint32_t *bix;		/* bucket index + 1, 0 = empty */
	size_t capbix;		/* power of two */

	struct live *live;
	size_t caplive, nlive, ntomb;	/* caplive: power of two */

	uint64_t samples, frees;
	uint64_t dropped;	/* tracked samples refused: live set full */
	/* how much stack unwinding needs: the largest use seen in this
	 * period of STACK_PERIOD samples and the last one */
	size_t stack_max, stack_prev;
	uint64_t stack_seen;
};

#define STACK_PERIOD 4096
#define STACK_SLACK 512	/* a frame deeper than any seen yet */
#define STACK_FULL (~(size_t)0)

static uint64_t mix(uint64_t h, uint64_t x)
{
	h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

/* ---- life cycle ---- */

static int setup_profile(struct heap_model *m, pid_t pid)
{
	static const char *const types[][2] = {
		{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
		{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
	};
	int ret;

	ret = profile_new(&m->p);
	if (ret)
		return ret;
	for (size_t i = 0; i < 4; i++)
		if (profile_add_sample_type(m->p, types[i][0], types[i][1]))
			return -ENOMEM;
	m->key_bytes = profile_intern(m->p, "bytes");
	m->unit_bytes = m->key_bytes;
	if (m->key_bytes < 0 || proc_name_profile(m->p, pid, NULL) ||
	    profile_set_period(m->p, "space", "bytes", 1))
		return -ENOMEM;
	return 0;
}

int heap_model_new(pid_t pid, struct proc_maps *maps, uint32_t max_buckets,
		   struct heap_model **out)
{
	struct heap_model *m = calloc(1, sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	m->max_buckets = max_buckets;
	m->max_live = (size_t)max_buckets * HEAP_MODEL_LIVE_PER_STACK;
	ret = setup_profile(m, pid);
	if (!ret)
		ret = stackctx_open_maps(&m->sc, maps, m->p, 0);
	if (ret) {
		heap_model_free(m);
		return ret;
	}
	*out = m;
	return 0;
}

int heap_model_read_live(struct heap_model *m)
{
	return unwinder_read_live(m->sc.unw, maps_pid(m->sc.maps));
}

void heap_model_free(struct heap_model *m)
{
	if (!m)
		return;
	stackctx_close(&m->sc);
	profile_free(m->p);
	free(m->b);
	free(m->locs);
	free(m->bix);
	free(m->live);
	free(m);
}

void heap_model_reset(struct heap_model *m)
{
	m->nb = 0;
	m->nlocs = 0;
	if (m->bix)
		memset(m->bix, 0, m->capbix * sizeof(*m->bix));
	if (m->live)
		memset(m->live, 0, m->caplive * sizeof(*m->live));
	m->nlive = m->ntomb = 0;
	m->samples = m->frees = m->dropped = 0;
	m->stack_max = m->stack_prev = m->stack_seen = 0;
}

/* ---- buckets ---- */

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	return grow_array(v, cap, need, elem, 64);
}

static bool same_bucket(const struct heap_model *m, const struct bucket *b,
			uint64_t hash, const uint64_t *locs, uint32_t n,
			uint64_t size)
{
	return b->hash == hash && b->size == size && b->nlocs == n &&
	       !memcmp(m->locs + b->off, locs, n * sizeof(*locs));
}

static int rehash_buckets(struct heap_model *m)
{
	size_t cap = m->capbix ? m->capbix * 2 : 1024;
	uint32_t *bix = calloc(cap, sizeof(*bix));

	if (!bix)
		return -ENOMEM;
	for (size_t i = 0; i < m->nb; i++) {
		size_t k = m->b[i].hash & (cap - 1);

		while (bix[k])
			k = (k + 1) & (cap - 1);
		bix[k] = i + 1;
	}
	free(m->bix);
	m->bix = bix;
	m->capbix = cap;
	return 0;
}

static int add_bucket(struct heap_model *m, uint64_t hash,
		      const uint64_t *locs, uint32_t n, uint64_t size,
		      uint32_t *idx)
{
	struct bucket *b;

	if ((m->nb + 1) * 2 > m->capbix && rehash_buckets(m))
		return -ENOMEM;
	if (grow((void **)&m->b, &m->capb, m->nb + 1, sizeof(*m->b)) ||
	    grow((void **)&m->locs, &m->caplocs, m->nlocs + n,
		 sizeof(*m->locs)))
		return -ENOMEM;
	b = &m->b[m->nb];
	*b = (struct bucket){ .hash = hash, .size = size, .nlocs = n,
			      .off = m->nlocs };
	memcpy(m->locs + m->nlocs, locs, n * sizeof(*locs));
	m->nlocs += n;
	*idx = m->nb++;
	for (size_t k = hash & (m->capbix - 1);; k = (k + 1) & (m->capbix - 1))
		if (!m->bix[k]) {
			m->bix[k] = *idx + 1;
			return 0;
		}
}

/* A location of its own, made once, for samples with no stack of theirs. */
static int marker_location(struct heap_model *m, const char *name,
			   uint64_t *cache, uint64_t *loc)
{
	struct pf_line line = { 0 };
	int ret;

	if (!*cache) {
		ret = profile_add_function(m->p, name, NULL, NULL, 0,
					   &line.function_id);
		if (!ret)
			ret = profile_add_location(m->p, 0, 0, &line, 1, cache);
		if (ret)
			return ret;
	}
	*loc = *cache;
	return 0;
}

static int find_bucket(struct heap_model *m, uint64_t *locs, uint32_t n,
		       uint64_t size, uint32_t *idx)
{
	uint64_t hash = mix(size, n);
	int ret;

	for (uint32_t i = 0; i < n; i++)
		hash = mix(hash, locs[i]);
	for (size_t k = m->capbix ? hash & (m->capbix - 1) : 0; m->capbix;
	     k = (k + 1) & (m->capbix - 1)) {
		if (!m->bix[k])
			break;
		if (same_bucket(m, &m->b[m->bix[k] - 1], hash, locs, n, size)) {
			*idx = m->bix[k] - 1;
			return 0;
		}
	}
	if (m->max_buckets && m->nb >= m->max_buckets &&
	    !(n == 1 && locs[0] == m->overflow_loc)) {
		ret = marker_location(m, "[max_stacks reached]",
				      &m->overflow_loc, &locs[0]);
		return ret ? ret : find_bucket(m, locs, 1, 0, idx);
	}
	return add_bucket(m, hash, locs, n, size, idx);
}

/* ---- the live set ---- */

static size_t live_slot(const struct heap_model *m, uint64_t addr)
{
	return mix(0, addr) & (m->caplive - 1);
}

static int live_rehash(struct heap_model *m)
{
	size_t cap = m->nlive * 4 > m->caplive ? m->caplive * 2 : m->caplive;
	struct live *old = m->live, *nv;
	size_t oldcap = m->caplive;

	if (cap < 1024)
		cap = 1024;
	nv = calloc(cap, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	m->live = nv;
	m->caplive = cap;
	m->ntomb = 0;
	for (size_t i = 0; i < oldcap; i++) {
		size_t k;

		if (old[i].addr <= LIVE_TOMB)
			continue;
		for (k = live_slot(m, old[i].addr); nv[k].addr;
		     k = (k + 1) & (cap - 1))
			;
		nv[k] = old[i];
	}
	free(old);
	return 0;
}

static struct live *live_find(struct heap_model *m, uint64_t addr)
{
	if (!m->caplive)
		return NULL;
	for (size_t k = live_slot(m, addr);; k = (k + 1) & (m->caplive - 1)) {
		if (m->live[k].addr == addr)
			return &m->live[k];
		if (m->live[k].addr == LIVE_EMPTY)
			return NULL;
	}
}

static int live_add(struct heap_model *m, uint64_t addr, uint64_t size,
		    uint32_t bucket, double w)
{
	struct live *l = live_find(m, addr);
	size_t k;

	if (l) {	/* its free went unseen: the newer one wins */
		heap_model_free_addr(m, addr);
	}
	if ((m->nlive + m->ntomb + 1) * 2 > m->caplive && live_rehash(m))
		return -ENOMEM;
	for (k = live_slot(m, addr); m->live[k].addr > LIVE_TOMB;
	     k = (k + 1) & (m->caplive - 1))
		;
	if (m->live[k].addr == LIVE_TOMB)
		m->ntomb--;
	m->live[k] = (struct live){ .addr = addr, .size = size,
				    .bucket = bucket, .w = w };
	m->nlive++;
	return 0;
}

bool heap_model_free_addr(struct heap_model *m, uint64_t addr)
{
	struct live *l = addr > LIVE_TOMB ? live_find(m, addr) : NULL;
	struct bucket *b;

	if (!l)
		return false;
	b = &m->b[l->bucket];
	b->v[V_FREE_OBJ] += l->w;
	b->v[V_FREE_BYTES] += l->w * (double)l->size;
	l->addr = LIVE_TOMB;
	m->nlive--;
	m->ntomb++;
	m->frees++;
	return true;
}

/* ---- samples ---- */

/* Go's runtime.scaleHeapSample, for one allocation. */
static double weight(uint64_t size, uint64_t rate)
{
	if (rate <= 1 || !size)
		return 1;
	return 1 / -expm1(-(double)size / (double)rate);
}

static bool in_agent(struct heap_model *m, uint64_t pc)
{
	struct map_entry *e = maps_find(m->sc.maps, pc);

	return e && strstr(e->path, "proffs-heap");
}

static void note_stack_use(struct heap_model *m)
{
	size_t used;
	bool short_copy;

	unwind_last_stack_use(m->sc.unw, &used, &short_copy);
	if (short_copy)
		used = STACK_FULL;
	if (used > m->stack_max)
		m->stack_max = used;
	if (++m->stack_seen % STACK_PERIOD == 0) {
		m->stack_prev = m->stack_max;
		m->stack_max = 0;
	}
}

size_t heap_model_stack_want(const struct heap_model *m)
{
	size_t most = m->stack_max > m->stack_prev ? m->stack_max :
						     m->stack_prev;

	if (!m->stack_seen || most == STACK_FULL)
		return 0;
	return (most + STACK_SLACK + 511) & ~(size_t)511;
}

/* The sample's stack, leaf first, without the agent's own frames. */
static int stack_of(struct heap_model *m, const struct heap_alloc_sample *s,
		    uint64_t *locs, uint32_t *n)
{
	uint64_t pcs[MAX_FRAMES];
	int npcs, first = 0, ret;

	unwind_stack(m->sc.unw, s->regs, s->stack, s->stack_len, pcs,
		     MAX_FRAMES, &npcs);
	note_stack_use(m);
	while (first < npcs && in_agent(m, pcs[first]))
		first++;
	first += s->drop_leaf;
	*n = 0;
	for (int i = first; i < npcs; i++) {
		ret = symbolizer_location(m->sc.sym, pcs[i], &locs[(*n)++]);
		if (ret)
			return ret;
	}
	if (!*n) {
		*n = 1;
		return marker_location(m, "[unknown]", &m->unknown_loc,
				       &locs[0]);
	}
	return 0;
}

int heap_model_alloc(struct heap_model *m, const struct heap_alloc_sample *s)
{
	uint64_t locs[MAX_FRAMES];
	struct bucket *b;
	uint32_t n, idx;
	double w;
	int ret;

	/* A block the live set has no room for could not be taken out of
	 * use at its free: count none of it, rather than a heap profile
	 * that grows forever, and say so in the profile. Checked first: an
	 * unwind is the dear part of a sample. */
	if (s->tracked && m->max_live && m->nlive >= m->max_live &&
	    !live_find(m, s->addr)) {
		m->dropped++;
		return 0;
	}
	ret = stack_of(m, s, locs, &n);
	if (!ret)
		ret = find_bucket(m, locs, n, s->size, &idx);
	if (ret)
		return ret;
	w = weight(s->size, s->rate);
	b = &m->b[idx];
	b->v[V_ALLOC_OBJ] += w;
	b->v[V_ALLOC_BYTES] += w * (double)s->size;
	m->samples++;
	if (!s->tracked)
		return 0;
	return live_add(m, s->addr, s->size, idx, w);
}

/* ---- snapshots and profiles ---- */

int heap_model_snapshot(struct heap_model *m, struct heap_snap **out)
{
	struct heap_snap *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->n = m->nb;
	s->dropped = m->dropped;
	s->v = malloc((m->nb ? m->nb : 1) * sizeof(*s->v));
	if (!s->v) {
		free(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->nb; i++)
		memcpy(s->v[i], m->b[i].v, sizeof(s->v[i]));
	*out = s;
	return 0;
}

void heap_snap_free(struct heap_snap *s)
{
	if (!s)
		return;
	free(s->v);
	free(s);
}

static int add_bucket_sample(struct heap_model *m, struct profile *p,
			     size_t i, const double d[NV])
{
	const struct bucket *b = &m->b[i];
	struct pf_label bytes = { .key = m->key_bytes, .num = (int64_t)b->size,
				  .num_unit = m->unit_bytes };
	int64_t v[4] = {
		llround(d[V_ALLOC_OBJ]), llround(d[V_ALLOC_BYTES]),
		llround(d[V_ALLOC_OBJ] - d[V_FREE_OBJ]),
		llround(d[V_ALLOC_BYTES] - d[V_FREE_BYTES]),
	};

	if (!v[0] && !v[1] && !v[2] && !v[3])
		return 0;
	return profile_add_sample(p, m->locs + b->off, b->nlocs, &bytes,
				  b->size ? 1 : 0, v);
}

int heap_model_profile(struct heap_model *m, const struct heap_snap *from,
		       const struct heap_snap *to,
		       const struct heap_profile_info *info,
		       struct profile **out)
{
	static const char *const keep_all[] = { NULL };
	struct pf_header *h;
	struct profile *p;
	int ret;

	ret = profile_copy_dropping_labels(m->p, keep_all, &p);
	if (ret)
		return ret;
	h = profile_header(p);
	h->period = info->period;
	h->time_nanos = info->time_nanos;
	h->duration_nanos = info->duration_nanos;
	h->kind = profile_intern(p, info->allocs ? "allocs" : "heap");
	h->default_sample_type = profile_intern(p, info->allocs ?
						"alloc_space" : "inuse_space");
	if (h->kind < 0 || h->default_sample_type < 0)
		ret = -ENOMEM;
	for (size_t i = 0; i < to->n && i < m->nb && !ret; i++) {
		double d[NV];

		for (int k = 0; k < NV; k++)
			d[k] = to->v[i][k] -
			       (from && i < from->n ? from->v[i][k] : 0);
		ret = add_bucket_sample(m, p, i, d);
	}
	if (!ret && to->dropped > (from ? from->dropped : 0)) {
		char text[300];

		snprintf(text, sizeof(text), "proffs: %llu sampled "
			 "allocations were dropped: %zu sampled blocks were "
			 "live at once, the most a session keeps (%d x "
			 "max_stacks); totals are low by as much",
			 (unsigned long long)(to->dropped -
					      (from ? from->dropped : 0)),
			 m->max_live, HEAP_MODEL_LIVE_PER_STACK);
		ret = profile_add_comment(p, text);
	}
	if (ret) {
		profile_free(p);
		return ret;
	}
	*out = p;
	return 0;
}

void heap_model_totals(const struct heap_model *m, struct heap_totals *t)
{
	double d[NV] = { 0 };

	for (size_t i = 0; i < m->nb; i++)
		for (int k = 0; k < NV; k++)
			d[k] += m->b[i].v[k];
	t->alloc_objects = llround(d[V_ALLOC_OBJ]);
	t->alloc_bytes = llround(d[V_ALLOC_BYTES]);
	t->inuse_objects = llround(d[V_ALLOC_OBJ] - d[V_FREE_OBJ]);
	t->inuse_bytes = llround(d[V_ALLOC_BYTES] - d[V_FREE_BYTES]);
}

uint64_t heap_model_samples(const struct heap_model *m)
{
	return m->samples;
}

uint64_t heap_model_frees(const struct heap_model *m)
{
	return m->frees;
}

uint64_t heap_model_dropped(const struct heap_model *m)
{
	return m->dropped;
}
