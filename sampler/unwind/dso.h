/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dso.h - ELF objects (programs, shared libraries) as the sampler needs
 * them: file bytes by virtual address (for the unwinder), the unwind table
 * location (PT_GNU_EH_FRAME), the .debug_frame section, and symbolization
 * of an address into function, file:line and inlined frames.
 *
 * A dso is read-only after it is built and is shared by every session
 * that meets the same file: the cache keys it by GNU build-id, or by
 * (st_dev, st_ino, st_size, st_mtime) when the file has none, so a second
 * session, or a second process running the same binary, parses nothing.
 *
 * Symbols come from .symtab, then .dynsym, demangled (demangle.h); a
 * separate debug file is found by build-id under each debug root (default
 * "/usr/lib/debug": ROOT/.build-id/xx/yyyy.debug) and by .gnu_debuglink
 * (next to the file, in its .debug/ directory, and under ROOT/<dir of
 * file>). File names, line numbers and inlined frames come from DWARF
 * through libdw, compile units found by their own ranges (cu_index.h).
 * An object in no file (the vDSO) is loaded from its image in memory.
 *
 * Thread safety: dso_cache_get() and every dso_* call may be used from any
 * thread at once (a dso serializes its libdw use internally).
 *
 * Ownership: dso_cache_get() returns a reference; release it with
 * dso_put(). Strings returned by a dso are owned by it and live as long as
 * the reference. Errors are negative errno values.
 */
#ifndef PROFFS_DSO_H
#define PROFFS_DSO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dso;
struct dso_cache;

/*
 * New cache. debug_roots is a ':'-separated list of roots to look for
 * separate debug files in (NULL = "/usr/lib/debug"); copied.
 */
int dso_cache_new(const char *debug_roots, struct dso_cache **out);
/* Drops the cache's references; dsos still referenced live on. */
void dso_cache_free(struct dso_cache *c);
/* Keep the inflated forms of compressed separate debug files in dir
 * (made 0700 if missing; refused unless private to this user), for later
 * daemons, within DSO_DEBUG_CACHE_MAX bytes (dso_i.h); for
 * dsos opened after the call. Set once, before the cache is shared. */
int dso_cache_set_inflate_dir(struct dso_cache *c, const char *dir);

/*
 * The cache's bound and expiry: a dso that no session or process context
 * holds (only the cache) goes DSO_CACHE_IDLE_S after its last holder let
 * go once no process seen mapping it (dso_note_user()) runs any more;
 * and the least recently let go goes first, mapped or not, while the
 * cache holds more than DSO_CACHE_MAX. A dso in use always stays. Sweeps
 * happen at most every DSO_CACHE_SWEEP_MS, from dso_cache_get() and the
 * daemon's sweeper (fs/core/sweep.h), and when asked (now: at once);
 * freed memory is handed back to the system
 * (malloc_trim()).
 */
#define DSO_CACHE_IDLE_S	60
#define DSO_CACHE_MAX		256
#define DSO_CACHE_SWEEP_MS	1000
void dso_cache_sweep(struct dso_cache *c, bool now);

/* pid maps d: d stays cached while it runs (the latest few such pids are
 * remembered). */
void dso_note_user(struct dso *d, pid_t pid);

/* Other limits than the defaults above (tests). */
void dso_cache_set_limits(struct dso_cache *c, uint64_t idle_ms, size_t max);

/*
 * The bound in bytes (what dso_mem_bytes() counts): past it, the dsos no
 * one but the cache holds go, the least recently let go first, but none
 * let go less than grace_ms ago. Dsos in use stay; when they alone
 * exceed the bound the log says so (once an hour at most) and
 * dso_cache_pressed() is true, for a holder that can let go (the flight
 * recorder). max_bytes 0: no byte bound. DSO_CACHE_BYTES and
 * DSO_CACHE_GRACE_MS unless set (-o dso_mem= in the daemon). The log
 * says it at most every DSO_CACHE_SAY_MS, with how often it happened.
 */
#define DSO_CACHE_BYTES		(64ull << 20)
#define DSO_CACHE_GRACE_MS	2000
#define DSO_CACHE_SAY_MS	(3600 * 1000ull)
void dso_cache_set_bytes(struct dso_cache *c, uint64_t max_bytes,
			 uint64_t grace_ms);
/* Whether, at the cache's last sweep, the dsos in use alone held more
 * than its byte bound. */
bool dso_cache_pressed(struct dso_cache *c);

