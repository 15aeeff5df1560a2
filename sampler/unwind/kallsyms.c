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
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/grow.h"
#include "sampler/unwind/kallsyms.h"
#include "sampler/unwind/kallsyms_i.h"
#include "sampler/unwind/ksym_bpf.h"
#include "sampler/log.h"

#define KALLSYMS_PATH "/proc/kallsyms"


#define READ_CHUNK (256 * 1024)	/* /proc/kallsyms: ~5 MiB of text */

#define BPF_CACHE 512		/* the namer's answers kept: 32 KiB */
struct bpf_slot {
	uint64_t addr, start;	/* addr 0: empty */
	char name[48];		/* longer names are not kept */
};
_Static_assert(BPF_CACHE == 1 << 9, "bpf_name() hashes to 9 bits");

struct kallsyms {
	char *path;
	char *cache_dir;	/* NULL: no cache of the table (kallsyms_i.h) */
	pthread_mutex_t lock;
	_Atomic int state;	/* 0: not read; 1: ready; -1: read, useless */
	struct ksym *syms;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	void *map;		/* the cache's file: syms and names in it */
	size_t map_len;
	/* Names asked of the kernel (ksym_bpf.h) in place of the table,
	 * when try_bpf and it loads: no syms then. bpf_lock serializes its
	 * questions (one exchange area). */
	bool try_bpf, by_bpf;	/* by_bpf: its last load was the namer */
	struct ksym_bpf *bpf;
	pthread_mutex_t bpf_lock;
	/* The namer's last answers, by address (direct-mapped, under
	 * bpf_lock): the off-CPU kinds name every kernel frame of every
	 * sample, a system call each without it. */
	struct bpf_slot *bpf_cache;
	bool unsorted;		/* the file was not in address order */
	/* Every text symbol, aliases too, sorted by name (kallsyms_addr()):
	 * built on first use, under lock; NULL until then. */
	struct kallsyms *by_name;
	/* [start, end) of the scheduler's and the lock functions, from
	 * their section markers; 0, 0 when the file has none. */
	uint64_t sched[2], locks[2];
	/* The expiry (kallsyms.h), under lock: holders, when the last one
	 * let go, after how long an unheld table goes, how often it went. */
	unsigned refs;
	uint64_t last_put_ms, idle_ms, expired;
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
	k->idle_ms = KALLSYMS_IDLE_S * 1000ull;
	pthread_mutex_init(&k->lock, NULL);
	pthread_mutex_init(&k->bpf_lock, NULL);
	*out = k;
	return 0;
}

/* The name index: a table of its own, which borrows k's path. */
static void free_by_name(struct kallsyms *all)
{
	if (!all)
		return;
	free(all->syms);
	free(all->names);
	free(all);
}

/* The table: mapped from the cache, or malloc()ed, or the kernel's
 * namer; k as before its first load but for what the file said (state,
 * the markers). */
static void drop_table(struct kallsyms *k)
{
	ksym_bpf_close(k->bpf);
	k->bpf = NULL;
	free(k->bpf_cache);
	k->bpf_cache = NULL;
	if (k->map) {
		munmap(k->map, k->map_len);
	} else {
		free(k->syms);
		free(k->names);
	}
	k->map = NULL;
	k->map_len = 0;
	k->syms = NULL;
	k->names = NULL;
	k->n = k->cap = 0;
	k->names_len = k->names_cap = 0;
	k->unsorted = false;
}

void kallsyms_free(struct kallsyms *k)
{
	if (!k)
		return;
	pthread_mutex_destroy(&k->lock);
	pthread_mutex_destroy(&k->bpf_lock);
	drop_table(k);
	free_by_name(k->by_name);
	free(k->path);
	free(k->cache_dir);
	free(k);
}

int kallsyms_set_cache_dir(struct kallsyms *k, const char *dir)
{
	char *copy = dir ? strdup(dir) : NULL;

	if (dir && !copy)
		return -ENOMEM;
	free(k->cache_dir);
	k->cache_dir = copy;
	return 0;
}

void kallsyms_set_bpf(struct kallsyms *k, bool on)
{
	k->try_bpf = on;
}

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	return grow_array(v, cap, need, elem, 4096);
}

/* Section markers are aliases of the functions they bound, which
 * settle() would drop: their addresses are taken as they are read. */
static const char *const marks[] = {
	"__sched_text_start", "__sched_text_end",
	"__lock_text_start", "__lock_text_end",
};
#define NMARKS (sizeof(marks) / sizeof(marks[0]))

