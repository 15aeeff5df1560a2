// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dso.c - ELF objects for the unwinder and the symbolizer.
 *
 * Loading is cheap and eager: open, fstat, mmap the whole file, read the
 * program headers and the build-id with libelf. Everything libdw does
 * (finding a separate debug file, symbol table, DWARF) waits for the first
 * dso_symbolize()/dso_caps(), because most dsos are only unwound through.
 * The fd stays open until then: /proc/PID/map_files paths vanish with the
 * process, and libdwfl consumes the fd.
 *
 * Symbols are looked up in our own sorted table, not with
 * dwfl_module_addrsym(), which scans every symbol on each call. Results
 * are memoized per address: profiles meet the same pcs again and again.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "cu_index.h"
#include "demangle.h"
#include "dso.h"
#include "clock.h"
#include "log.h"

#define DSO_DEFAULT_ROOTS	"/usr/lib/debug"
/* Deeper inline chains are cut in the middle; the outer function stays. */
#define DSO_MAX_FRAMES		32
#define U64MAP_EMPTY		UINT64_MAX
/* Processes a dso remembers mapping it: the latest few. */
#define DSO_USERS		4

/* Open addressing, linear probing; keys are never U64MAP_EMPTY. */
struct u64map {
	uint64_t *keys;
	uint64_t *vals;
	size_t mask;		/* capacity - 1, or 0 when unallocated */
	size_t n;
};

struct dso_seg {
	uint64_t vaddr;
	uint64_t offset;
	uint64_t filesz;
	uint32_t flags;
};

struct dso_sym {
	uint64_t addr;
	uint64_t end;		/* exclusive */
	const char *name;	/* owned by libdwfl's symbol table */
	uint8_t rank;		/* lower is preferred among aliases */
	bool sized;
};

struct dso {
	atomic_int refs;
	_Atomic uint64_t last_put_ms;	/* when a holder last let go */
	_Atomic pid_t users[DSO_USERS];	/* processes seen mapping it */
	atomic_uint next_user;
	char *name;
	char *build_id;		/* hex, "" when none */
	char *sysroot;		/* open_path minus name, e.g. /proc/1/root */
	char *debug_roots;	/* ':'-separated */
	const unsigned char *map;
	size_t map_size;
	dev_t dev;
	ino_t ino;
	struct dso_seg *segs;
	int nsegs;
	bool has_eh;
	bool go;		/* a Go program */
	uint64_t eh_vaddr, eh_size;
	uint64_t page_size;

	pthread_mutex_t lock;	/* protects everything below */
	int fd;			/* until libdwfl takes it */
	bool dw_tried;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf *dw;
	Dwarf_Addr dw_bias;	/* ELF vaddr - DWARF address */
	struct cu_index *cus;	/* NULL without DWARF or memory */
	struct dso_sym *syms;
	size_t nsyms;
	struct dso_caps caps;
	struct u64map addrs;	/* vaddr -> first frame << 8 | count */
	struct u64map demangled;	/* raw name ptr -> demangled ptr */
	struct u64map strs;	/* hash -> struct dso_str chain */
	struct dso_frame *pool;
	size_t npool, cap_pool;
	/* .debug_frame: set once under lock, then df_done published */
	atomic_bool df_done;
	uint8_t *df_data;
	size_t df_size;
	void *df_index;
	void (*df_drop)(void *index);
};

/* A string made here (absolute source path, unversioned symbol). */
struct dso_str {
	struct dso_str *next;	/* same hash */
	char s[];
};

struct cache_ent {
	struct cache_ent *next;
	struct dso *dso;
	bool owner;		/* this entry holds the cache's reference */
	char key[];
};

struct dso_cache {
	pthread_mutex_t lock;
	char *roots;
	struct cache_ent **tab;	/* protected by lock */
	size_t ntab, nent;
	size_t nobj;		/* dsos the cache holds (owner entries) */
	size_t max;		/* DSO_CACHE_MAX unless set */
	uint64_t idle_ms;	/* DSO_CACHE_IDLE_S unless set */
	uint64_t swept_ms, expired;
};

/* ---- u64 -> u64 map ---- */

static size_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static bool u64map_get(const struct u64map *m, uint64_t k, uint64_t *v)
{
	size_t i;

	if (!m->mask)
		return false;
	for (i = hash64(k) & m->mask; m->keys[i] != U64MAP_EMPTY;
	     i = (i + 1) & m->mask) {
		if (m->keys[i] == k) {
			*v = m->vals[i];
			return true;
		}
	}
	return false;
}

static void u64map_insert(struct u64map *m, uint64_t k, uint64_t v)
{
	size_t i = hash64(k) & m->mask;

	while (m->keys[i] != U64MAP_EMPTY && m->keys[i] != k)
		i = (i + 1) & m->mask;
	m->n += m->keys[i] == U64MAP_EMPTY;
	m->keys[i] = k;
	m->vals[i] = v;
}

static int u64map_put(struct u64map *m, uint64_t k, uint64_t v)
{
	struct u64map big;
	size_t i, cap;

	if (m->mask && (m->n + 1) * 2 <= m->mask + 1) {
		u64map_insert(m, k, v);
		return 0;
	}
	cap = m->mask ? (m->mask + 1) * 2 : 64;
	big = (struct u64map){ .mask = cap - 1 };
	big.keys = malloc(cap * sizeof(*big.keys));
	big.vals = malloc(cap * sizeof(*big.vals));
	if (!big.keys || !big.vals) {
		free(big.keys);
		free(big.vals);
		return -ENOMEM;
	}
	memset(big.keys, 0xff, cap * sizeof(*big.keys));
	for (i = 0; m->mask && i <= m->mask; i++)
		if (m->keys[i] != U64MAP_EMPTY)
			u64map_insert(&big, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	*m = big;
	u64map_insert(m, k, v);
	return 0;
}

static void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	*m = (struct u64map){ 0 };
}

/* ---- ELF headers ---- */

