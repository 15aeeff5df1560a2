// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dso_mem.c - what a cached dso holds, in bytes, for the cache's byte
 * bound (dso.h: DSO_CACHE_BYTES, dso_mem_bytes()).
 *
 * A dso holds four kinds of memory, counted so:
 *  - its own tables (the object, names, segments, the memo of symbolized
 *    addresses and its frame pool, interned and demangled strings, the
 *    .debug_frame copy): counted from their sizes, as malloc() rounds.
 *  - libdw's heap (Elf and Dwarf handles, section headers, its abbrev,
 *    unit and line tables) with ours built over it (the sorted symbol
 *    table, the unit index): libdw's allocations cannot be seen one by
 *    one, so the heap in use (mallinfo2) is measured around the calls
 *    that grow it: loading the module (once) and the first lookup in
 *    each DWARF unit (its unit table and line table). Other threads
 *    allocate and free meanwhile, so each measure is off by what they
 *    did; that noise goes both ways and mostly cancels over the many
 *    measures of a dso. Where a sanitizer or valgrind owns the heap
 *    mallinfo2 says 0, and the estimate below stands in.
 *  - the inflated debug file (dso_inflate.c): a memfd, its whole size.
 *  - pages of mapped files: the sections read through in full (.eh_frame
 *    and its header, .gopclntab, the symbol and string tables). Pages of
 *    uncompressed DWARF in a debug file that lookups touch are not
 *    counted: they are page cache the kernel may take back at any time.
 *
 * docs/performance.md compares the sum with the daemon's RSS growth.
 */
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "sampler/unwind/cu_index.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/dso_i.h"

/* Without mallinfo2 (sanitizers, valgrind): libdw's module, and each
 * DWARF unit looked into, as measured on Debian 12's libc, python3 and
 * libjvm (docs/performance.md). */
#define DW_EST_MODULE	(64u << 10)
#define DW_EST_UNIT	(24u << 10)

uint64_t dso_alloc_bytes(uint64_t n)
{
	uint64_t m = (n + 8 + 15) & ~15ull;

	return m < 32 ? 32 : m;
}

uint64_t dso_heap_now(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

void dso_heap_since(struct dso *d, uint64_t before)
{
	uint64_t now;

	if (!before)
		return;
	now = dso_heap_now();
	d->dw_heap += (int64_t)(now - before);
	d->dw_measured = true;
}

uint64_t dso_sections_bytes(Elf *elf, const char *const *names)
{
	uint64_t sum = 0;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const char *name;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		for (int i = 0; names[i]; i++)
			if (!strcmp(name, names[i]))
				sum += sh.sh_size;
	}
	return sum;
}

static uint64_t map_bytes(const struct u64map *m)
{
	return m->mask ? 2 * dso_alloc_bytes((m->mask + 1) * sizeof(uint64_t))
		       : 0;
}

static uint64_t str_bytes(const char *s)
{
	return s ? dso_alloc_bytes(strlen(s) + 1) : 0;
}

void dso_mem_update(struct dso *d)
{
	uint64_t m = dso_alloc_bytes(sizeof(*d)) + str_bytes(d->name) +
		     str_bytes(d->build_id) + str_bytes(d->sysroot) +
		     str_bytes(d->debug_roots) +
		     dso_alloc_bytes(d->nsegs * sizeof(*d->segs));

	m += map_bytes(&d->addrs) + map_bytes(&d->demangled) +
	     map_bytes(&d->strs) + map_bytes(&d->cus_seen) + d->str_bytes;
	if (d->cap_pool)
		m += dso_alloc_bytes(d->cap_pool * sizeof(*d->pool));
	if (d->df_data)
		m += dso_alloc_bytes(d->df_size + DSO_DEBUG_FRAME_PAD);
	if (d->dw_measured && d->dw_heap > 0)
		m += (uint64_t)d->dw_heap;
	else if (d->dw_tried && !d->dw_measured)
		m += DW_EST_MODULE + d->nsyms * sizeof(*d->syms) +
		     d->ncus_seen * DW_EST_UNIT;
	m += d->memfd_bytes + d->file_bytes;
	atomic_store_explicit(&d->mem, m, memory_order_relaxed);
}

uint64_t dso_mem_bytes(const struct dso *d)
{
	return atomic_load_explicit(&d->mem, memory_order_relaxed);
}