/* Where marks[i]'s address goes. */
static uint64_t *mark_slot(struct kallsyms *k, size_t i)
{
	return i < 2 ? &k->sched[i] : &k->locks[i - 2];
}

static void mark(struct kallsyms *k, const char *name, size_t len,
		 uint64_t addr)
{
	for (size_t i = 0; i < NMARKS; i++)
		if (strlen(marks[i]) == len && !memcmp(marks[i], name, len))
			*mark_slot(k, i) = addr;
}

/* One "ADDR TYPE NAME[\t[MODULE]]" line, [line, end): text symbols only.
 * Hand-parsed: strtoull() and a stdio line per symbol cost more than the
 * kernel's formatting of the file. */
static int add_line(struct kallsyms *k, const char *line, const char *end)
{
	const char *p = line, *name;
	uint64_t addr = 0;
	size_t len;
	char type;

	for (; p < end; p++) {
		unsigned c = (unsigned char)*p, v;

		if (c - '0' < 10)
			v = c - '0';
		else if ((c | 0x20) - 'a' < 6)
			v = (c | 0x20) - 'a' + 10;
		else
			break;
		addr = addr << 4 | v;
	}
	if (p == line || p - line > 16 || end - p < 4 || p[0] != ' ' ||
	    p[2] != ' ')
		return 0;
	type = p[1];
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	name = p + 3;
	for (len = 0; name + len < end && name[len] != ' ' &&
	     name[len] != '\t'; len++)
		;
	if (!len || len > 1024)
		return 0;
	if (name[0] == '_' && name[1] == '_')
		mark(k, name, len, addr);
	if (k->n && addr < k->syms[k->n - 1].addr)
		k->unsorted = true;
	if (grow((void **)&k->syms, &k->cap, k->n + 1, sizeof(*k->syms)) ||
	    grow((void **)&k->names, &k->names_cap, k->names_len + len + 1,
		 1))
		return -ENOMEM;
	/* the boot's cache writes the array whole: no stale padding */
	memset(&k->syms[k->n], 0, sizeof(*k->syms));
	k->syms[k->n].addr = addr;
	k->syms[k->n].type = type;
	k->syms[k->n++].name = (uint32_t)k->names_len;
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

	if (k->unsorted)	/* the kernel lists them in order */
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

/* The file in READ_CHUNK reads, lines parsed where they lie. */
static int read_file(struct kallsyms *k)
{
	int fd = open(k->path, O_RDONLY | O_CLOEXEC);
	size_t have = 0;
	char *buf;
	int ret = 0;

	if (fd < 0)
		return -errno;
	buf = malloc(READ_CHUNK);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r = read(fd, buf + have, READ_CHUNK - have);
		char *p = buf, *end, *eol;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			break;
		}
		end = buf + have + r;
		while (!ret && (eol = memchr(p, '\n', end - p))) {
			ret = add_line(k, p, eol);
			p = eol + 1;
		}
		have = end - p;
		if (ret || !r || have == READ_CHUNK)	/* end, or a huge line */
			break;
		memmove(buf, p, have);
	}
	if (!ret && have && have < READ_CHUNK)
		ret = add_line(k, buf, buf + have);	/* no final newline */
	free(buf);
	close(fd);
	return ret;
}

static int load_file(struct kallsyms *k)
{
	int ret = read_file(k);

	if (ret)
		return ret;
	settle(k);
	/* Hidden from this reader: every address 0, one symbol left. */
	return k->n > 1 && k->syms[k->n - 1].addr ? 0 : -EPERM;
}

static int by_name(const void *a, const void *b, void *arg)
{
	const struct kallsyms *k = arg;

	return strcmp(k->names + ((const struct ksym *)a)->name,
		      k->names + ((const struct ksym *)b)->name);
}

/* The name index of kallsyms_addr(), read from the file itself on first
 * use: settle() and the boot's cache keep one symbol per address, and
 * the kernel's own stacks may name an alias (__do_sys_pause beside
 * __x64_sys_pause). Only thread dumps ask, so a CPU read never pays its
 * second read of the file and its sort (30-60 ms). Under k->lock. */
static struct kallsyms *index_names(struct kallsyms *k)
{
	struct kallsyms *all = calloc(1, sizeof(*all));

	if (!all)
		return NULL;
	all->path = k->path;
	if (read_file(all)) {
		free_by_name(all);
		return NULL;
	}
	qsort_r(all->syms, all->n, sizeof(*all->syms), by_name, all);
	return all;
}

/* The kernel's namer, and the section markers asked of it. A namer
 * that cannot be had is not tried again: the table is read instead. */
