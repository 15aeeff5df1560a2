// SPDX-License-Identifier: GPL-2.0-or-later
/* waitclass.c - futex waits told apart by the library code around them. */
#include <errno.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "sampler/unwind/dso.h"
#include "sampler/unwind/maps.h"
#include "sampler/unwind/unwind.h"
#include "sampler/offcpu/waitclass.h"

#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2 13
#endif
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

/* Names glibc keeps in .symtab only (the __ ones mostly) count where a
 * debug file is installed; without it the exported caller decides. */
static const struct {
	const char *name;
	enum wait_class class;
} wait_fns[] = {
	{ "pthread_mutex_lock", WAIT_LOCK },
	{ "__pthread_mutex_lock", WAIT_LOCK },
	{ "__pthread_mutex_lock_full", WAIT_LOCK },
	{ "pthread_mutex_timedlock", WAIT_LOCK },
	{ "__pthread_mutex_timedlock", WAIT_LOCK },
	{ "pthread_mutex_clocklock", WAIT_LOCK },
	{ "__pthread_mutex_clocklock", WAIT_LOCK },
	{ "__pthread_mutex_clocklock_common", WAIT_LOCK },
	{ "__pthread_mutex_cond_lock", WAIT_LOCK },
	{ "__pthread_mutex_cond_lock_full", WAIT_LOCK },
	{ "__lll_lock_wait", WAIT_LOCK },
	{ "__lll_lock_wait_private", WAIT_LOCK },
	{ "__lll_clocklock_wait", WAIT_LOCK },
	{ "pthread_rwlock_rdlock", WAIT_LOCK },
	{ "pthread_rwlock_wrlock", WAIT_LOCK },
	{ "pthread_rwlock_timedrdlock", WAIT_LOCK },
	{ "pthread_rwlock_timedwrlock", WAIT_LOCK },
	{ "pthread_rwlock_clockrdlock", WAIT_LOCK },
	{ "pthread_rwlock_clockwrlock", WAIT_LOCK },
	{ "__pthread_rwlock_rdlock", WAIT_LOCK },
	{ "__pthread_rwlock_wrlock", WAIT_LOCK },
	{ "__pthread_rwlock_rdlock_full64", WAIT_LOCK },
	{ "__pthread_rwlock_wrlock_full64", WAIT_LOCK },
	{ "mtx_lock", WAIT_LOCK },
	{ "mtx_timedlock", WAIT_LOCK },
	{ "pthread_cond_wait", WAIT_SYNC },
	{ "pthread_cond_timedwait", WAIT_SYNC },
	{ "pthread_cond_clockwait", WAIT_SYNC },
	{ "__pthread_cond_wait", WAIT_SYNC },
	{ "__pthread_cond_timedwait", WAIT_SYNC },
	{ "__pthread_cond_wait_common", WAIT_SYNC },
	{ "cnd_wait", WAIT_SYNC },
	{ "cnd_timedwait", WAIT_SYNC },
	{ "sem_wait", WAIT_SYNC },
	{ "sem_timedwait", WAIT_SYNC },
	{ "sem_clockwait", WAIT_SYNC },
	{ "__new_sem_wait", WAIT_SYNC },
	{ "__new_sem_wait_slow64", WAIT_SYNC },
	{ "pthread_barrier_wait", WAIT_SYNC },
	{ "pthread_join", WAIT_SYNC },
	{ "pthread_timedjoin_np", WAIT_SYNC },
	{ "pthread_clockjoin_np", WAIT_SYNC },
	{ "__pthread_clockjoin_ex", WAIT_SYNC },
	{ "thrd_join", WAIT_SYNC },
	{ "pthread_once", WAIT_SYNC },
	{ "__pthread_once", WAIT_SYNC },
	{ "call_once", WAIT_SYNC },
};

#define NCLASSES (WAIT_LOCK + 1)

struct obj_ranges {
	struct dso *dso;	/* reference */
	struct dso_range *r[NCLASSES];
	size_t n[NCLASSES];
};

struct waitclass {
	struct proc_maps *maps;
	struct obj_ranges *objs;
	size_t nobjs, cap;
};

int waitclass_new(struct proc_maps *maps, struct waitclass **out)
{
	struct waitclass *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->maps = maps;
	*out = w;
	return 0;
}

static void obj_drop(struct obj_ranges *o)
{
	dso_put(o->dso);
	for (int c = 0; c < NCLASSES; c++)
		free(o->r[c]);
}

void waitclass_free(struct waitclass *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nobjs; i++)
		obj_drop(&w->objs[i]);
	free(w->objs);
	free(w);
}

static bool class_name(void *arg, const char *name)
{
	const enum wait_class *c = arg;

	for (size_t i = 0; i < sizeof(wait_fns) / sizeof(wait_fns[0]); i++)
		if (wait_fns[i].class == *c && !strcmp(name, wait_fns[i].name))
			return true;
	return false;
}

/* The ranges of e's object, made on first sight; NULL without memory. */
static const struct obj_ranges *ranges_for(struct waitclass *w,
					   const struct map_entry *e)
{
	struct obj_ranges *o;

	for (size_t i = 0; i < w->nobjs; i++)
		if (w->objs[i].dso == e->dso)
			return &w->objs[i];
	if (w->nobjs == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 8;

		o = realloc(w->objs, cap * sizeof(*o));
		if (!o)
			return NULL;
		w->objs = o;
		w->cap = cap;
	}
	o = &w->objs[w->nobjs];
	*o = (struct obj_ranges){ .dso = dso_get(e->dso) };
	for (enum wait_class c = WAIT_SYNC; c < NCLASSES; c++)
		if (dso_symbol_ranges(e->dso, class_name, &c, &o->r[c],
				      &o->n[c])) {
			obj_drop(o);
			return NULL;
		}
	w->nobjs++;
	return o;
}

static bool futex_wait(long sysno, const struct unwind_regs *regs,
		       bool *pi)
{
	int op = (int)regs->r[UREG_RSI] & FUTEX_CMD_MASK;

	*pi = false;
	if (sysno == SYS_futex_waitv)
		return true;
	if (sysno != SYS_futex)
		return false;
	*pi = op == FUTEX_LOCK_PI || op == FUTEX_LOCK_PI2;
	return op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET ||
	       op == FUTEX_WAIT_REQUEUE_PI || *pi;
}

enum wait_class waitclass_of(struct waitclass *w, long sysno,
			     const struct unwind_regs *regs,
			     const uint64_t *pcs, int n)
{
	enum wait_class c;
	bool pi;

	if (!futex_wait(sysno, regs, &pi))
		return WAIT_OTHER;
	if (pi)
		return WAIT_LOCK;
	c = waitclass_of_frames(w, pcs, n);
	return c == WAIT_OTHER ? WAIT_SYNC : c;
}

enum wait_class waitclass_of_frames(struct waitclass *w, const uint64_t *pcs,
				    int n)
{
	for (int i = 0; i < n; i++) {
		struct map_entry *e = maps_find(w->maps, pcs[i]);
		const struct obj_ranges *o;

		if (!e || !e->dso)
			continue;
		o = ranges_for(w, e);
		for (enum wait_class c = NCLASSES - 1; o && c > WAIT_OTHER;
		     c--)
			if (dso_ranges_hold(o->r[c], o->n[c],
					    pcs[i] - e->bias))
				return c;
	}
	return WAIT_OTHER;
}