static int dso_parse_phdrs(struct dso *d, Elf *elf, const char **why)
{
	size_t i, phnum;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &phnum) || !phnum) {
		*why = "no program headers";
		return -ENOEXEC;
	}
	d->segs = calloc(phnum, sizeof(*d->segs));
	if (!d->segs)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, i, &ph)) {
			*why = "bad program header";
			return -ENOEXEC;
		}
		if (ph.p_type == PT_GNU_EH_FRAME) {
			d->has_eh = true;
			d->eh_vaddr = ph.p_vaddr;
			d->eh_size = ph.p_memsz;
		}
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset > d->map_size ||
		    ph.p_filesz > d->map_size - ph.p_offset ||
		    ph.p_vaddr + ph.p_filesz < ph.p_vaddr) {
			*why = "PT_LOAD beyond end of file";
			return -ENOEXEC;
		}
		d->segs[d->nsegs++] = (struct dso_seg){
			.vaddr = ph.p_vaddr, .offset = ph.p_offset,
			.filesz = ph.p_filesz, .flags = ph.p_flags,
		};
	}
	if (!d->nsegs) {
		*why = "no PT_LOAD";
		return -ENOEXEC;
	}
	return 0;
}

static int dso_parse_build_id(struct dso *d, Elf *elf)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *id;
	ssize_t len, i;

	len = dwelf_elf_gnu_build_id(elf, (const void **)&id);
	if (len < 0)
		len = 0;
	d->build_id = malloc(2 * len + 1);
	if (!d->build_id)
		return -ENOMEM;
	for (i = 0; i < len; i++) {
		d->build_id[2 * i] = hex[id[i] >> 4];
		d->build_id[2 * i + 1] = hex[id[i] & 15];
	}
	d->build_id[2 * len] = '\0';
	return 0;
}

static bool elf_has_section(Elf *elf, const char *want)
{
	Elf_Scn *scn = NULL;
	const char *name;
	size_t shstrndx;
	GElf_Shdr shdr;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &shdr) &&
		    (name = elf_strptr(elf, shstrndx, shdr.sh_name)) &&
		    !strcmp(name, want))
			return true;
	return false;
}

/* Rejects what the kernel would not load and what a cut-off copy looks
 * like, so later users of the mapping never read past its end. */
static int dso_parse(struct dso *d, const char **why)
{
	size_t shnum, shsize;
	GElf_Ehdr eh;
	Elf *elf;
	int ret = -ENOEXEC;

	elf = elf_memory((char *)d->map, d->map_size);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		*why = "not an ELF file";
		goto out;
	}
	if (!gelf_getehdr(elf, &eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
		*why = "not an executable or shared object";
		goto out;
	}
	/* From the header: libelf quietly drops a table that does not fit.
	 * Past 0xff00 sections the count is in section 0, which must fit. */
	shsize = gelf_fsize(elf, ELF_T_SHDR, 1, EV_CURRENT);
	shnum = eh.e_shnum ? eh.e_shnum : eh.e_shoff != 0;
	if (shnum && (eh.e_shoff > d->map_size || !shsize ||
		      shnum > (d->map_size - eh.e_shoff) / shsize)) {
		*why = "section headers beyond end of file";
		goto out;
	}
	ret = dso_parse_phdrs(d, elf, why);
	if (!ret)
		ret = dso_parse_build_id(d, elf);
	d->go = elf_has_section(elf, ".go.buildinfo") ||
		elf_has_section(elf, ".note.go.buildid");
out:
	elf_end(elf);
	return ret;
}

static void dso_free(struct dso *d)
{
	struct dso_str *str, *next;
	size_t i;

	cu_index_free(d->cus);
	if (d->dwfl)
		dwfl_end(d->dwfl);
	if (d->fd >= 0)
		close(d->fd);
	if (d->map)
		munmap((void *)d->map, d->map_size);
	for (i = 0; d->demangled.mask && i <= d->demangled.mask; i++)
		if (d->demangled.keys[i] != U64MAP_EMPTY &&
		    d->demangled.vals[i] != d->demangled.keys[i])
			free((void *)(uintptr_t)d->demangled.vals[i]);
	u64map_free(&d->demangled);
	for (i = 0; d->strs.mask && i <= d->strs.mask; i++) {
		if (d->strs.keys[i] == U64MAP_EMPTY)
			continue;
		str = (struct dso_str *)(uintptr_t)d->strs.vals[i];
		for (; str; str = next) {
			next = str->next;
			free(str);
		}
	}
	u64map_free(&d->strs);
	u64map_free(&d->addrs);
	if (d->df_index)
		d->df_drop(d->df_index);
	free(d->df_data);
	pthread_mutex_destroy(&d->lock);
	free(d->pool);
	free(d->syms);
	free(d->segs);
	free(d->debug_roots);
	free(d->sysroot);
	free(d->build_id);
	free(d->name);
	free(d);
}

/* The target's root as seen from here, when open_path is
 * /proc/PID/root + name: debug files of containers live under it. */
static char *dso_sysroot(const char *open_path, const char *name)
{
	size_t lo = strlen(open_path), ln = strlen(name);

	if (name[0] == '/' && lo > ln && !strcmp(open_path + lo - ln, name))
		return strndup(open_path, lo - ln);
	return strdup("");
}

/* Takes fd. */
static int dso_load(const struct dso_cache *c, int fd, const struct stat *st,
		    const char *open_path, const char *name, struct dso **out)
{
	const char *why = "empty file";
	struct dso *d;
	void *map;
	int ret;

	d = calloc(1, sizeof(*d));
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	atomic_init(&d->refs, 1);
	atomic_init(&d->df_done, false);
	d->fd = fd;
	pthread_mutex_init(&d->lock, NULL);
	d->dev = st->st_dev;
	d->ino = st->st_ino;
	d->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	d->name = strdup(name);
	d->sysroot = dso_sysroot(open_path, name);
	d->debug_roots = strdup(c->roots);
	ret = -ENOMEM;
	if (!d->name || !d->sysroot || !d->debug_roots)
		goto err;
	ret = -ENOEXEC;
	if (st->st_size <= 0 || (uint64_t)st->st_size > SIZE_MAX)
		goto err_why;
	map = mmap(NULL, st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		ret = errno == ENOMEM ? -ENOMEM : -ENOEXEC;
		why = "cannot mmap";
		goto err_why;
	}
	d->map = map;
	d->map_size = st->st_size;
	ret = dso_parse(d, &why);
	if (ret)
		goto err_why;
	*out = d;
	return 0;
err_why:
	if (ret == -ENOEXEC)
		pr_debug("dso: %s: %s", name, why);
err:
	dso_free(d);
	return ret;
}

/* ---- the cache ---- */