static int load_bpf(struct kallsyms *k)
{
	int ret = ksym_bpf_open(&k->bpf);

	if (ret) {
		k->try_bpf = false;
		pr_info("kallsyms: kernel functions named from %s: the eBPF "
			"namer %s (%s)", k->path,
			ret == -ENOTSUP ? "is not in this build" :
			"cannot be loaded", strerror(-ret));
		return ret;
	}
	k->bpf_cache = calloc(BPF_CACHE, sizeof(*k->bpf_cache));
	if (!k->bpf_cache) {
		ksym_bpf_close(k->bpf);
		k->bpf = NULL;
		return -ENOMEM;
	}
	for (size_t i = 0; i < NMARKS; i++)
		if (ksym_bpf_addr(k->bpf, marks[i], strlen(marks[i]),
				  mark_slot(k, i)))
			*mark_slot(k, i) = 0;
	pr_debug("kallsyms: kernel functions named by the kernel (eBPF)");
	return 0;
}

/* The kernel's namer, else this boot's table from the cache, else from
 * the file, then cached. */
static int load(struct kallsyms *k)
{
	struct kallsyms_image img = { 0 };
	int ret;

	k->by_bpf = k->try_bpf && !load_bpf(k);
	if (k->by_bpf)
		return 0;
	if (k->cache_dir && !kallsyms_cache_load(k->cache_dir, k->path, &img)) {
		k->syms = img.syms;
		k->n = k->cap = img.n;
		k->names = img.names;
		k->names_len = k->names_cap = img.names_len;
		k->map = img.map;
		k->map_len = img.map_len;
		memcpy(k->sched, img.sched, sizeof(k->sched));
		memcpy(k->locks, img.locks, sizeof(k->locks));
		pr_debug("kallsyms: %zu kernel functions from the cache in %s",
			 k->n, k->cache_dir);
		return 0;
	}
	ret = load_file(k);
	if (!ret && k->cache_dir) {
		img = (struct kallsyms_image){
			.syms = k->syms, .n = k->n, .names = k->names,
			.names_len = k->names_len,
		};
		memcpy(img.sched, k->sched, sizeof(k->sched));
		memcpy(img.locks, k->locks, sizeof(k->locks));
		kallsyms_cache_save(k->cache_dir, k->path, &img);
	}
	return ret;
}

/* Under k->lock: the table in memory unless the file was found useless,
 * read (or mapped again from the boot's cache, after an expiry) when it
 * is not. The first load says whether the file is of use (k->state). */
static void load_locked(struct kallsyms *k)
{
	int state = atomic_load_explicit(&k->state, memory_order_relaxed);
	int ret;

	if (state < 0 || k->syms || k->bpf)
		return;
	ret = load(k);
	if (ret == -EPERM && !state)
		pr_info("kallsyms: the kernel hides the addresses of %s from "
			"this daemon (kptr_restrict, perf_event_paranoid): no "
			"kernel frames", k->path);
	else if (ret)
		pr_info("kallsyms: cannot read %s (%s): no kernel frames%s",
			k->path, strerror(-ret), state ? " this time" : "");
	if (ret)
		drop_table(k);
	else if (!k->bpf)
		pr_debug("kallsyms: %zu kernel functions from %s%s", k->n,
			 k->path, state ? ", again after its expiry" : "");
	k->last_put_ms = now_ms();
	if (!state)
		atomic_store_explicit(&k->state, ret ? -1 : 1,
				      memory_order_release);
}

bool kallsyms_ready(struct kallsyms *k)
{
	if (atomic_load_explicit(&k->state, memory_order_acquire))
		return atomic_load_explicit(&k->state,
					    memory_order_acquire) > 0;
	pthread_mutex_lock(&k->lock);
	load_locked(k);
	pthread_mutex_unlock(&k->lock);
	return atomic_load_explicit(&k->state, memory_order_acquire) > 0;
}

bool kallsyms_hold(struct kallsyms *k)
{
	bool held;

	if (atomic_load_explicit(&k->state, memory_order_acquire) < 0)
		return false;
	pthread_mutex_lock(&k->lock);
	load_locked(k);
	held = k->syms || k->bpf;
	k->refs += held;
	pthread_mutex_unlock(&k->lock);
	return held;
}

void kallsyms_put(struct kallsyms *k)
{
	pthread_mutex_lock(&k->lock);
	if (k->refs && !--k->refs)
		k->last_put_ms = now_ms();
	pthread_mutex_unlock(&k->lock);
}