/*
 * What d holds now, in bytes: its own tables, libdw's heap for it
 * (measured), its inflated debug file, and the mapped sections it reads
 * through (dso_mem.c says how each is counted). Grows as it symbolizes.
 */
uint64_t dso_mem_bytes(const struct dso *d);
/* The same in its parts (their sum is dso_mem_bytes()). */
struct dso_mem_parts {
	uint64_t heap;		/* our tables, and libdw's (estimated) */
	uint64_t inflated;	/* the inflated debug file (a memfd) */
	uint64_t mapped;	/* file sections read through */
};
void dso_mem_parts(struct dso *d, struct dso_mem_parts *p);

struct dso_cache_stats {
	size_t objects;		/* dsos held now */
	size_t max;		/* the bound */
	uint64_t idle_ms;	/* the expiry */
	uint64_t expired;	/* dsos let go so far */
	uint64_t bytes;		/* what they hold (dso_mem_bytes()) */
	uint64_t in_use;	/* of which held by someone but the cache */
	uint64_t max_bytes;	/* the byte bound, 0 when none */
	uint64_t grace_ms;	/* let go more recently: never evicted */
	uint64_t kept_bytes;	/* inflated debug files kept for the boot */
	uint64_t kept_max;	/* their bound; 0: none kept */
	uint64_t rows;		/* dso_row_put() values the objects keep */
	uint64_t row_hits;	/* dso_row_get()s that found one (ever) */
	uint64_t row_misses;	/* and that did not */
	uint64_t rows_full;	/* puts refused at DSO_ROWS_MAX */
};
/* After a sweep; for the status file. */
void dso_cache_stats(struct dso_cache *c, struct dso_cache_stats *st);

/*
 * Find or load the ELF file that can be opened at open_path (e.g.
 * "/proc/PID/map_files/START-END" or "/proc/PID/root/usr/lib/libc.so.6").
 * name is the path as the target process sees it (from /proc/PID/maps):
 * it is what profiles show, and where .gnu_debuglink is looked up.
 * -ENOENT/-EACCES if it cannot be opened, -ENOEXEC if it is not ELF.
 */
int dso_cache_get(struct dso_cache *c, const char *open_path,
		  const char *name, struct dso **out);

/*
 * Find or load an ELF image that exists only in memory, len bytes at
 * image (copied), under name: a process's vDSO, read from the process.
 * Images with the same bytes share one dso. Errors as dso_cache_get().
 */
int dso_cache_get_image(struct dso_cache *c, const char *name,
			const void *image, size_t len, struct dso **out);

/* Another reference. */
struct dso *dso_get(struct dso *d);
/* Release a reference; NULL is a no-op. */
void dso_put(struct dso *d);

/* Path as the target sees it. Never NULL. */
const char *dso_name(const struct dso *d);
/* Lowercase hex GNU build-id, "" when the file has none. Never NULL. */
const char *dso_build_id(const struct dso *d);

/*
 * Translate a file offset (a mapping's pgoff) to the ELF virtual address
 * it is loaded at, using the PT_LOAD headers; exec: the mapping is
 * executable, so it comes from an executable segment where several share
 * the page (LLD, mold). -ENOENT if no segment holds it. load bias of a
 * mapping = map_start - vaddr(map_pgoff).
 */
int dso_offset_to_vaddr(const struct dso *d, uint64_t offset, bool exec,
			uint64_t *vaddr);

/*
 * Whether a PT_LOAD of d puts file offset offset (a mapping's pgoff) at
 * ELF virtual address vaddr, as the kernel maps segments (from the start
 * of the page holding p_offset): checks a load bias guessed for a mapping.
 */
bool dso_maps_offset_at(const struct dso *d, uint64_t offset,
			uint64_t vaddr);

/*
 * Copy len bytes found at ELF virtual address vaddr in the file (the
 * bytes a PT_LOAD maps there) into buf. 0, or -EFAULT if any byte is
 * outside the file-backed part of a segment. Cheap: the file is mmapped.
 */
int dso_read(const struct dso *d, uint64_t vaddr, void *buf, size_t len);

/*
 * Where the .eh_frame_hdr is (PT_GNU_EH_FRAME): its ELF vaddr and size.
 * -ENOENT if the object has none.
 */
int dso_eh_frame_hdr(const struct dso *d, uint64_t *vaddr, uint64_t *size);

/*
 * The len bytes at ELF vaddr as the file maps them (dso_read() without
 * the copy): valid while the caller holds d. NULL where dso_read() would
 * say -EFAULT.
 */
