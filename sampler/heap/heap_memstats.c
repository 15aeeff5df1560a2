// SPDX-License-Identifier: GPL-2.0-or-later
/* heap_memstats.c - MemStats from /proc and the agent, as a profile's
 * figures (heap_memstats.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/heap/heap_memstats.h"
#include "sampler/model/profile.h"

#define GUARD_MAX (64u << 10)	/* a thread stack's guard page(s) */

/* One mapping of smaps, what the figures need of it. */
struct mapping {
	uint64_t start, end;
	char perms[5];
	bool anon;		/* no file, no name */
	bool heap, stack;	/* [heap], [stack] */
	uint64_t rss, swap, lazy;	/* bytes */
};

/* "start-end perms offset dev inode [path]"; false for a field line. */
static bool parse_head(const char *line, struct mapping *m)
{
	unsigned long long s, e, ino;
	int path = 0;

	if (sscanf(line, "%llx-%llx %4s %*s %*s %llu %n", &s, &e, m->perms,
		   &ino, &path) < 4)
		return false;
	m->start = s;
	m->end = e;
	m->rss = m->swap = m->lazy = 0;
	m->anon = !ino && (!path || !line[path] || line[path] == '\n');
	m->heap = path && !strncmp(line + path, "[heap]", 6);
	m->stack = path && !strncmp(line + path, "[stack]", 7);
	return true;
}

/* "Rss:   12 kB" and its kin. */
static void parse_field(const char *line, struct mapping *m)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
		{ "Rss:", offsetof(struct mapping, rss) },
		{ "Swap:", offsetof(struct mapping, swap) },
		{ "LazyFree:", offsetof(struct mapping, lazy) },
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		size_t n = strlen(fields[i].name);

		if (!strncmp(line, fields[i].name, n)) {
			*(uint64_t *)((char *)m + fields[i].off) =
				strtoull(line + n, NULL, 10) << 10;
			return;
		}
	}
}

/* Count a finished mapping; prev is the one before it in the list. */
static void account(const struct mapping *m, const struct mapping *prev,
		    struct heap_mem *out)
{
	uint64_t size = m->end - m->start;
	uint64_t inuse = m->rss - (m->lazy < m->rss ? m->lazy : m->rss) +
			 m->swap;
	bool rw = !strcmp(m->perms, "rw-p");
	bool guarded = prev && prev->anon && prev->end == m->start &&
		       !strcmp(prev->perms, "---p") &&
		       prev->end - prev->start <= GUARD_MAX;

	if (m->stack || (m->anon && rw && guarded)) {
		out->stack_sys += size;
		out->stack_inuse += inuse;
	} else if (m->heap || (m->anon && rw)) {
		out->heap_sys += size;
		out->heap_inuse += inuse;
	}
}

/* Call line(text, arg) for each line of /proc/PID/<what>. */
static int each_line(pid_t pid, const char *what,
		     void (*line)(const char *text, void *arg), void *arg)
{
	char path[64], *text = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (getline(&text, &cap, f) > 0)
		line(text, arg);
	free(text);
	fclose(f);
	return 0;
}

/* smaps, a mapping's head line, then its fields. */
struct smaps_walk {
	struct heap_mem *out;
	struct mapping cur, prev;
	bool have, have_prev;
};

static void smaps_line(const char *text, void *arg)
{
	struct smaps_walk *w = arg;
	struct mapping next;

	if (!parse_head(text, &next)) {
		if (w->have)
			parse_field(text, &w->cur);
		return;
	}
	if (w->have) {
		account(&w->cur, w->have_prev ? &w->prev : NULL, w->out);
		w->prev = w->cur;
		w->have_prev = true;
	}
	w->cur = next;
	w->have = true;
}

static void status_line(const char *text, void *arg)
{
	struct heap_mem *out = arg;
	unsigned long long kb;

	if (sscanf(text, "VmData: %llu kB", &kb) == 1 ||
	    sscanf(text, "VmStk: %llu kB", &kb) == 1)
		out->sys += kb << 10;
	else if (sscanf(text, "VmHWM: %llu kB", &kb) == 1)
		out->max_rss = kb << 10;
}

int heap_mem_read(pid_t pid, struct heap_mem *m)
{
	struct smaps_walk w = { .out = m };
	int ret;

	memset(m, 0, sizeof(*m));
	ret = each_line(pid, "status", status_line, m);
	if (!ret)
		ret = each_line(pid, "smaps", smaps_line, &w);
	if (!ret && w.have)
		account(&w.cur, w.have_prev ? &w.prev : NULL, m);
	return ret;
}