int dso_cache_new(const char *debug_roots, struct dso_cache **out)
{
	struct dso_cache *c;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->roots = strdup(debug_roots ? debug_roots : DSO_DEFAULT_ROOTS);
	c->ntab = 256;
	c->max = DSO_CACHE_MAX;
	c->idle_ms = DSO_CACHE_IDLE_S * 1000ull;
	c->tab = calloc(c->ntab, sizeof(*c->tab));
	if (!c->roots || !c->tab) {
		free(c->roots);
		free(c->tab);
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

void dso_cache_free(struct dso_cache *c)
{
	struct cache_ent *e, *next;
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->ntab; i++) {
		for (e = c->tab[i]; e; e = next) {
			next = e->next;
			if (e->owner)
				dso_put(e->dso);
			free(e);
		}
	}
	pthread_mutex_destroy(&c->lock);
	free(c->tab);
	free(c->roots);
	free(c);
}

/* Called with c->lock held. */
static struct dso *cache_lookup(const struct dso_cache *c, const char *key)
{
	struct cache_ent *e;

	for (e = c->tab[hash_str(key) & (c->ntab - 1)]; e; e = e->next)
		if (!strcmp(e->key, key))
			return e->dso;
	return NULL;
}

/* A new reference to the dso cached under key, or NULL. */
static struct dso *cache_find(struct dso_cache *c, const char *key)
{
	struct dso *d;

	pthread_mutex_lock(&c->lock);
	d = cache_lookup(c, key);
	if (d)
		dso_get(d);
	pthread_mutex_unlock(&c->lock);
	return d;
}

/* Called with c->lock held. */
static void cache_grow(struct dso_cache *c)
{
	struct cache_ent **tab, *e, *next;
	size_t i, n = c->ntab * 2;

	tab = calloc(n, sizeof(*tab));
	if (!tab)
		return;		/* longer chains, still correct */
	for (i = 0; i < c->ntab; i++) {
		for (e = c->tab[i]; e; e = next) {
			next = e->next;
			e->next = tab[hash_str(e->key) & (n - 1)];
			tab[hash_str(e->key) & (n - 1)] = e;
		}
	}
	free(c->tab);
	c->tab = tab;
	c->ntab = n;
}

/* Called with c->lock held. */
static int cache_insert(struct dso_cache *c, const char *key, struct dso *d,
			bool owner)
{
	size_t len = strlen(key) + 1;
	struct cache_ent *e = malloc(sizeof(*e) + len);
	size_t b;

	if (!e)
		return -ENOMEM;
	if (c->nent >= c->ntab)
		cache_grow(c);
	memcpy(e->key, key, len);
	e->dso = d;
	e->owner = owner;
	c->nobj += owner;
	b = hash_str(key) & (c->ntab - 1);
	e->next = c->tab[b];
	c->tab[b] = e;
	c->nent++;
	return 0;
}

/* Called with c->lock held: drop every entry of d, and the cache's
 * reference (the last one: nobody else holds d). */
static void cache_drop(struct dso_cache *c, struct dso *d)
{
	for (size_t i = 0; i < c->ntab; i++)
		for (struct cache_ent **pe = &c->tab[i], *e; (e = *pe);) {
			if (e->dso != d) {
				pe = &e->next;
				continue;
			}
			*pe = e->next;
			c->nent--;
			c->nobj -= e->owner;
			free(e);
		}
	c->expired++;
	dso_put(d);
}

void dso_note_user(struct dso *d, pid_t pid)
{
	for (int i = 0; i < DSO_USERS; i++)
		if (atomic_load_explicit(&d->users[i], memory_order_relaxed) ==
		    pid)
			return;
	atomic_store_explicit(&d->users[atomic_fetch_add(&d->next_user, 1) %
					DSO_USERS], pid, memory_order_relaxed);
}

/* Whether a process seen mapping d may still run (a reused pid keeps d a
 * little longer, within the cache's bound). */
static bool dso_mapped(struct dso *d)
{
	for (int i = 0; i < DSO_USERS; i++) {
		pid_t pid = atomic_load_explicit(&d->users[i],
						 memory_order_relaxed);

		if (pid > 0 && (!kill(pid, 0) || errno == EPERM))
			return true;
	}
	return false;
}

/* Called with c->lock held: the dso nobody but the cache holds, let go
 * of longest ago, or NULL. */
static struct dso *cache_oldest_unused(const struct dso_cache *c)
{
	struct dso *best = NULL;
	uint64_t best_ms = UINT64_MAX;

	for (size_t i = 0; i < c->ntab; i++)
		for (struct cache_ent *e = c->tab[i]; e; e = e->next) {
			uint64_t t = atomic_load_explicit(
				&e->dso->last_put_ms, memory_order_relaxed);

			if (e->owner && atomic_load(&e->dso->refs) == 1 &&
			    t < best_ms) {
				best = e->dso;
				best_ms = t;
			}
		}
	return best;
}

/* Called with c->lock held: a dso nobody but the cache holds, idle for
 * the expiry time, that no process seen mapping it runs; or NULL. */
static struct dso *cache_expired(const struct dso_cache *c, uint64_t ms)
{
	for (size_t i = 0; i < c->ntab; i++)
		for (struct cache_ent *e = c->tab[i]; e; e = e->next)
			if (e->owner && atomic_load(&e->dso->refs) == 1 &&
			    ms - atomic_load(&e->dso->last_put_ms) >=
			    c->idle_ms && !dso_mapped(e->dso))
				return e->dso;
	return NULL;
}

void dso_cache_sweep(struct dso_cache *c, bool now)
{
	uint64_t ms = now_ns() / 1000000;
	size_t dropped = 0;
	struct dso *d;

	pthread_mutex_lock(&c->lock);
	if (!now && ms - c->swept_ms < DSO_CACHE_SWEEP_MS) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	c->swept_ms = ms;
	/* A reference is only taken under the lock, or from a holder: one
	 * held by the cache alone stays so while we look. */
	while ((d = cache_expired(c, ms))) {
		cache_drop(c, d);
		dropped++;
	}
	while (c->nobj > c->max && (d = cache_oldest_unused(c))) {
		cache_drop(c, d);
		dropped++;
	}
	pthread_mutex_unlock(&c->lock);
	if (dropped)
		malloc_trim(0);	/* give the freed tables back to the system */
}

void dso_cache_set_limits(struct dso_cache *c, uint64_t idle_ms, size_t max)
{
	pthread_mutex_lock(&c->lock);
	c->idle_ms = idle_ms;
	c->max = max;
	pthread_mutex_unlock(&c->lock);
}

void dso_cache_stats(struct dso_cache *c, struct dso_cache_stats *st)
{
	dso_cache_sweep(c, true);
	pthread_mutex_lock(&c->lock);
	*st = (struct dso_cache_stats){ .objects = c->nobj, .max = c->max,
					.idle_ms = c->idle_ms,
					.expired = c->expired };
	pthread_mutex_unlock(&c->lock);
}

/* Publish a freshly loaded d, or return the dso that won a race or shares
 * its build-id. Takes the caller's reference to d; *out gets a new one. */
static int cache_add(struct dso_cache *c, const char *stat_key,
		     struct dso *d, struct dso **out)
{
	struct dso *old;
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	old = cache_lookup(c, stat_key);
	if (!old && d->build_id[0]) {
		old = cache_lookup(c, d->build_id);
		if (old && cache_insert(c, stat_key, old, false))
			old = NULL, ret = -ENOMEM;
	}
	if (old) {
		*out = dso_get(old);
	} else if (!ret) {
		ret = cache_insert(c, stat_key, d, true);
		if (!ret && d->build_id[0] &&
		    cache_insert(c, d->build_id, d, false))
			pr_debug("dso: %s: no memory for build-id key",
				 d->name);
		if (!ret) {
			*out = dso_get(d);
			d = NULL;	/* its first reference is the cache's */
		}
	}
	pthread_mutex_unlock(&c->lock);
	dso_put(d);
	return ret;
}

int dso_cache_get(struct dso_cache *c, const char *open_path,
		  const char *name, struct dso **out)
{
	char key[96];
	struct stat st;
	struct dso *d;
	int fd, ret;

	if (!name)
		name = open_path;
	dso_cache_sweep(c, false);
	fd = open(open_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		ret = S_ISREG(st.st_mode) ? -errno : -ENOEXEC;
		close(fd);
		return ret;
	}
	snprintf(key, sizeof(key), "%llx:%llx:%lld:%lld.%09ld",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 (long long)st.st_size, (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec);
	d = cache_find(c, key);
	if (d) {
		close(fd);
		*out = d;
		return 0;
	}
	ret = dso_load(c, fd, &st, open_path, name, &d);
	if (ret)
		return ret;
	return cache_add(c, key, d, out);
}

static uint64_t hash_mem(const unsigned char *p, size_t n)
{
	uint64_t h = 14695981039346656037ULL;

	while (n--)
		h = (h ^ *p++) * 1099511628211ULL;
	return h;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= w;
	}
	return 0;
}

/* The image goes into a memfd, which every later step (mmap, libdwfl)
 * takes as it takes a file; the key is its contents, so each process
 * running on the same kernel finds the one dso of its vDSO. */
int dso_cache_get_image(struct dso_cache *c, const char *name,
			const void *image, size_t len, struct dso **out)
{
	struct stat st;
	struct dso *d;
	char key[64];
	int fd, ret;

	snprintf(key, sizeof(key), "image:%zx:%016llx", len,
		 (unsigned long long)hash_mem(image, len));
	d = cache_find(c, key);
	if (d) {
		*out = d;
		return 0;
	}
	fd = memfd_create("proffs-image", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = write_all(fd, image, len);
	if (!ret && fstat(fd, &st))
		ret = -errno;
	if (ret) {
		close(fd);
		return ret;
	}
	ret = dso_load(c, fd, &st, name, name, &d);
	if (ret)
		return ret;
	return cache_add(c, key, d, out);
}

struct dso *dso_get(struct dso *d)
{
	atomic_fetch_add_explicit(&d->refs, 1, memory_order_relaxed);
	return d;
}

void dso_put(struct dso *d)
{
	if (d)
		atomic_store_explicit(&d->last_put_ms,
				      now_ns() / 1000000,
				      memory_order_relaxed);
	if (d && atomic_fetch_sub_explicit(&d->refs, 1,
					   memory_order_acq_rel) == 1)
		dso_free(d);
}

const char *dso_name(const struct dso *d)
{
	return d->name;
}

const char *dso_build_id(const struct dso *d)
{
	return d->build_id;
}

/* ---- addresses ---- */

/*
 * A mapping's pgoff is the page-aligned-down p_offset of the segment the
 * kernel mapped, and the segment's vaddr is p_offset's plus a constant:
 * the segment holding pgoff gives the vaddr. Linkers that do not start
 * each segment on a page of its own (LLD's text at offset 0x710, vaddr
 * 0x1710, in the first page with the headers and rodata) put several
 * segments in one page: an executable mapping comes from an executable
 * segment, then the one starting exactly at pgoff wins, then the one
 * starting in that page, then plain containment (mappings mprotect()
 * split).
 */
int dso_offset_to_vaddr(const struct dso *d, uint64_t offset, bool exec,
			uint64_t *vaddr)
{
	const struct dso_seg *s, *best = NULL;
	int i, rank, best_rank = INT_MAX;

	for (i = 0; i < d->nsegs; i++) {
		s = &d->segs[i];
		if (offset < (s->offset & ~(d->page_size - 1)) ||
		    (offset >= s->offset && offset - s->offset >= s->filesz))
			continue;
		if (offset == s->offset)
			rank = 0;
		else if (offset == (s->offset & ~(d->page_size - 1)))
			rank = 2;
		else
			rank = offset > s->offset ? 4 : 6;
		if (exec != !!(s->flags & PF_X))
			rank += 8;
		if (rank < best_rank) {
			best = s;
			best_rank = rank;
		}
	}
	if (!best)
		return -ENOENT;
	*vaddr = best->vaddr + (offset - best->offset);
	return 0;
}

bool dso_maps_offset_at(const struct dso *d, uint64_t offset,
			uint64_t vaddr)
{
	const struct dso_seg *s;

	for (int i = 0; i < d->nsegs; i++) {
		s = &d->segs[i];
		if (offset >= (s->offset & ~(d->page_size - 1)) &&
		    (offset < s->offset || offset - s->offset < s->filesz) &&
		    vaddr - s->vaddr == offset - s->offset)
			return true;
	}
	return false;
}

int dso_read(const struct dso *d, uint64_t vaddr, void *buf, size_t len)
{
	const struct dso_seg *s;
	uint64_t rel;
	int i;

	for (i = 0; i < d->nsegs; i++) {
		s = &d->segs[i];
		rel = vaddr - s->vaddr;
		if (vaddr < s->vaddr || rel >= s->filesz)
			continue;
		if (len > s->filesz - rel)
			return -EFAULT;
		memcpy(buf, d->map + s->offset + rel, len);
		return 0;
	}
	return -EFAULT;
}

bool dso_is_go(const struct dso *d)
{
	return d->go;
}

int dso_eh_frame_hdr(const struct dso *d, uint64_t *vaddr, uint64_t *size)
{
	if (!d->has_eh)
		return -ENOENT;
	*vaddr = d->eh_vaddr;
	*size = d->eh_size;
	return 0;
}

/* ---- separate debug files ---- */

static uint32_t crc32_mem(const unsigned char *p, size_t n)
{
	uint32_t tab[256], c = 0xffffffff;
	uint32_t i, k, v;

	for (i = 0; i < 256; i++) {
		for (v = i, k = 0; k < 8; k++)
			v = v & 1 ? 0xedb88320 ^ (v >> 1) : v >> 1;
		tab[i] = v;
	}
	while (n--)
		c = tab[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffff;
}

/* A candidate is ours if its build-id matches ours, or, for a file
 * without one, if its CRC is the one .gnu_debuglink records. */
static bool debug_file_matches(const struct dso *d, int fd, size_t size,
			       GElf_Word crc)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *id, *map;
	bool ok = false;
	ssize_t len, i;
	Elf *elf;

	if (!d->build_id[0]) {
		map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED)
			return false;
		ok = crc32_mem(map, size) == crc;
		munmap((void *)map, size);
		return ok;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	len = elf ? dwelf_elf_gnu_build_id(elf, (const void **)&id) : -1;
	if (len > 0 && (size_t)len * 2 == strlen(d->build_id)) {
		for (ok = true, i = 0; i < len && ok; i++)
			ok = d->build_id[2 * i] == hex[id[i] >> 4] &&
			     d->build_id[2 * i + 1] == hex[id[i] & 15];
	}
	elf_end(elf);
	return ok;
}

static int debug_try(const struct dso *d, const char *path, GElf_Word crc,
		     char **found)
{
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (st.st_dev == d->dev && st.st_ino == d->ino) ||
	    !debug_file_matches(d, fd, st.st_size, crc) ||
	    !(*found = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ROOT/.build-id/xx/rest.debug, or with link ROOT/DIR/link, for each
 * debug root. */
static int debug_try_roots(const struct dso *d, const char *prefix,
			   const char *link, int dirlen, GElf_Word crc,
			   char **found)
{
	char path[PATH_MAX];
	const char *root;
	int rlen, fd = -1;

	for (root = d->debug_roots; *root && fd < 0; root += rlen) {
		rlen = strcspn(root, ":");
		if (!rlen) {
			rlen = 1;
			continue;
		}
		if (!link)
			snprintf(path, sizeof(path),
				 "%s%.*s/.build-id/%.2s/%s.debug", prefix,
				 rlen, root, d->build_id, d->build_id + 2);
		else
			snprintf(path, sizeof(path), "%s%.*s%.*s/%s", prefix,
				 rlen, root, dirlen, d->name, link);
		fd = debug_try(d, path, crc, found);
	}
	return fd;
}

/* Build-id under each root, then the debuglink next to the file, in its
 * .debug/, and under each root, all below prefix. */
static int debug_search(const struct dso *d, const char *prefix,
			const char *link, GElf_Word crc, char **found)
{
	const char *slash = strrchr(d->name, '/');
	int dirlen = slash ? (int)(slash - d->name) : -1;
	char path[PATH_MAX];
	int fd = -1;

	if (strlen(d->build_id) > 2)
		fd = debug_try_roots(d, prefix, NULL, 0, crc, found);
	if (fd >= 0 || !link || d->name[0] != '/')
		return fd;
	snprintf(path, sizeof(path), "%s%.*s/%s", prefix, dirlen, d->name,
		 link);
	fd = debug_try(d, path, crc, found);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "%s%.*s/.debug/%s", prefix, dirlen,
		 d->name, link);
	fd = debug_try(d, path, crc, found);
	if (fd >= 0)
		return fd;
	return debug_try_roots(d, prefix, link, dirlen, crc, found);
}

static int dso_find_debuginfo(Dwfl_Module *mod, void **userdata,
			      const char *modname, Dwarf_Addr base,
			      const char *file_name, const char *link,
			      GElf_Word crc, char **found)
{
	const struct dso *d = *userdata;
	int fd = -1;

	(void)mod, (void)modname, (void)base, (void)file_name;
	if (!d)
		return -1;
	if (d->sysroot[0])
		fd = debug_search(d, d->sysroot, link, crc, found);
	if (fd < 0)
		fd = debug_search(d, "", link, crc, found);
	if (fd < 0)
		pr_debug("dso: %s: no separate debug file", d->name);
	return fd;
}

/* Never called: every module is reported with an open fd. */
static int dso_find_elf(Dwfl_Module *mod, void **userdata,
			const char *modname, Dwarf_Addr base,
			char **file_name, Elf **elfp)
{
	(void)mod, (void)userdata, (void)modname, (void)base;
	(void)file_name, (void)elfp;
	return -1;
}

static const Dwfl_Callbacks dso_dwfl_callbacks = {
	.find_elf = dso_find_elf,
	.find_debuginfo = dso_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Our copy of str, shared by equal strings. str on failure. */
static const char *dso_intern(struct dso *d, const char *str)
{
	struct dso_str *e, *head = NULL;
	size_t len = strlen(str);
	uint64_t h, v;

	h = hash_str(str);
	h -= h == U64MAP_EMPTY;
	if (u64map_get(&d->strs, h, &v))
		head = (struct dso_str *)(uintptr_t)v;
	for (e = head; e; e = e->next)
		if (!strcmp(e->s, str))
			return e->s;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return str;
	memcpy(e->s, str, len + 1);
	e->next = head;
	if (u64map_put(&d->strs, h, (uintptr_t)e)) {
		free(e);
		return str;
	}
	return e->s;
}

/* dir/name for a name relative to its CU's directory. */
static const char *dso_abs_path(struct dso *d, const char *dir,
				const char *name)
{
	char buf[PATH_MAX];

	if (!name || name[0] == '/' || !dir || !dir[0] ||
	    snprintf(buf, sizeof(buf), "%s/%s", dir, name) >= (int)sizeof(buf))
		return name;
	return dso_intern(d, buf);
}

/* ---- symbol table ---- */

static int sym_cmp(const void *a, const void *b)
{
	const struct dso_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return strcmp(x->name, y->name);
}

/* Prefer sized, global, then weak, unversioned, then fewer leading
 * underscores: the name a user would look for among aliases (malloc over
 * __libc_malloc, clntraw_create over clntraw_create@GLIBC_2.2.5). */
static uint8_t sym_rank(const GElf_Sym *sym, const char *name)
{
	static const uint8_t bind_rank[] = {
		[STB_LOCAL] = 2, [STB_GLOBAL] = 0, [STB_WEAK] = 1,
	};
	unsigned int bind = GELF_ST_BIND(sym->st_info);
	size_t under = strspn(name, "_");

	return (sym->st_size ? 0 : 128) +
	       (bind <= STB_WEAK ? bind_rank[bind] : 3) * 32 +
	       (strchr(name, '@') ? 16 : 0) + (under < 7 ? under : 7);
}

/* Fills s from symbol i when it names code; false to skip it. */
static bool sym_take(struct dso *d, int i, struct dso_sym *s)
{
	char buf[512];
	GElf_Word shndx;
	GElf_Shdr shdr;
	GElf_Addr addr;
	const char *name;
	Elf_Scn *scn;
	GElf_Sym sym;
	uint8_t rank;
	Elf *elf;
	int type;

	name = dwfl_module_getsym_info(d->mod, i, &sym, &addr, &shndx, &elf,
				       NULL);
	if (!name || !name[0] || name[0] == '$')
		return false;
	type = GELF_ST_TYPE(sym.st_info);
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
		return false;
	if (shndx == SHN_UNDEF || shndx >= SHN_LORESERVE)
		return false;
	scn = elf_getscn(elf, shndx);
	if (!scn || !gelf_getshdr(scn, &shdr) ||
	    !(shdr.sh_flags & SHF_EXECINSTR))
		return false;
	rank = sym_rank(&sym, name);
	/* compat symbols (.symver) carry their version in .symtab */
	if (strchr(name, '@') && strcspn(name, "@") < sizeof(buf)) {
		snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(name, "@"),
			 name);
		name = dso_intern(d, buf);
	}
	*s = (struct dso_sym){
		.addr = addr, .name = name, .rank = rank,
		.sized = sym.st_size != 0,
		/* a label runs to the next symbol, at most to its section's
		 * end (addr - st_value turns section vaddr into ours) */
		.end = sym.st_size ? addr + sym.st_size :
		       shdr.sh_addr + shdr.sh_size + (addr - sym.st_value),
	};
	return s->end > s->addr;
}

/* Sorted by address, one symbol per address, labels inside a sized
 * symbol dropped (dwfl_module_addrsym() makes the same choice). */
static void dso_load_syms(struct dso *d)
{
	uint64_t sized_end = 0;
	size_t i, n = 0;
	int cnt, k;

	cnt = dwfl_module_getsymtab(d->mod);
	if (cnt <= 1)
		return;
	d->syms = malloc(cnt * sizeof(*d->syms));
	if (!d->syms)
		return;
	for (k = 1; k < cnt; k++)
		n += sym_take(d, k, &d->syms[n]);
	qsort(d->syms, n, sizeof(*d->syms), sym_cmp);
	for (i = 0; i < n; i++) {
		if ((d->nsyms && d->syms[d->nsyms - 1].addr == d->syms[i].addr)
		    || (!d->syms[i].sized && d->syms[i].addr < sized_end))
			continue;
		if (d->syms[i].sized && d->syms[i].end > sized_end)
			sized_end = d->syms[i].end;
		d->syms[d->nsyms++] = d->syms[i];
	}
	for (i = 0; i + 1 < d->nsyms; i++)
		if (!d->syms[i].sized && d->syms[i].end > d->syms[i + 1].addr)
			d->syms[i].end = d->syms[i + 1].addr;
	d->caps.functions = d->nsyms > 0;
}

static const struct dso_sym *dso_sym_find(const struct dso *d, uint64_t a)
{
	size_t lo = 0, hi = d->nsyms, mid;

	while (lo < hi) {	/* first symbol above a */
		mid = lo + (hi - lo) / 2;
		if (d->syms[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || a >= d->syms[lo - 1].end)
		return NULL;
	return &d->syms[lo - 1];
}

/* ---- DWARF ---- */

/* A DWARF section, or GNU's compressed .zdebug_ form of it. */
static bool dwarf_has_section(Dwarf *dw, const char *want)
{
	Elf *elf = dwarf_getelf(dw);
	char z[64];

	snprintf(z, sizeof(z), ".z%s", want + 1);
	return elf && (elf_has_section(elf, want) || elf_has_section(elf, z));
}

static void dso_dw_init(struct dso *d)
{
	void **ud;

	if (d->dw_tried)
		return;
	d->dw_tried = true;
	d->dwfl = dwfl_begin(&dso_dwfl_callbacks);
	if (!d->dwfl)
		goto err;
	dwfl_report_begin(d->dwfl);
	d->mod = dwfl_report_elf(d->dwfl, d->name, d->name, d->fd, 0, true);
	if (!d->mod)
		goto err;
	d->fd = -1;		/* consumed */
	dwfl_report_end(d->dwfl, NULL, NULL);
	dwfl_module_info(d->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	*ud = d;
	dso_load_syms(d);
	d->dw = dwfl_module_getdwarf(d->mod, &d->dw_bias);
	if (d->dw && cu_index_build(d->dw, &d->cus))
		pr_debug("dso: %s: no memory for the DWARF unit index",
			 d->name);
	if (d->dw) {
		d->caps.inline_frames = true;
		d->caps.line_numbers = dwarf_has_section(d->dw, ".debug_line");
		d->caps.filenames = d->caps.line_numbers;
	}
	return;
err:
	pr_debug("dso: %s: libdwfl: %s", d->name, dwfl_errmsg(-1));
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	d->mod = NULL;
}

static const char *die_name(Dwarf_Die *die)
{
	static const int attrs[] = {
		DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name,
	};
	Dwarf_Attribute a;
	const char *s = NULL;
	size_t i;

	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]) && !s; i++)
		s = dwarf_formstring(dwarf_attr_integrate(die, attrs[i], &a));
	return s;
}

static bool die_is_func(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/* Innermost inlined subroutine first, the subprogram last. */
static int dwarf_func_dies(struct dso *d, Dwarf_Die *cu, Dwarf_Addr pc,
			   Dwarf_Die *dies)
{
	Dwarf_Die path[64];
	int i, np, n = 0, outer = -1;

	np = cu_index_scopes(d->cus, cu, pc, path, 64);
	for (i = 0; i < np && outer < 0; i++)
		if (die_is_func(dwarf_tag(&path[i])))
			outer = i;
	for (i = np - 1; i > outer && n < DSO_MAX_FRAMES - 1; i--)
		if (die_is_func(dwarf_tag(&path[i])))
			dies[n++] = path[i];
	if (outer >= 0)
		dies[n++] = path[outer];
	return n;
}

/* Where the inlined subroutine die was called from. */
static void dwarf_call_site(struct dso *d, Dwarf_Die *die,
			    struct dso_frame *f)
{
	Dwarf_Word file, line;
	Dwarf_Attribute a;
	Dwarf_Files *files;
	Dwarf_Die cu;
	size_t nfiles;

	if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &line))
		f->line = line <= INT_MAX ? (int)line : 0;
	if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &file) &&
	    dwarf_diecu(die, &cu, NULL, NULL) &&
	    !dwarf_getsrcfiles(&cu, &files, &nfiles) && file < nfiles)
		f->file = dso_abs_path(d, dwarf_formstring(dwarf_attr(&cu,
					DW_AT_comp_dir, &a)),
				       dwarf_filesrc(files, file, NULL, NULL));
}

