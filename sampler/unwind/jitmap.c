// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * jitmap.c - /tmp/perf-PID.map, read incrementally into a table sorted by
 * address. Names live in blocks that never move, so a name stays valid as
 * long as the map.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/unwind/jitmap.h"
#include "sampler/log.h"
#include "sampler/proc.h"

#define NAME_MAX_LEN	1024	/* longer names are cut */
#define LINE_MAX_LEN	(NAME_MAX_LEN + 64)
#define BLOCK_SIZE	(64u << 10)
/* How far back from the last entry starting at or below an address a
 * lookup looks for one holding it (entries may overlap). */
#define OVERLAP_SCAN	64

struct jit_sym {
	uint64_t start, end;	/* [start, end) */
	uint32_t seq;		/* line number: later lines win */
	const char *name;
};

struct name_block {
	struct name_block *next;
	size_t used;
	char s[BLOCK_SIZE];
};

struct jitmap {
	pid_t pid;
	char path[PATH_MAX];
	bool path_set;		/* jitmap_set_path() */
	int fd;			/* -1 until opened */
	bool refused;		/* a file we will not read: no retry */
	uint64_t last_try_ns;
	size_t read_bytes;
	char line[LINE_MAX_LEN];	/* a line not finished yet */
	size_t line_len;
	bool skipping;		/* inside an over-long line */
	struct jit_sym *v;
	size_t n, cap;
	bool sorted;
	uint32_t seq;
	struct name_block *blocks;
};

int jitmap_new(pid_t pid, struct jitmap **out)
{
	struct jitmap *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->pid = pid;
	j->fd = -1;
	*out = j;
	return 0;
}

int jitmap_set_path(struct jitmap *j, const char *path)
{
	if (strlen(path) >= sizeof(j->path))
		return -ENAMETOOLONG;
	strcpy(j->path, path);
	j->path_set = true;
	return 0;
}

static void forget(struct jitmap *j)
{
	struct name_block *b, *next;

	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	for (b = j->blocks; b; b = next) {
		next = b->next;
		free(b);
	}
	j->blocks = NULL;
	free(j->v);
	j->v = NULL;
	j->n = j->cap = 0;
	j->read_bytes = 0;
	j->line_len = 0;
	j->skipping = false;
}

void jitmap_reopen(struct jitmap *j)
{
	forget(j);
	j->last_try_ns = 0;
}

void jitmap_free(struct jitmap *j)
{
	if (!j)
		return;
	forget(j);
	free(j);
}

static const char *name_copy(struct jitmap *j, const char *s, size_t len)
{
	struct name_block *b = j->blocks;
	char *p;

	if (!b || BLOCK_SIZE - b->used < len + 1) {
		b = malloc(sizeof(*b));
		if (!b)
			return NULL;
		b->next = j->blocks;
		b->used = 0;
		j->blocks = b;
	}
	p = b->s + b->used;
	memcpy(p, s, len);
	p[len] = '\0';
	b->used += len + 1;
	return p;
}

/* "START SIZE name": hex numbers, with or without 0x. Other lines (none
 * are expected) are skipped. */
