// SPDX-License-Identifier: GPL-2.0-or-later
/* maps.c - /proc/PID/maps with lazily attached dsos. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/unwind/dso.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/proc.h"

struct proc_maps {
	pid_t pid;
	struct dso_cache *cache;
	struct map_entry *v;
	size_t n;
	char exe[PATH_MAX];
	uint64_t last_reload_ns;
	unsigned generation;
	char *alias_seen;	/* maps_set_alias() */
	char *alias_open;
};

static void entries_free(struct map_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].path);
		dso_put(v[i].dso);
	}
	free(v);
}

/* Parse one maps line; 0 on success, -EINVAL on a malformed line. */
static int parse_line(const char *line, struct map_entry *e)
{
	char perms[8];
	int name_at = 0;

	memset(e, 0, sizeof(*e));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*x:%*x %*u %n",
		   &e->start, &e->end, perms, &e->pgoff, &name_at) < 4 ||
	    !name_at)
		return -EINVAL;
	e->exec = perms[2] == 'x';
	e->path = strdup(line + name_at);
	if (!e->path)
		return -ENOMEM;
	e->path[strcspn(e->path, "\n")] = '\0';
	return 0;
}

static int read_entries(pid_t pid, struct map_entry **out, size_t *n)
{
	size_t cap = 64, cnt = 0;
	struct map_entry *v;
	char path[64], *line = NULL;
	size_t linecap = 0;
	int ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	v = calloc(cap, sizeof(*v));
	if (!v) {
		fclose(f);
		return -ENOMEM;
	}
	while (getline(&line, &linecap, f) > 0) {
		if (cnt == cap) {
			struct map_entry *nv = realloc(v, 2 * cap * sizeof(*v));

			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			v = nv;
			cap *= 2;
		}
		ret = parse_line(line, &v[cnt]);
		if (ret == -EINVAL) {
			ret = 0;
			continue;
		}
		if (ret)
			break;
		cnt++;
	}
	free(line);
	fclose(f);
	if (ret || !cnt) {
		entries_free(v, cnt);
		return ret ? ret : -ENOENT;
	}
	*out = v;
	*n = cnt;
	return 0;
}

int maps_load(pid_t pid, struct dso_cache *cache, struct proc_maps **out)
{
	struct proc_maps *m;
	char path[64];
	ssize_t len;
	int ret;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->pid = pid;
	m->cache = cache;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	len = readlink(path, m->exe, sizeof(m->exe) - 1);
	m->exe[len > 0 ? len : 0] = '\0';
	ret = read_entries(pid, &m->v, &m->n);
	if (ret) {
		free(m);
		return ret;
	}
	m->last_reload_ns = now_ns();
	*out = m;
	return 0;
}

static struct map_entry *find_same(struct map_entry *v, size_t n,
				   const struct map_entry *e)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].start == e->start && v[i].end == e->end &&
		    v[i].pgoff == e->pgoff && !strcmp(v[i].path, e->path))
			return &v[i];
	return NULL;
}

int maps_reload(struct proc_maps *m)
{
	struct map_entry *v, *old;
	uint64_t now = now_ns();
	size_t n, exec_new = 0, exec_old = 0;
	bool code_changed = false;
	int ret;

	if (now - m->last_reload_ns < 100000000ull)
		return -EAGAIN;
	m->last_reload_ns = now;
	ret = read_entries(m->pid, &v, &n);
	if (ret)
		return ret;
	/* Keep loaded dsos: a reload must not re-open every library. */
	for (size_t i = 0; i < n; i++) {
		exec_new += v[i].exec;
		old = find_same(m->v, m->n, &v[i]);
		if (!old) {
			code_changed |= v[i].exec;
			continue;
		}
		code_changed |= v[i].exec != old->exec;
		v[i].dso = old->dso;
		v[i].dso_tried = old->dso_tried;
		v[i].bias = old->bias;
		old->dso = NULL;
	}
	for (size_t i = 0; i < m->n; i++)
		exec_old += m->v[i].exec;
	entries_free(m->v, m->n);
	m->v = v;
	m->n = n;
	/* Programs map and unmap data all the time (cc1: ten times a
	 * second); only code invalidates what the unwinder cached. */
	if (code_changed || exec_new != exec_old)
		m->generation++;
	return 0;
}

#define DELETED " (deleted)"

/* A file that is gone from its path (a memfd, an upgraded library) can
 * still be opened through map_files/, not by its name. */
static bool deleted(const struct map_entry *e)
{
	size_t len = strlen(e->path), dl = strlen(DELETED);

	return len > dl && !strcmp(e->path + len - dl, DELETED);
}

static int open_dso(struct proc_maps *m, struct map_entry *e)
{
	char open_path[PATH_MAX + 64];
	int ret;

	snprintf(open_path, sizeof(open_path),
		 "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)m->pid,
		 e->start, e->end);
	ret = dso_cache_get(m->cache, open_path, e->path, &e->dso);
	if (ret != -EACCES && ret != -EPERM && ret != -ENOENT)
		return ret;
	/* map_files/ wants CAP_CHECKPOINT_RESTORE: go by name instead. */
	if (m->alias_seen && !strcmp(e->path, m->alias_seen))
		return dso_cache_get(m->cache, m->alias_open, e->path,
				     &e->dso);
	if (deleted(e))
		return ret;
	snprintf(open_path, sizeof(open_path), "/proc/%d/root%s",
		 (int)m->pid, e->path);
	return dso_cache_get(m->cache, open_path, e->path, &e->dso);
}