static const char *dso_demangle(struct dso *d, const char *raw)
{
	uint64_t v;
	char *s;

	if (!raw || raw[0] != '_' || (raw[1] != 'Z' && raw[1] != 'R'))
		return raw;
	if (u64map_get(&d->demangled, (uintptr_t)raw, &v))
		return (const char *)(uintptr_t)v;
	if (demangle(raw, &s))
		s = (char *)raw;
	if (u64map_put(&d->demangled, (uintptr_t)raw, (uintptr_t)s)) {
		if (s != raw)
			free(s);
		return raw;
	}
	return s;
}

/* Frames for vaddr into f; 0 when nothing covers it. */
static int dso_resolve(struct dso *d, uint64_t vaddr, struct dso_frame *f)
{
	Dwarf_Die dies[DSO_MAX_FRAMES], cu;
	Dwarf_Addr pc = vaddr - d->dw_bias;
	const struct dso_sym *sym;
	Dwarf_Attribute a;
	const char *file;
	Dwarf_Line *line;
	bool have_cu;
	int i, n = 0;

	dso_dw_init(d);
	if (!d->mod)
		return 0;
	sym = dso_sym_find(d, vaddr);
	have_cu = d->cus && cu_index_find(d->cus, pc, &cu);
	if (have_cu)
		n = dwarf_func_dies(d, &cu, pc, dies);
	for (i = 0; i < n; i++) {
		f[i] = (struct dso_frame){ .system_name = die_name(&dies[i]) };
		dwarf_decl_line(&dies[i], &f[i].start_line);
		if (i)
			dwarf_call_site(d, &dies[i - 1], &f[i]);
	}
	if (sym) {
		if (!n)
			f[n++] = (struct dso_frame){ 0 };
		f[n - 1].system_name = sym->name;
	}
	if (!n)
		return 0;
	line = have_cu ? dwarf_getsrc_die(&cu, pc) : NULL;
	file = line ? dwarf_linesrc(line, NULL, NULL) : NULL;
	if (file && !dwarf_lineno(line, &f[0].line))
		f[0].file = dso_abs_path(d, dwarf_formstring(dwarf_attr(&cu,
					DW_AT_comp_dir, &a)), file);
	for (i = 0; i < n; i++)
		f[i].function = dso_demangle(d, f[i].system_name);
	return n;
}

