// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * kallsyms.c - /proc/kallsyms as one sorted table, read once.
 *
 * Names sit in one arena, symbols hold offsets into it (the arena moves
 * while it grows). Of several symbols at one address the one perf would
 * print is kept (its choose_best_symbol(): not weak, global, fewer
 * leading underscores, the longer name), so that kernel frames carry
 * perf's names.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "kallsyms.h"
#include "log.h"

#define KALLSYMS_PATH "/proc/kallsyms"

struct ksym {
	uint64_t addr;
	uint32_t name;		/* offset in names */
	char type;		/* t, T, w or W */
};

struct kallsyms {
	char *path;
	pthread_mutex_t lock;
	_Atomic int state;	/* 0: not read; 1: ready; -1: read, useless */
	struct ksym *syms;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	struct ksym *by_name;	/* every text symbol, aliases too, by name */
	size_t names_n;		/* ... how many */
	/* [start, end) of the scheduler's and the lock functions, from
	 * their section markers; 0, 0 when the file has none. */
	uint64_t sched[2], locks[2];
};

int kallsyms_new(const char *path, struct kallsyms **out)
{
	struct kallsyms *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	k->path = strdup(path ? path : KALLSYMS_PATH);
	if (!k->path) {
		free(k);
		return -ENOMEM;
	}
	pthread_mutex_init(&k->lock, NULL);
	*out = k;
	return 0;
}

void kallsyms_free(struct kallsyms *k)
{
	if (!k)
		return;
	pthread_mutex_destroy(&k->lock);
	free(k->syms);
	free(k->names);
	free(k->by_name);
	free(k->path);
	free(k);
}

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	return grow_array(v, cap, need, elem, 4096);
}

/* Section markers are aliases of the functions they bound, which
 * settle() would drop: their addresses are taken as they are read. */
static void mark(struct kallsyms *k, const char *name, size_t len,
		 uint64_t addr)
{
	static const char *const marks[] = {
		"__sched_text_start", "__sched_text_end",
		"__lock_text_start", "__lock_text_end",
	};
	uint64_t *to[] = { &k->sched[0], &k->sched[1], &k->locks[0],
			   &k->locks[1] };

	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (strlen(marks[i]) == len && !memcmp(marks[i], name, len))
			*to[i] = addr;
}

/* One "ADDR TYPE NAME[\t[MODULE]]" line: text symbols only. */
static int add_line(struct kallsyms *k, const char *line)
{
	char *end;
	uint64_t addr = strtoull(line, &end, 16);
	const char *name;
	size_t len;

	if (end == line || end[0] != ' ' || !strchr("tTwW", end[1]) ||
	    !end[1] || end[2] != ' ')
		return 0;
	name = end + 3;
	len = strcspn(name, " \t\n");
	if (!len || len > 1024)
		return 0;
	mark(k, name, len, addr);
	if (grow((void **)&k->syms, &k->cap, k->n + 1, sizeof(*k->syms)) ||
	    grow((void **)&k->names, &k->names_cap, k->names_len + len + 1,
		 1))
		return -ENOMEM;
	k->syms[k->n++] = (struct ksym){ .addr = addr, .type = end[1],
					 .name = (uint32_t)k->names_len };
	memcpy(k->names + k->names_len, name, len);
	k->names[k->names_len + len] = '\0';
	k->names_len += len + 1;
	return 0;
}

static int by_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static size_t underscores(const char *s)
{
	return strspn(s, "_");
}

/* perf's choice among symbols at one address: is a better than b? */
static bool better(const struct kallsyms *k, const struct ksym *a,
		   const struct ksym *b)
{
	const char *na = k->names + a->name, *nb = k->names + b->name;
	bool weak_a = a->type == 'w' || a->type == 'W';
	bool weak_b = b->type == 'w' || b->type == 'W';
	bool glob_a = a->type == 'T', glob_b = b->type == 'T';

	if (weak_a != weak_b)
		return weak_b;
	if (glob_a != glob_b)
		return glob_a;
	if (underscores(na) != underscores(nb))
		return underscores(na) < underscores(nb);
	return strlen(na) > strlen(nb);
}