const uint8_t *dso_bytes(const struct dso *d, uint64_t vaddr, size_t len);

/*
 * The .eh_frame_hdr binary search table, in the one form GNU ld, gold
 * and lld write (version 1, sdata4 eh_frame_ptr, udata4 count,
 * datarel|sdata4 entries): entries (count pairs of int32 start, FDE
 * offsets from hdr) in the mapped file, and top, every
 * DSO_EH_STRIDE-th entry's start, built on the first call and kept with
 * the object (NULL without memory: then search entries whole). A search
 * reads top, a few KB that stay in cache, then one stride of entries:
 * not ~17 words strewn over a table of up to megabytes, each a cache and
 * TLB miss (in a guest, a two-level walk). 0, or -ENOENT when the object
 * has no such table.
 */
#define DSO_EH_STRIDE 64
struct dso_eh_table {
	uint64_t hdr;		/* the table's base: an ELF vaddr */
	const uint8_t *entries;
	uint32_t count;
	const int32_t *top;	/* (count + DSO_EH_STRIDE - 1) / STRIDE */
};
int dso_eh_table(struct dso *d, struct dso_eh_table *t);

/*
 * The object's .debug_frame section, for code without .eh_frame CFI: the
 * object's own, else its separate debug file's (found as for symbols).
 * data is a decompressed copy followed by DSO_DEBUG_FRAME_PAD zero bytes
 * (so a reader that overruns a record stays in it); index is what the
 * first caller's make_index(data, size) returned, built once and freed
 * with drop() when the dso goes: one user (cfi.c) may keep its search
 * table over the section with the dso. Both are owned by the dso and
 * immutable. 0; -ENOENT when there is no such section or make_index
 * returned NULL. Loads the debug file on the first call (slow, once).
 */
#define DSO_DEBUG_FRAME_PAD 16
struct dso_debug_frame {
	const uint8_t *data;
	size_t size;
	const void *index;
};
int dso_debug_frame(struct dso *d, void *(*make_index)(const uint8_t *data,
						       size_t size),
		    void (*drop)(void *index), struct dso_debug_frame *out);

/* One frame of a symbolized address. Strings owned by the dso; NULL when
 * unknown. */
struct dso_frame {
	const char *function;	/* demangled when possible */
	const char *system_name;	/* raw (mangled) symbol name */
	const char *file;
	int line;		/* 0 when unknown */
	int start_line;		/* 0 when unknown */
};

/*
 * Symbolize an ELF virtual address of this object. Fills up to max
 * frames, innermost (most deeply inlined) first, the function that holds
 * the code last; *n is set to the number filled (>= 1 when a symbol was
 * found). Returns 0, or -ENOENT when no symbol covers vaddr (then *n = 0).
 */
int dso_symbolize(struct dso *d, uint64_t vaddr, struct dso_frame *frames,
		  int max, int *n);

/*
 * The raw (mangled) name in the symbol table of the function holding
 * vaddr, or NULL: what dso_symbolize() gives its outermost frame, without
 * DWARF. Loads the symbol table on the first call.
 */
const char *dso_symbol_name(struct dso *d, uint64_t vaddr);

/* Whether the object is a Go program (Go's build-info section or
 * build-id note): its runtime switches stacks inside frames whose CFI
 * does not say so. */
bool dso_is_go(const struct dso *d);

/* The ELF address and size of the section called name (a Go program's
 * .bss, where the runtime keeps its list of goroutines). 0, or -ENOENT
 * (no such section, or one not loaded). */
int dso_section(const struct dso *d, const char *name, uint64_t *vaddr,
		uint64_t *size);

/*
 * A Go program's own table of functions, lines and frame sizes
 * (gopclntab.h), or NULL. Owned by the dso, immutable: for symbols and
 * unwinding where the program has no symbol table, DWARF or CFI.
 */
struct gopcln;
const struct gopcln *dso_gopcln(const struct dso *d);

/*
 * What a runtime's reader learned of this object that holds for as long
 * as the object does, kept with it so that the next process mapping it
 * (or the next read of the same one) is spared the work: where a
 * stripped Go program keeps runtime.allgs (found by a search of its
 * .bss), the layout a libjvm.so exports (thousands of reads of the
 * target). One blob per kind, copied in and out under the object's
 * lock; the latest put wins.
 *
 * dso_memo_get(): 0 with buf filled; -ENOENT when none was put, or one
 * of another size. dso_memo_put(): 0, -EINVAL (size 0 or over
 * DSO_MEMO_MAX), -ENOMEM (the object unchanged).
 */
