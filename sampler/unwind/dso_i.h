/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dso_i.h - what the three files of the dso module share: the object
 * itself and the cache (dso.c: ELF headers, the cache, addresses), the
 * address map, separate debug files and the symbol table (dso_sym.c),
 * and DWARF and .debug_frame (dso_dwarf.c). Private to them; dso.h is
 * the module's interface. dso_inflate.c readies a separate debug file
 * for libdw; dso_expire.c is the cache's bounds and expiry, dso_mem.c
 * what each object holds in bytes (for the byte bound).
 */
#ifndef PROFFS_DSO_I_H
#define PROFFS_DSO_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "sampler/unwind/dso.h"

#define DSO_DEFAULT_ROOTS	"/usr/lib/debug"
/* Deeper inline chains are cut in the middle; the outer function stays. */
#define DSO_MAX_FRAMES		32
#define U64MAP_EMPTY		UINT64_MAX
/* Processes a dso remembers mapping it: the latest few. */
#define DSO_USERS		4

/* Open addressing, linear probing; keys are never U64MAP_EMPTY. A key
 * and its value share a line: a probe of a table of megabytes misses
 * the cache once, not twice. */
struct u64map_slot {
	uint64_t key;
	uint64_t val;
};

struct u64map {
	struct u64map_slot *slots;
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
	_Atomic uint64_t mem;	/* bytes it holds, as dso_mem.c counts */
	_Atomic pid_t users[DSO_USERS];	/* processes seen mapping it */
	atomic_uint next_user;
	char *name;
	char *build_id;		/* hex, "" when none */
	char *sysroot;		/* open_path minus name, e.g. /proc/1/root */
	char *debug_roots;	/* ':'-separated */
	char *inflate_dir;	/* inflated debug files kept there, or NULL */
	const unsigned char *map;
	size_t map_size;
	dev_t dev;
	ino_t ino;
	struct dso_seg *segs;
	int nsegs;
	bool has_eh;
	bool go;		/* a Go program */
	struct gopcln *gopcln;	/* its .gopclntab (gopclntab.h), or NULL */
	uint64_t eh_vaddr, eh_size;
	/* dso_eh_table()'s top: published once by compare-and-swap, so that
	 * no unwind waits on the lock DWARF loading holds */
	int32_t *_Atomic eh_top;
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
	/* syms' addresses alone, searched in place of syms: a big
	 * program's table is a megabyte, this a quarter of it, and the
	 * search's last steps miss the cache in either (NULL without
	 * memory: syms is searched) */
	uint64_t *sym_addrs;
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
	/* what it holds beyond its own tables (dso_mem.c) */
	size_t syms_cap;	/* entries allocated in syms */
	uint64_t cuix_bytes;	/* cu_index_mem_bytes(cus), when it grew */
	uint64_t str_bytes;	/* interned and demangled strings */
	uint64_t memfd_bytes;	/* the inflated debug file */
	uint64_t file_bytes;	/* mapped sections read in full */
	struct u64map cus_seen;	/* DWARF units libdw has loaded */
	size_t ncus_seen;
	uint64_t dw_lines;	/* line table rows libdw has loaded */
	void *memo[DSO_MEMO__COUNT];	/* dso_memo_put()'s blobs */
	size_t memo_size[DSO_MEMO__COUNT];

	/* dso_row_get()'s values (dso_rows.c), under a lock of their own */
	pthread_mutex_t rows_lock;
	struct u64map rows;	/* vaddr -> index into rows_vals */
	uint8_t *rows_vals;	/* rows_n values of rows_size bytes */
	size_t rows_n, rows_cap, rows_size;
	_Atomic uint64_t rows_bytes;	/* what they take */
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
	char *inflate_dir;	/* dso_cache_set_inflate_dir(), or NULL */
	struct cache_ent **tab;	/* protected by lock */
	size_t ntab, nent;
	size_t nobj;		/* dsos the cache holds (owner entries) */
	size_t max;		/* DSO_CACHE_MAX unless set */
	uint64_t max_bytes;	/* DSO_CACHE_BYTES unless set; 0: none */
	uint64_t grace_ms;	/* DSO_CACHE_GRACE_MS unless set */
	uint64_t bytes, in_use;	/* at the last sweep */
	bool over;		/* in-use objects alone exceed max_bytes */
	uint64_t overs;		/* times they began to, since said_ms */
	uint64_t said_ms;	/* when the log last said so, 0: never */
	uint64_t idle_ms;	/* DSO_CACHE_IDLE_S unless set */
	uint64_t swept_ms, expired;
};