/* Called with d->lock held. */
static int dso_memo(struct dso *d, uint64_t vaddr, uint64_t *v)
{
	struct dso_frame f[DSO_MAX_FRAMES], *pool;
	size_t cap;
	int n;

	n = dso_resolve(d, vaddr, f);
	if (d->npool + n > d->cap_pool) {
		cap = d->cap_pool ? d->cap_pool * 2 : 256;
		pool = realloc(d->pool, cap * sizeof(*pool));
		if (!pool)
			return -ENOMEM;
		d->pool = pool;
		d->cap_pool = cap;
	}
	*v = (uint64_t)d->npool << 8 | n;
	if (u64map_put(&d->addrs, vaddr, *v))
		return -ENOMEM;
	if (n)
		memcpy(d->pool + d->npool, f, n * sizeof(*f));
	d->npool += n;
	return 0;
}

/* When max is short, the outermost frame (the function holding the
 * code) is kept in the last slot and the innermost ones before it. */
int dso_symbolize(struct dso *d, uint64_t vaddr, struct dso_frame *frames,
		  int max, int *n)
{
	const struct dso_frame *f;
	int cnt, ret = 0;
	uint64_t v;

	*n = 0;
	if (max <= 0)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	if (!u64map_get(&d->addrs, vaddr, &v))
		ret = dso_memo(d, vaddr, &v);
	cnt = ret ? 0 : v & 0xff;
	if (cnt) {
		f = d->pool + (v >> 8);
		*n = cnt < max ? cnt : max;
		memcpy(frames, f, (*n - 1) * sizeof(*f));
		frames[*n - 1] = f[cnt - 1];
	} else if (!ret) {
		ret = -ENOENT;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

const char *dso_symbol_name(struct dso *d, uint64_t vaddr)
{
	const struct dso_sym *sym;

	pthread_mutex_lock(&d->lock);
	dso_dw_init(d);
	sym = dso_sym_find(d, vaddr);
	pthread_mutex_unlock(&d->lock);
	return sym ? sym->name : NULL;
}

/* name, or name@VERSION / name@@VERSION, is the symbol called want. */
static bool sym_named(const char *name, const char *want)
{
	size_t n = strlen(want);

	return !strncmp(name, want, n) && (!name[n] || name[n] == '@');
}

int dso_symbol_vaddr(struct dso *d, const char *name, uint64_t *vaddr)
{
	int ret = -ENOENT, cnt;

	pthread_mutex_lock(&d->lock);
	dso_dw_init(d);
	/* Rare (an agent load), so a scan of every symbol, aliases
	 * included: the sorted table keeps one name per address. An IFUNC's
	 * address is its resolver's, not the function's. */
	cnt = d->mod ? dwfl_module_getsymtab(d->mod) : 0;
	for (int i = 1; i < cnt; i++) {
		GElf_Word shndx;
		GElf_Addr addr;
		GElf_Sym sym;
		const char *s;

		s = dwfl_module_getsym_info(d->mod, i, &sym, &addr, &shndx,
					    NULL, NULL);
		if (s && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
		    shndx != SHN_UNDEF && sym_named(s, name)) {
			*vaddr = addr;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

static int range_cmp(const void *a, const void *b)
{
	const struct dso_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sort and merge touching or overlapping ranges in place. */
static size_t ranges_merge(struct dso_range *r, size_t n)
{
	size_t k = 0;

	if (!n)
		return 0;	/* r may be NULL: qsort's may not */
	qsort(r, n, sizeof(*r), range_cmp);
	for (size_t i = 0; i < n; i++) {
		if (k && r[i].start <= r[k - 1].end) {
			if (r[i].end > r[k - 1].end)
				r[k - 1].end = r[i].end;
			continue;
		}
		r[k++] = r[i];
	}
	return k;
}

/* Where a symbol of code ends: its size, else what the sorted table (which
 * bounds labels by the next symbol) says of its address. 0: not code. */
static uint64_t sym_range_end(const struct dso *d, const GElf_Sym *sym,
			      GElf_Addr addr)
{
	const struct dso_sym *s;

	if (sym->st_size)
		return addr + sym->st_size;
	s = dso_sym_find(d, addr);
	return s && s->addr == addr ? s->end : 0;
}

int dso_symbol_ranges(struct dso *d, bool (*match)(void *arg,
						   const char *name),
		      void *arg, struct dso_range **out, size_t *n)
{
	struct dso_range *r = NULL;
	size_t cnt_r = 0, cap = 0;
	char buf[512];
	int ret = 0, cnt;

	pthread_mutex_lock(&d->lock);
	dso_dw_init(d);
	cnt = d->mod ? dwfl_module_getsymtab(d->mod) : 0;
	for (int i = 1; i < cnt && !ret; i++) {
		GElf_Word shndx;
		GElf_Addr addr;
		GElf_Sym sym;
		const char *s;
		uint64_t end;
		int type;

		s = dwfl_module_getsym_info(d->mod, i, &sym, &addr, &shndx,
					    NULL, NULL);
		type = s ? GELF_ST_TYPE(sym.st_info) : STT_NOTYPE;
		if (!s || (type != STT_FUNC && type != STT_GNU_IFUNC) ||
		    shndx == SHN_UNDEF || shndx >= SHN_LORESERVE)
			continue;
		snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(s, "@"), s);
		end = sym_range_end(d, &sym, addr);
		if (end <= addr || !match(arg, buf))
			continue;
		if (cnt_r == cap) {
			struct dso_range *v;

			cap = cap ? 2 * cap : 16;
			v = realloc(r, cap * sizeof(*r));
			if (!v) {
				ret = -ENOMEM;
				break;
			}
			r = v;
		}
		r[cnt_r++] = (struct dso_range){ addr, end };
	}
	pthread_mutex_unlock(&d->lock);
	if (ret) {
		free(r);
		return ret;
	}
	*n = ranges_merge(r, cnt_r);
	*out = r;
	return 0;
}

ssize_t dso_range_below(const struct dso_range *r, size_t n, uint64_t v)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].start <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ssize_t)lo - 1;
}

bool dso_ranges_hold(const struct dso_range *r, size_t n, uint64_t v)
{
	ssize_t i = dso_range_below(r, n, v);

	return i >= 0 && v < r[i].end;
}

void dso_caps(struct dso *d, struct dso_caps *caps)
{
	pthread_mutex_lock(&d->lock);
	dso_dw_init(d);
	*caps = d->caps;
	pthread_mutex_unlock(&d->lock);
}

/* ---- .debug_frame ---- */

/* A zero-padded copy of elf's .debug_frame, decompressed; NULL if none. */
static uint8_t *elf_debug_frame(Elf *elf, size_t *size)
{
	Elf_Scn *scn = NULL;
	const char *name;
	size_t shstrndx;
	GElf_Shdr shdr;
	Elf_Data *data;
	uint8_t *copy;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && !strcmp(name, ".debug_frame"))
			break;
	}
	if (!scn || ((shdr.sh_flags & SHF_COMPRESSED) &&
		     elf_compress(scn, 0, 0) < 0))
		return NULL;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || !data->d_size ||
	    data->d_size > SIZE_MAX / 2)
		return NULL;
	/* whole words: libunwind reads aligned 8-byte words */
	copy = calloc(1, (data->d_size + DSO_DEBUG_FRAME_PAD + 7) & ~7ul);
	if (!copy)
		return NULL;
	memcpy(copy, data->d_buf, data->d_size);
	*size = data->d_size;
	return copy;
}