/* Sort, and keep one symbol per address. */
static void settle(struct kallsyms *k)
{
	size_t out = 0;

	qsort(k->syms, k->n, sizeof(*k->syms), by_addr);
	for (size_t i = 0; i < k->n; i++) {
		if (out && k->syms[out - 1].addr == k->syms[i].addr) {
			if (better(k, &k->syms[i], &k->syms[out - 1]))
				k->syms[out - 1] = k->syms[i];
			continue;
		}
		k->syms[out++] = k->syms[i];
	}
	k->n = out;
}

static int by_name(const void *a, const void *b, void *arg)
{
	const struct kallsyms *k = arg;

	return strcmp(k->names + ((const struct ksym *)a)->name,
		      k->names + ((const struct ksym *)b)->name);
}

/* The name index (kallsyms_addr()), before settle() drops the aliases
 * the kernel's own stacks may name (__do_sys_pause beside
 * __x64_sys_pause): 16 bytes a symbol, 30-60 ms here. */
static int index_names(struct kallsyms *k)
{
	k->by_name = malloc(k->n * sizeof(*k->by_name));
	if (!k->by_name)
		return -ENOMEM;
	memcpy(k->by_name, k->syms, k->n * sizeof(*k->by_name));
	k->names_n = k->n;
	qsort_r(k->by_name, k->n, sizeof(*k->by_name), by_name, k);
	return 0;
}

static int load(struct kallsyms *k)
{
	FILE *f = fopen(k->path, "re");
	char *line = NULL;
	size_t cap = 0;
	int ret = 0;

	if (!f)
		return -errno;
	while (!ret && getline(&line, &cap, f) > 0)
		ret = add_line(k, line);
	free(line);
	fclose(f);
	if (ret)
		return ret;
	ret = index_names(k);
	if (ret)
		return ret;
	settle(k);
	/* Hidden from this reader: every address 0, one symbol left. */
	return k->n > 1 && k->syms[k->n - 1].addr ? 0 : -EPERM;
}

bool kallsyms_ready(struct kallsyms *k)
{
	int ret;

	if (atomic_load_explicit(&k->state, memory_order_acquire))
		return atomic_load_explicit(&k->state,
					    memory_order_acquire) > 0;
	pthread_mutex_lock(&k->lock);
	if (!atomic_load_explicit(&k->state, memory_order_relaxed)) {
		ret = load(k);
		if (ret == -EPERM)
			pr_info("kallsyms: the kernel hides the addresses of "
				"%s from this daemon (kptr_restrict, "
				"perf_event_paranoid): no kernel frames",
				k->path);
		else if (ret)
			pr_info("kallsyms: cannot read %s (%s): no kernel "
				"frames", k->path, strerror(-ret));
		if (ret) {
			free(k->syms);
			free(k->names);
			free(k->by_name);
			k->syms = NULL;
			k->names = NULL;
			k->by_name = NULL;
			k->n = 0;
		} else {
			pr_debug("kallsyms: %zu kernel functions from %s",
				 k->n, k->path);
		}
		atomic_store_explicit(&k->state, ret ? -1 : 1,
				      memory_order_release);
	}
	pthread_mutex_unlock(&k->lock);
	return atomic_load_explicit(&k->state, memory_order_acquire) > 0;
}

const char *kallsyms_name(const struct kallsyms *k, uint64_t addr,
			  uint64_t *start)
{
	size_t lo = 0, hi;

	if (atomic_load_explicit(&k->state, memory_order_acquire) <= 0 ||
	    addr < k->syms[0].addr)
		return NULL;
	hi = k->n;
	while (hi - lo > 1) {	/* syms[lo].addr <= addr */
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	*start = k->syms[lo].addr;
	return k->names + k->syms[lo].name;
}

bool kallsyms_in_sched(const struct kallsyms *k, uint64_t addr)
{
	if (atomic_load_explicit(&k->state, memory_order_acquire) <= 0)
		return false;
	return (addr >= k->sched[0] && addr < k->sched[1]) ||
	       (addr >= k->locks[0] && addr < k->locks[1]);
}

int kallsyms_addr(const struct kallsyms *k, const char *name, size_t len,
		  uint64_t *addr)
{
	size_t lo = 0, hi;

	if (atomic_load_explicit(&k->state, memory_order_acquire) <= 0)
		return -ENOENT;
	hi = k->names_n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *m = k->names + k->by_name[mid].name;
		int c = strncmp(m, name, len);

		if (!c && m[len])
			c = 1;	/* m is longer: it sorts after name */
		if (!c) {
			*addr = k->by_name[mid].addr;
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}