/* ---- dso_sym.c ---- */

/* FNV-1a of a string. */
uint64_t dso_hash_str(const char *s);

/* The u64 -> u64 map: get is false when k is absent; put is 0 or
 * -ENOMEM (the map unchanged); free leaves an empty map. */
bool dso_map_get(const struct u64map *m, uint64_t k, uint64_t *v);
int dso_map_put(struct u64map *m, uint64_t k, uint64_t v);
void dso_map_free(struct u64map *m);

/* libdwfl's callbacks: separate debug files are searched for in the
 * dso's debug roots, under its sysroot first. */
extern const Dwfl_Callbacks dso_dwfl_callbacks;

/* dir/file as an absolute path, interned in d (file when absolute, or on
 * failure). Called with d->lock held. */
const char *dso_abs_path(struct dso *d, const char *dir, const char *file);

/* The symbol table, sorted, into d->syms (empty on failure); the symbol
 * holding vaddr a, or NULL. Called with d->lock held. */
void dso_load_syms(struct dso *d);
const struct dso_sym *dso_sym_find(const struct dso *d, uint64_t a);

/* ---- dso_inflate.c ---- */

/* The debug file fd as a memfd with its compressed DWARF sections
 * inflated and the ones symbolizing skips dropped, into *out_fd (the
 * caller's; fd stays open): 0; -ENOENT when it has none compressed;
 * -errno, *out_fd -1, when it cannot be made (use fd as it is). */
int dso_debug_inflate(int fd, int *out_fd);
/* The same into dst, an empty file of the caller's opened for writing
 * (dst is *out_fd on success, and never closed here); -E2BIG when the
 * result would be over half of keep_max (not worth keeping). */
int dso_debug_inflate_into(int fd, int dst, uint64_t keep_max,
			   int *out_fd);

/* ---- dso_debugcache.c ---- */

/* The debug file fd inflated as dso_debug_inflate() makes it, kept in
 * dir (private to the daemon's user: /var/cache/proffs for root) so that
 * later daemons map it instead of inflating it again: a read-only
 * fd of the kept file into *out_fd (the caller's); a file made here is
 * kept only within max bytes in all (DSO_DEBUG_CACHE_MAX), and only
 * while the filesystem has four times max free, the least recently
 * used removed first. dir NULL, or any error with it, falls back to
 * dso_debug_inflate(); returns what that returns. */
#define DSO_DEBUG_CACHE_MAX	(128ull << 20)
int dso_debug_inflate_cached(int fd, const char *dir, uint64_t max,
			     int *out_fd);
/* The bytes the kept files of dir take (0 when there are none). */
uint64_t dso_debug_kept_bytes(const char *dir);

/* ---- dso_mem.c ---- */

/* What one malloc() of n bytes takes, about. */
uint64_t dso_alloc_bytes(uint64_t n);
/* The sizes of the sections of elf named in names (NULL-terminated). */
uint64_t dso_sections_bytes(Elf *elf, const char *const *names);
/* Recount d->mem. Called with d->lock held (or before d is shared). */
void dso_mem_update(struct dso *d);

/* ---- dso_rows.c ---- */

/* Frees what dso_row_put() kept in d (when d goes). */
void dso_rows_free(struct dso *d);

/* ---- dso.c ---- */

/* Whether elf has a section of that name. */
bool dso_elf_has_section(Elf *elf, const char *want);

#endif