/* ---- the figures ---- */

static int add_u(struct profile *p, const char *name, uint64_t v)
{
	char text[32];

	snprintf(text, sizeof(text), "%" PRIu64, v);
	return profile_add_stat(p, name, text);
}

static int add_i(struct profile *p, const char *name, int64_t v)
{
	return add_u(p, name, v > 0 ? (uint64_t)v : 0);
}

/* The figures in Go's order (runtime/pprof's writeHeapInternal). */
static int add_figures(struct profile *p, const struct heap_memstats *ms)
{
	const struct heap_mem *m = &ms->mem;
	bool agent = !ms->no_agent, counts = agent && !ms->counts_err;
	bool mem = !ms->mem_err;
	uint64_t idle = m->heap_sys - m->heap_inuse;
	char stack[64];
	int ret = 0;

	snprintf(stack, sizeof(stack), "%" PRIu64 " / %" PRIu64,
		 m->stack_inuse, m->stack_sys);
	if (agent)
		ret = ret ?: add_i(p, "Alloc", ms->inuse_bytes);
	if (agent)
		ret = ret ?: add_i(p, "TotalAlloc", ms->alloc_bytes);
	if (mem)
		ret = ret ?: add_u(p, "Sys", m->sys);
	if (counts) {
		ret = ret ?: add_u(p, "Mallocs", ms->mallocs);
		ret = ret ?: add_u(p, "Frees", ms->frees);
	}
	if (agent)
		ret = ret ?: add_i(p, "HeapAlloc", ms->inuse_bytes);
	if (mem) {
		ret = ret ?: add_u(p, "HeapSys", m->heap_sys);
		ret = ret ?: add_u(p, "HeapIdle", idle);
		ret = ret ?: add_u(p, "HeapInuse", m->heap_inuse);
		ret = ret ?: add_u(p, "HeapReleased", idle);
	}
	if (agent)
		ret = ret ?: add_i(p, "HeapObjects", ms->inuse_objects);
	if (mem) {
		ret = ret ?: profile_add_stat(p, "Stack", stack);
		ret = ret ?: add_u(p, "MaxRSS", m->max_rss);
	}
	return ret;
}

static int add_agent_notes(struct profile *p, const struct heap_memstats *ms)
{
	char since[64], text[400];
	int ret;

	if (ms->no_agent) {
		snprintf(text, sizeof(text), "no heap agent (%s): Alloc, "
			 "TotalAlloc, Mallocs, Frees, HeapAlloc and "
			 "HeapObjects are unknown", ms->no_agent);
		return profile_add_stat(p, text, NULL);
	}
	if (ms->armed_s < 0)
		snprintf(since, sizeof(since), "since the process started "
			 "(the agent was preloaded)");
	else
		snprintf(since, sizeof(since), "since the agent was armed, "
			 "%.1f s ago", ms->armed_s);
	if (ms->counts_err)
		snprintf(text, sizeof(text), "Mallocs and Frees are unknown: "
			 "%s", strerror(-ms->counts_err));
	else
		snprintf(text, sizeof(text), "Mallocs and Frees: every call "
			 "of malloc & co. and free %s, exact (a realloc "
			 "counts as a free and a malloc)%s", since,
			 ms->lossy ? "; but for threads that have ended: no "
			 "pthread key was left to see them end" : "");
	ret = profile_add_stat(p, text, NULL);
	snprintf(text, sizeof(text), "Alloc, TotalAlloc, HeapAlloc, "
		 "HeapObjects: estimated from the allocations sampled %s, one "
		 "per %" PRIu64 " bytes on average, as Go's heap profile "
		 "scales them (exact at rate 1); blocks allocated before are "
		 "not seen", since, ms->rate);
	return ret ?: profile_add_stat(p, text, NULL);
}

int heap_memstats_add(struct profile *p, const struct heap_memstats *ms)
{
	char text[300];
	int ret;

	ret = add_figures(p, ms);
	ret = ret ?: add_agent_notes(p, ms);
	if (ms->mem_err)
		snprintf(text, sizeof(text), "Sys, HeapSys, HeapIdle, "
			 "HeapInuse, HeapReleased, Stack, MaxRSS are unknown: "
			 "/proc: %s", strerror(-ms->mem_err));
	else
		snprintf(text, sizeof(text), "Sys, HeapSys, HeapIdle, "
			 "HeapInuse, HeapReleased, Stack, MaxRSS: from "
			 "/proc/PID/status and smaps; malloc's free blocks "
			 "that have memory behind them count as HeapInuse");
	return ret ?: profile_add_stat(p, text, NULL);
}