/* Called with d->lock held, once. */
static void dso_df_load(struct dso *d, void *(*make_index)(const uint8_t *,
							   size_t),
			void (*drop)(void *))
{
	Dwarf_Addr bias;
	Elf *elf, *debug;

	dso_dw_init(d);
	if (!d->mod)
		return;
	elf = dwfl_module_getelf(d->mod, &bias);
	d->df_data = elf_debug_frame(elf, &d->df_size);
	debug = d->dw ? dwarf_getelf(d->dw) : NULL;
	if (!d->df_data && debug != elf)
		d->df_data = elf_debug_frame(debug, &d->df_size);
	if (!d->df_data)
		return;
	d->df_index = make_index(d->df_data, d->df_size);
	d->df_drop = drop;
	if (!d->df_index) {
		free(d->df_data);
		d->df_data = NULL;
	}
}

int dso_debug_frame(struct dso *d, void *(*make_index)(const uint8_t *data,
						       size_t size),
		    void (*drop)(void *index), struct dso_debug_frame *out)
{
	if (!atomic_load_explicit(&d->df_done, memory_order_acquire)) {
		pthread_mutex_lock(&d->lock);
		if (!atomic_load_explicit(&d->df_done, memory_order_relaxed))
			dso_df_load(d, make_index, drop);
		atomic_store_explicit(&d->df_done, true, memory_order_release);
		pthread_mutex_unlock(&d->lock);
	}
	if (!d->df_index)
		return -ENOENT;
	*out = (struct dso_debug_frame){ .data = d->df_data,
					 .size = d->df_size,
					 .index = d->df_index };
	return 0;
}