static void attach_dso(struct proc_maps *m, struct map_entry *e);

/* Larger than any vDSO (two pages on x86-64): not one to copy. */
#define VDSO_MAX (1u << 20)

/* The vDSO is in no file: its image is read from the process itself, so
 * its symbols (.dynsym) and CFI (.eh_frame) are the ones it runs. */
static int open_vdso(struct proc_maps *m, struct map_entry *e)
{
	size_t len = e->end - e->start;
	void *image;
	int ret;

	if (len > VDSO_MAX)
		return -EFBIG;
	image = malloc(len);
	if (!image)
		return -ENOMEM;
	ret = proc_mem_read(m->pid, e->start, image, len);
	if (!ret)
		ret = dso_cache_get_image(m->cache, e->path, image, len,
					  &e->dso);
	free(image);
	return ret;
}

/*
 * The pgoff of a mapping can name several segments (LLD and mold put the
 * headers, rodata and text in one file page, and can give two segments of
 * code one page), but all mappings of a loaded object share one load
 * bias, and its first mapping is its first PT_LOAD: take that mapping's
 * bias when a segment maps e's pgoff at e's start with it.
 */
static bool base_bias(struct proc_maps *m, struct map_entry *e,
		      uint64_t *bias)
{
	struct map_entry *base = e;

	while (base > m->v && !strcmp(base[-1].path, e->path))
		base--;
	if (base == e)
		return false;
	if (!base->dso_tried)
		attach_dso(m, base);
	if (base->dso != e->dso ||
	    !dso_maps_offset_at(e->dso, e->pgoff, e->start - base->bias))
		return false;
	*bias = base->bias;
	return true;
}

static void attach_dso(struct proc_maps *m, struct map_entry *e)
{
	uint64_t vaddr;
	int ret;

	e->dso_tried = true;
	if (!strcmp(e->path, "[vdso]"))
		ret = open_vdso(m, e);
	else if (e->path[0] == '/')
		ret = open_dso(m, e);
	else
		return;
	if (ret) {
		pr_debug("maps: cannot load %s: %s", e->path, strerror(-ret));
		e->dso = NULL;
		return;
	}
	dso_note_user(e->dso, m->pid);
	if (base_bias(m, e, &e->bias))
		return;
	if (dso_offset_to_vaddr(e->dso, e->pgoff, e->exec, &vaddr)) {
		pr_debug("maps: %s: offset 0x%" PRIx64 " in no segment",
			 e->path, e->pgoff);
		dso_put(e->dso);
		e->dso = NULL;
		return;
	}
	e->bias = e->start - vaddr;
}

struct map_entry *maps_find(struct proc_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct map_entry *e = &m->v[mid];

		if (addr < e->start) {
			hi = mid;
		} else if (addr >= e->end) {
			lo = mid + 1;
		} else {
			if (!e->dso_tried)
				attach_dso(m, e);
			return e;
		}
	}
	return NULL;
}

size_t maps_count(const struct proc_maps *m)
{
	return m->n;
}

struct map_entry *maps_at(struct proc_maps *m, size_t i)
{
	if (i >= m->n)
		return NULL;
	if (!m->v[i].dso_tried)
		attach_dso(m, &m->v[i]);
	return &m->v[i];
}

const struct map_entry *maps_peek(const struct proc_maps *m, size_t i)
{
	return i < m->n ? &m->v[i] : NULL;
}

struct map_entry *maps_main(struct proc_maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].exec && !strcmp(m->v[i].path, m->exe))
			return maps_find(m, m->v[i].start);
	return NULL;
}

pid_t maps_pid(const struct proc_maps *m)
{
	return m->pid;
}

unsigned maps_generation(const struct proc_maps *m)
{
	return m->generation;
}

int maps_set_alias(struct proc_maps *m, const char *seen_path,
		   const char *open_path)
{
	char *seen = strdup(seen_path), *open = strdup(open_path);

	if (!seen || !open) {
		free(seen);
		free(open);
		return -ENOMEM;
	}
	free(m->alias_seen);
	free(m->alias_open);
	m->alias_seen = seen;
	m->alias_open = open;
	return 0;
}

size_t maps_mem_bytes(const struct proc_maps *m)
{
	size_t b;

	if (!m)
		return 0;
	b = sizeof(*m) + m->n * sizeof(*m->v);
	for (size_t i = 0; i < m->n; i++)
		b += m->v[i].path ? strlen(m->v[i].path) + 1 + 16 : 0;
	if (m->alias_seen)
		b += strlen(m->alias_seen) + 1 + 16;
	if (m->alias_open)
		b += strlen(m->alias_open) + 1 + 16;
	return b;
}

void maps_free(struct proc_maps *m)
{
	if (!m)
		return;
	entries_free(m->v, m->n);
	free(m->alias_seen);
	free(m->alias_open);
	free(m);
}