enum dso_memo_kind { DSO_MEMO_GO_ALLGS, DSO_MEMO_JVM_LAYOUT, DSO_MEMO__COUNT };
#define DSO_MEMO_MAX	4096
int dso_memo_get(struct dso *d, enum dso_memo_kind k, void *buf,
		 size_t size);
int dso_memo_put(struct dso *d, enum dso_memo_kind k, const void *buf,
		 size_t size);

/*
 * Values a user computes per ELF virtual address from this object alone
 * (the unwinder's CFI row at a pc, unwind.c), kept with the object so
 * that the next session, or the next process mapping the same file, does
 * not compute them again: one kind per object (a value of another size
 * is neither kept nor found), at most DSO_ROWS_MAX values of at most
 * DSO_ROW_SIZE_MAX bytes each (past it nothing more is kept), counted in
 * dso_mem_bytes() and so under the cache's byte bound, let go when the
 * object goes (its expiry). Thread-safe (a lock of their own).
 * dso_row_get(): whether vaddr had a value, copied into val.
 * dso_row_put(): keeps val for vaddr (a first value stays; no memory or
 * the bound reached: not kept). dso_rows_held(): how many d keeps.
 * dso_rows_counters(): gets that found a value, that did not, and puts
 * refused at the bound, since the daemon started (every object).
 */
#define DSO_ROWS_MAX		32768
#define DSO_ROW_SIZE_MAX	256
bool dso_row_get(struct dso *d, uint64_t vaddr, void *val, size_t size);
void dso_row_put(struct dso *d, uint64_t vaddr, const void *val,
		 size_t size);
size_t dso_rows_held(struct dso *d);
void dso_rows_counters(uint64_t *hits, uint64_t *misses, uint64_t *full);

/*
 * The ELF virtual address of the function called name (the name a user
 * would call it by: the default version, without "@..."), from the same
 * symbol tables dso_symbolize() uses. 0, or -ENOENT.
 */
int dso_symbol_vaddr(struct dso *d, const char *name, uint64_t *vaddr);

/* The same for a data object (a runtime's global state, a version
 * constant): its ELF virtual address and size. 0, or -ENOENT. */
int dso_object_vaddr(struct dso *d, const char *name, uint64_t *vaddr,
		     uint64_t *size);

/*
 * Where members of a structure type are, from the DWARF (a Go runtime's
 * "runtime.g"): the type is looked for among the top-level types of the
 * units called unit first (Go puts a package's types in its unit), then
 * of every unit (unit NULL: at once). members[i] may name a member of a
 * member, "sched.sp"; offs[i] is its byte offset, or -1 when there is no
 * such member. 0; -ENOENT without DWARF or such a type.
 */
int dso_struct_offsets(struct dso *d, const char *unit, const char *type,
		       const char *const *members, long *offs, size_t n);

/*
 * The address ranges of every function symbol whose name (without its
 * "@VERSION") match() accepts, aliases included: the symbol tables keep
 * one name per address for symbolization, so a caller that asks "is this
 * pc inside malloc?" by name misses calloc when it is named __libc_calloc;
 * by range it cannot. A symbol without a size runs to the end of the
 * symbol the sorted table keeps at its address. *out is sorted by start,
 * overlapping ranges merged; free() it. 0 (*n may be 0), or -ENOMEM.
 */
struct dso_range {
	uint64_t start, end;	/* ELF vaddrs, [start, end) */
};
int dso_symbol_ranges(struct dso *d, bool (*match)(void *arg,
						   const char *name),
		      void *arg, struct dso_range **out, size_t *n);

/* Of ranges sorted by start (as dso_symbol_ranges() gives them): the
 * index of the last one starting at or below v, or -1; whether one holds
 * v. */
ssize_t dso_range_below(const struct dso_range *r, size_t n, uint64_t v);
bool dso_ranges_hold(const struct dso_range *r, size_t n, uint64_t v);

/* What dso_symbolize() can give, for pprof's Mapping.has_* flags. */
struct dso_caps {
	bool functions;		/* a symbol table exists */
	bool filenames;		/* DWARF line info exists */
	bool line_numbers;
	bool inline_frames;	/* DWARF info with inlined subroutines */
};
void dso_caps(struct dso *d, struct dso_caps *caps);

#endif
