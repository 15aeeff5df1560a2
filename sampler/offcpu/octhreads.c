// SPDX-License-Identifier: GPL-2.0-or-later
/* octhreads.c - a tid -> record table: open addressing over an array. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "octhreads.h"

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
		free(t->v[i]->locs);
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

int octhread_set_locs(struct oc_thread *th, const uint64_t *locs,
		      uint32_t n)
{
	if (n > th->caplocs) {
		uint64_t *v = realloc(th->locs, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		th->locs = v;
		th->caplocs = n;
	}
	memcpy(th->locs, locs, n * sizeof(*locs));
	th->nlocs = n;
	return 0;
}
