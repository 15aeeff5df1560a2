// SPDX-License-Identifier: GPL-2.0-or-later
/* nodes.c - inode numbers for (target, name) pairs, by lookup count. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fuse/nodes.h"

#define BUCKETS 4096

struct node {
	struct node_info info;
	uint64_t nlookup;
	unsigned opens;			/* open files and directories */
	struct node *next_ino;		/* chain by inode */
	struct node *next_key;		/* chain by (pid, name) */
};

struct nodes {
	pthread_mutex_t lock;
	uint64_t next_ino;		/* protected by lock */
	_Atomic size_t *count;		/* changed under lock */
	struct node *by_ino[BUCKETS];	/* protected by lock */
	struct node *by_key[BUCKETS];	/* protected by lock */
};

static size_t key_hash(const struct node_info *i)
{
	size_t h = 1469598103934665603ull ^ (size_t)i->pid;

	h = (h ^ i->tgt.kind) * 1099511628211ull;
	for (const char *c = i->tgt.id; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	for (const char *c = i->name; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	return h % BUCKETS;
}

static bool same_key(const struct node_info *a, const struct node_info *b)
{
	return a->pid == b->pid && a->tgt.kind == b->tgt.kind &&
	       a->type == b->type && !strcmp(a->tgt.id, b->tgt.id) &&
	       !strcmp(a->name, b->name);
}

int nodes_new(_Atomic size_t *count, struct nodes **out)
{
	struct nodes *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	t->next_ino = NODES_ROOT + 1;
	t->count = count;
	*out = t;
	return 0;
}

void nodes_free(struct nodes *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < BUCKETS; i++) {
		struct node *n = t->by_ino[i], *next;

		for (; n; n = next) {
			next = n->next_ino;
			free(n);
		}
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static struct node *find_key(struct nodes *t, const struct node_info *info)
{
	struct node *n = t->by_key[key_hash(info)];

	for (; n; n = n->next_key)
		if (same_key(&n->info, info))
			return n;
	return NULL;
}

static struct node *find_ino(struct nodes *t, uint64_t ino)
{
	struct node *n = t->by_ino[ino % BUCKETS];

	for (; n; n = n->next_ino)
		if (n->info.ino == ino)
			return n;
	return NULL;
}

int nodes_lookup(struct nodes *t, struct node_info *info)
{
	struct node *n;
	size_t k;

	pthread_mutex_lock(&t->lock);
	n = find_key(t, info);
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&t->lock);
			return -ENOMEM;
		}
		n->info = *info;
		n->info.ino = t->next_ino++;
		k = key_hash(info);
		n->next_key = t->by_key[k];
		t->by_key[k] = n;
		n->next_ino = t->by_ino[n->info.ino % BUCKETS];
		t->by_ino[n->info.ino % BUCKETS] = n;
		(*t->count)++;
	}
	n->nlookup++;
	info->ino = n->info.ino;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

static void unlink_node(struct nodes *t, struct node *n)
{
	struct node **pp = &t->by_key[key_hash(&n->info)];

	while (*pp != n)
		pp = &(*pp)->next_key;
	*pp = n->next_key;
	pp = &t->by_ino[n->info.ino % BUCKETS];
	while (*pp != n)
		pp = &(*pp)->next_ino;
	*pp = n->next_ino;
}

void nodes_forget(struct nodes *t, uint64_t ino, uint64_t count)
{
	struct node *n;

	pthread_mutex_lock(&t->lock);
	n = find_ino(t, ino);
	if (n) {
		n->nlookup = count >= n->nlookup ? 0 : n->nlookup - count;
		if (!n->nlookup) {
			unlink_node(t, n);
			free(n);
			(*t->count)--;
		}
	}
	pthread_mutex_unlock(&t->lock);
}

int nodes_get(struct nodes *t, uint64_t ino, struct node_info *info)
{
	struct node *n;

	if (ino == NODES_ROOT) {
		memset(info, 0, sizeof(*info));
		info->ino = NODES_ROOT;
		info->type = NODE_ROOT;
		return 0;
	}
	pthread_mutex_lock(&t->lock);
	n = find_ino(t, ino);
	if (n)
		*info = n->info;
	pthread_mutex_unlock(&t->lock);
	return n ? 0 : -ENOENT;
}

void nodes_opened(struct nodes *t, uint64_t ino, int delta)
{
	struct node *n;

	pthread_mutex_lock(&t->lock);
	n = find_ino(t, ino);
	if (n)
		n->opens += delta;
	pthread_mutex_unlock(&t->lock);
}

#define OPEN_PIDS_MAX 256

/* The processes with something open under their directory, into pids;
 * false when there are more than OPEN_PIDS_MAX. Under t->lock. */
static bool open_pids(struct nodes *t, pid_t *pids, size_t *n)
{
	*n = 0;
	for (size_t i = 0; i < BUCKETS; i++) {
		for (struct node *o = t->by_ino[i]; o; o = o->next_ino) {
			if (!o->opens || o->info.tgt.kind != TARGET_PID)
				continue;
			if (*n == OPEN_PIDS_MAX)
				return false;
			pids[(*n)++] = o->info.pid;
		}
	}
	return true;
}

static bool among(const pid_t *pids, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

size_t nodes_pid_dirs(struct nodes *t, size_t skip, struct node_dir *out,
		      size_t max)
{
	pid_t open[OPEN_PIDS_MAX];
	size_t got = 0, seen = 0, nopen;

	pthread_mutex_lock(&t->lock);
	if (!open_pids(t, open, &nopen))
		max = 0;	/* a pass later, when fewer are open */
	for (size_t i = 0; i < BUCKETS && got < max; i++) {
		for (struct node *n = t->by_ino[i]; n && got < max;
		     n = n->next_ino) {
			if (n->info.type != NODE_PID_DIR ||
			    n->info.tgt.kind != TARGET_PID ||
			    among(open, nopen, n->info.pid) || seen++ < skip)
				continue;
			out[got++] = (struct node_dir){ n->info.ino,
							n->info.pid };
		}
	}
	pthread_mutex_unlock(&t->lock);
	return got;
}