/* The bytes the name index takes (kallsyms_addr()). */
static size_t index_bytes(const struct kallsyms *all)
{
	return all ? all->cap * sizeof(*all->syms) + all->names_cap : 0;
}

bool kallsyms_sweep(struct kallsyms *k)
{
	bool gone = false;

	pthread_mutex_lock(&k->lock);
	if (!k->refs && (k->syms || k->by_name || k->bpf) &&
	    now_ms() - k->last_put_ms >= k->idle_ms) {
		drop_table(k);
		free_by_name(k->by_name);
		k->by_name = NULL;
		k->expired++;
		gone = true;
	}
	pthread_mutex_unlock(&k->lock);
	/* The index, a malloc()ed table, and what the sessions that named
	 * kernel frames freed (the daemon keeps freed pages for the next
	 * session, daemon.c: now there is none): back to the system. */
	if (gone)
		malloc_trim(0);
	return gone;
}

void kallsyms_set_idle(struct kallsyms *k, uint64_t idle_ms)
{
	pthread_mutex_lock(&k->lock);
	k->idle_ms = idle_ms;
	pthread_mutex_unlock(&k->lock);
}

void kallsyms_stats(struct kallsyms *k, struct kallsyms_stats *st)
{
	kallsyms_sweep(k);
	pthread_mutex_lock(&k->lock);
	*st = (struct kallsyms_stats){
		.symbols = k->syms ? k->n : 0,
		.bytes = (k->map ? k->map_len : k->cap * sizeof(*k->syms) +
			  k->names_cap) + index_bytes(k->by_name) +
			 ksym_bpf_bytes(k->bpf) +
			 (k->bpf_cache ? BPF_CACHE * sizeof(*k->bpf_cache) : 0),
		.bpf = k->by_bpf,
		.holders = k->refs, .idle_ms = k->idle_ms,
		.expired = k->expired,
	};
	pthread_mutex_unlock(&k->lock);
}

bool kallsyms_tried(const struct kallsyms *k)
{
	return atomic_load_explicit(&k->state, memory_order_acquire) != 0;
}

/* Under the hold that keeps k->bpf. */
static const char *bpf_name(const struct kallsyms *k, uint64_t addr,
			    char *buf, size_t len, uint64_t *start)
{
	struct kallsyms *mk = (struct kallsyms *)k;	/* the namer's lock */
	struct bpf_slot *slot;
	uint64_t h = addr * 0x9e3779b97f4a7c15ull;
	int ret = 0;

	if (!addr || !len)
		return NULL;
	pthread_mutex_lock(&mk->bpf_lock);
	slot = &mk->bpf_cache[h >> 55];	/* 9 bits: BPF_CACHE */
	if (slot->addr == addr) {
		snprintf(buf, len, "%s", slot->name);
		*start = slot->start;
	} else {
		ret = ksym_bpf_name(mk->bpf, addr, buf, len, start);
		if (!ret && strlen(buf) < sizeof(slot->name)) {
			slot->addr = addr;
			slot->start = *start;
			strcpy(slot->name, buf);
		}
	}
	pthread_mutex_unlock(&mk->bpf_lock);
	return ret ? NULL : buf;
}

const char *kallsyms_name(const struct kallsyms *k, uint64_t addr,
			  char *buf, size_t len, uint64_t *start)
{
	size_t lo = 0, hi;

	if (atomic_load_explicit(&k->state, memory_order_acquire) <= 0)
		return NULL;
	if (k->bpf)
		return bpf_name(k, addr, buf, len, start);
	if (addr < k->syms[0].addr)
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
	struct kallsyms *mk = (struct kallsyms *)k;	/* index: lazy */
	const struct kallsyms *all;
	size_t lo = 0, hi;

	if (atomic_load_explicit(&k->state, memory_order_acquire) <= 0)
		return -ENOENT;
	if (k->bpf) {
		int ret;

		pthread_mutex_lock(&mk->bpf_lock);
		ret = ksym_bpf_addr(mk->bpf, name, len, addr);
		pthread_mutex_unlock(&mk->bpf_lock);
		return ret ? -ENOENT : 0;
	}
	pthread_mutex_lock(&mk->lock);
	if (!mk->by_name)
		mk->by_name = index_names(mk);
	all = mk->by_name;
	pthread_mutex_unlock(&mk->lock);
	if (!all)
		return -ENOENT;
	hi = all->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *m = all->names + all->syms[mid].name;
		int c = strncmp(m, name, len);

		if (!c && m[len])
			c = 1;	/* m is longer: it sorts after name */
		if (!c) {
			*addr = all->syms[mid].addr;
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}