static int add_line(struct jitmap *j, char *line, size_t len)
{
	uint64_t start, size;
	const char *name;
	char *p = line, *end;

	line[len] = '\0';
	start = strtoull(p, &end, 16);
	if (end == p || *end != ' ')
		return 0;
	p = end + 1;
	size = strtoull(p, &end, 16);
	if (end == p || *end != ' ' || !size || start + size < start)
		return 0;
	p = end + 1;
	len -= p - line;
	if (len > NAME_MAX_LEN)
		len = NAME_MAX_LEN;
	if (j->n == j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 1024;
		struct jit_sym *v = realloc(j->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		j->v = v;
		j->cap = cap;
	}
	name = name_copy(j, p, len);
	if (!name)
		return -ENOMEM;
	j->v[j->n++] = (struct jit_sym){ start, start + size, j->seq++, name };
	j->sorted = false;
	return 0;
}

/* Split buf into lines, carrying an unfinished one to the next read. */
static int add_bytes(struct jitmap *j, const char *buf, size_t len)
{
	int ret = 0;

	for (size_t i = 0; i < len && !ret; i++) {
		if (buf[i] == '\n') {
			if (!j->skipping)
				ret = add_line(j, j->line, j->line_len);
			j->line_len = 0;
			j->skipping = false;
		} else if (j->line_len < sizeof(j->line) - 1) {
			j->line[j->line_len++] = buf[i];
		} else {
			j->skipping = true;
		}
	}
	return ret;
}

/* The file's path: under the target's root, by its own pid there. */
static int map_path(struct jitmap *j)
{
	pid_t nspid;
	int ret;

	if (j->path_set)
		return 0;
	ret = proc_ns_tid(j->pid, j->pid, &nspid);
	if (ret)
		return ret;
	snprintf(j->path, sizeof(j->path), "/proc/%d/root/tmp/perf-%d.map",
		 (int)j->pid, (int)nspid);
	return 0;
}

/* Whether the file belongs to the target's user or to root. */
static bool owner_ok(const struct jitmap *j, const struct stat *st)
{
	struct proc_creds c;

	if (!st->st_uid)
		return true;
	if (j->path_set && st->st_uid == geteuid())
		return true;
	return !proc_creds(j->pid, &c) &&
	       (st->st_uid == c.euid || st->st_uid == c.ruid);
}

/* Looked at before it is opened (O_PATH opens nothing): whatever the
 * target put at that path (a device bound there in its own mount
 * namespace), only a regular file of the right owner is read. */
static int open_map(struct jitmap *j)
{
	char self[64];
	struct stat st;
	int at, fd, ret;

	ret = map_path(j);
	if (ret)
		return ret;
	at = open(j->path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	if (at < 0)
		return -errno;
	if (fstat(at, &st) || !S_ISREG(st.st_mode) || !owner_ok(j, &st)) {
		close(at);
		j->refused = true;
		pr_info("jitmap: %s: not a regular file of the target's user "
			"or root: ignored", j->path);
		return -EPERM;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", at);
	fd = open(self, O_RDONLY | O_CLOEXEC);
	ret = fd < 0 ? -errno : 0;
	close(at);
	if (ret)
		return ret;
	j->fd = fd;
	return 0;
}

static int read_more(struct jitmap *j)
{
	char buf[64 << 10];
	ssize_t got;
	int ret = 0;

	if (j->fd < 0 && (ret = open_map(j)))
		return ret;
	while (!ret && j->read_bytes < JITMAP_MAX_BYTES) {
		got = read(j->fd, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		j->read_bytes += got;
		ret = add_bytes(j, buf, got);
	}
	return ret;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The latest entry holding addr, or NULL. */
static const struct jit_sym *find(struct jitmap *j, uint64_t addr)
{
	const struct jit_sym *best = NULL;
	size_t lo = 0, hi = j->n;

	if (!j->sorted && j->n)	/* j->v may be NULL: qsort's may not */
		qsort(j->v, j->n, sizeof(*j->v), sym_cmp);
	j->sorted = true;
	while (lo < hi) {	/* first entry starting above addr */
		size_t mid = lo + (hi - lo) / 2;

		if (j->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i > 0 && lo - i < OVERLAP_SCAN; i--) {
		const struct jit_sym *s = &j->v[i - 1];

		if (addr < s->end && (!best || s->seq > best->seq))
			best = s;
	}
	return best;
}

int jitmap_lookup(struct jitmap *j, uint64_t addr, const char **name)
{
	uint64_t start, end;

	return jitmap_lookup_range(j, addr, name, &start, &end);
}

int jitmap_lookup_range(struct jitmap *j, uint64_t addr, const char **name,
			uint64_t *start, uint64_t *end)
{
	const struct jit_sym *s = find(j, addr);
	uint64_t now;
	int ret;

	if (s) {
		*name = s->name;
		*start = s->start;
		*end = s->end;
		return 0;
	}
	now = now_ns();
	if (j->refused || (j->last_try_ns &&
			   now - j->last_try_ns < JITMAP_RELOAD_MS * 1000000ull))
		return -ENOENT;
	j->last_try_ns = now;
	ret = read_more(j);
	if (ret == -ENOMEM)
		return ret;
	s = find(j, addr);
	if (!s)
		return -ENOENT;
	*name = s->name;
	*start = s->start;
	*end = s->end;
	return 0;
}
