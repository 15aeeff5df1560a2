// SPDX-License-Identifier: GPL-2.0-or-later
/* octhreads.c - a tid -> record table: open addressing over an array. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/offcpu/octhreads.h"

struct oc_threads {
	struct oc_thread **v;	/* in order of arrival */
	size_t n, cap;
	uint32_t *slots;	/* index + 1 into v; 0 = empty */
	size_t nslots;		/* power of two, at least 2n */
};

int octhreads_new(struct oc_threads **out)
{
	struct oc_threads *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	*out = t;
	return 0;
}

void octhreads_free(struct oc_threads *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		task_files_close(&t->v[i]->files);
		for (uint32_t k = 0; k < t->v[i]->nstacks; k++)
			free(t->v[i]->stacks[k].locs);
		free(t->v[i]->stacks);
		for (uint32_t k = 0; k < t->v[i]->nplaces; k++)
			free(t->v[i]->places[k].pcs);
		free(t->v[i]->places);
		free(t->v[i]);
	}
	free(t->v);
	free(t->slots);
	free(t);
}

static size_t slot_of(const struct oc_threads *t, pid_t tid)
{
	size_t mask = t->nslots - 1;
	size_t i = ((uint32_t)tid * 2654435761u) & mask;

	while (t->slots[i] && t->v[t->slots[i] - 1]->tid != tid)
		i = (i + 1) & mask;
	return i;
}

struct oc_thread *octhreads_find(struct oc_threads *t, pid_t tid)
{
	size_t i;

	if (!t->nslots)
		return NULL;
	i = slot_of(t, tid);
	return t->slots[i] ? t->v[t->slots[i] - 1] : NULL;
}

static int grow(struct oc_threads *t)
{
	size_t nslots = t->nslots ? 2 * t->nslots : 64;
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	struct oc_thread **v;

	if (!slots)
		return -ENOMEM;
	v = realloc(t->v, nslots / 2 * sizeof(*v));
	if (!v) {
		free(slots);
		return -ENOMEM;
	}
	t->v = v;
	t->cap = nslots / 2;
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	for (size_t k = 0; k < t->n; k++)
		t->slots[slot_of(t, t->v[k]->tid)] = k + 1;
	return 0;
}

int octhreads_add(struct oc_threads *t, pid_t tid, struct oc_thread **out)
{
	struct oc_thread *th;
	int ret;

	if (t->n == t->cap) {
		ret = grow(t);
		if (ret)
			return ret;
	}
	th = calloc(1, sizeof(*th));
	if (!th)
		return -ENOMEM;
	th->tid = tid;
	task_files_init(&th->files);
	t->v[t->n++] = th;
	t->slots[slot_of(t, tid)] = t->n;
	*out = th;
	return 0;
}

size_t octhreads_count(const struct oc_threads *t)
{
	return t->n;
}

struct oc_thread *octhreads_at(struct oc_threads *t, size_t i)
{
	return i < t->n ? t->v[i] : NULL;
}

static uint64_t hash_locs(const uint64_t *locs, uint32_t n)
{
	uint64_t h = 1469598103934665603ull ^ n;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ locs[i]) * 1099511628211ull;
	return h;
}

/* Room in *v (of *cap elements of elem bytes) for one past n. */
static int room(void **v, uint32_t *cap, uint32_t n, size_t elem)
{
	uint32_t ncap = *cap ? 2 * *cap : 4;
	void *nv;

	if (n < *cap)
		return 0;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* A copy of v[0..n), or NULL without memory. */
static uint64_t *copy_of(const uint64_t *v, uint32_t n)
{
	uint64_t *c = malloc(n ? n * sizeof(*v) : 1);

	if (c)
		memcpy(c, v, n * sizeof(*v));
	return c;
}

static struct oc_stack *find(const struct oc_thread *th, uint64_t h,
			     const uint64_t *locs, uint32_t n)
{
	/* A thread sleeps in a few places: a scan is enough. */
	for (uint32_t k = 0; k < th->nstacks; k++) {
		struct oc_stack *st = &th->stacks[k];

		if (st->hash == h && st->nlocs == n &&
		    !memcmp(st->locs, locs, n * sizeof(*locs)))
			return st;
	}
	return NULL;
}

struct oc_stack *octhread_find_stack(const struct oc_thread *th,
				     const uint64_t *locs, uint32_t n)
{
	return find(th, hash_locs(locs, n), locs, n);
}

int octhread_set_stack(struct oc_thread *th, const uint64_t *locs,
		       uint32_t n)
{
	uint64_t h = hash_locs(locs, n);
	struct oc_stack *st = find(th, h, locs, n);

	if (!st) {
		if (room((void **)&th->stacks, &th->capstacks, th->nstacks,
			 sizeof(*st)))
			return -ENOMEM;
		st = &th->stacks[th->nstacks];
		*st = (struct oc_stack){ .hash = h, .nlocs = n };
		st->locs = copy_of(locs, n);
		if (!st->locs)
			return -ENOMEM;
		th->nstacks++;
	}
	th->cur = st - th->stacks;
	return 0;
}

static bool same_place(const struct oc_place *a, const struct oc_place *b)
{
	return a->hash == b->hash && a->npcs == b->npcs &&
	       a->nkpcs == b->nkpcs && a->in_call == b->in_call &&
	       a->pc == b->pc && a->sysno == b->sysno &&
	       (!a->npcs ||
		!memcmp(a->pcs, b->pcs, a->npcs * sizeof(*a->pcs))) &&
	       (!a->nkpcs ||
		!memcmp(a->kpcs, b->kpcs, a->nkpcs * sizeof(*a->kpcs)));
}

int octhread_place(struct oc_thread *th, const struct oc_place *want,
		   uint32_t *index)
{
	struct oc_place key = *want, *pl;

	key.hash = hash_locs(want->pcs, want->npcs) ^
		   hash_locs(want->kpcs, want->nkpcs) * 31 ^
		   (want->in_call ? want->pc : 0);
	for (uint32_t k = 0; k < th->nplaces; k++) {
		if (same_place(&th->places[k], &key)) {
			*index = k;
			return 0;
		}
	}
	if (room((void **)&th->places, &th->capplaces, th->nplaces,
		 sizeof(*pl)))
		return -ENOMEM;
	pl = &th->places[th->nplaces];
	*pl = (struct oc_place){ .hash = key.hash, .npcs = key.npcs,
				 .nkpcs = key.nkpcs, .in_call = key.in_call,
				 .pc = key.pc, .sysno = key.sysno };
	pl->pcs = malloc((key.npcs + key.nkpcs) * sizeof(*pl->pcs) + 1);
	if (!pl->pcs)
		return -ENOMEM;
	if (key.npcs)
		memcpy(pl->pcs, key.pcs, key.npcs * sizeof(*pl->pcs));
	pl->kpcs = pl->pcs + key.npcs;
	if (key.nkpcs)
		memcpy(pl->kpcs, key.kpcs, key.nkpcs * sizeof(*pl->kpcs));
	*index = th->nplaces++;
	return 0;
}
