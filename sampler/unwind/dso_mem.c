// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dso_mem.c - what a cached dso holds, in bytes, for the cache's byte
 * bound (dso.h: DSO_CACHE_BYTES, dso_mem_bytes()).
 *
 * A dso holds three kinds of memory, counted so:
 *  - heap: its own tables (the object, names, segments, the sorted symbol
 *    table, the DWARF unit index, the memo of symbolized addresses and
 *    its frame pool, interned and demangled strings, the .debug_frame
 *    copy, the unwinder's rows kept per address: dso_rows.c), counted
 *    from their sizes as malloc() rounds them; and
 *    libdw's (Elf and Dwarf handles, its unit, abbrev and line tables),
 *    which cannot be seen one by one, so estimated from what drives it:
 *    DW_MODULE for the module, DW_UNIT for each DWARF unit (the unit
 *    index reads every unit's header and root), DW_LINE for each row of
 *    the line tables loaded (one per unit looked into). The constants
 *    are mallinfo2 deltas around loading on Debian 12's libc with
 *    libc6-dbg (tests/test-dso-mem.c prints both, and checks them).
 *    mallinfo2 itself cannot be used at run time: it walks every free
 *    chunk of every arena, with every arena locked, tens of ms in a
 *    fragmented heap.
 *  - inflated: the inflated debug file (dso_inflate.c), a memfd, its
 *    whole size (its pages are in memory whether or not mapped).
 *  - mapped: pages of mapped files, the sections read through (.eh_frame
 *    and its header, .gopclntab, the symbol and string tables, DWARF
 *    read where it lies in a file, uncompressed), whole: the kernel maps
 *    the pages around each one touched (fault-around), and they count in
 *    the daemon's RSS, though the kernel may take them back (page cache).
 *
 * Not counted: the unwinder's index of .debug_frame (cfi.c, objects
 * without .eh_frame only) and the cache's own entries (a key each).
 * docs/performance.md compares the sum with the daemon's RSS growth.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "sampler/unwind/cu_index.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/dso_i.h"

/* libdw's heap, from mallinfo2 deltas: libc with its debug file, 2063
 * units, 4.1 MB at load less our tables, 1.7 KB a unit; 166 units looked
 * into, 115075 rows, 5.8 MB, 50 bytes a row; without DWARF 11-16 KB a
 * module besides the symbol table. */
#define DW_MODULE	(16u << 10)
#define DW_UNIT		1700u
#define DW_LINE		50u

uint64_t dso_alloc_bytes(uint64_t n)
{
	uint64_t m = (n + 8 + 15) & ~15ull;

	return m < 32 ? 32 : m;
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
	return m->mask ? dso_alloc_bytes((m->mask + 1) * sizeof(*m->slots))
		       : 0;
}

static uint64_t str_bytes(const char *s)
{
	return s ? dso_alloc_bytes(strlen(s) + 1) : 0;
}

static uint64_t heap_bytes(const struct dso *d)
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
	if (d->syms_cap)
		m += dso_alloc_bytes(d->syms_cap * sizeof(*d->syms));
	if (d->sym_addrs)
		m += dso_alloc_bytes(d->nsyms * sizeof(*d->sym_addrs));
	if (atomic_load_explicit(&d->eh_top, memory_order_relaxed))
		m += dso_alloc_bytes((d->eh_size / 8 + DSO_EH_STRIDE - 1) /
				     DSO_EH_STRIDE * sizeof(int32_t));
	m += d->cuix_bytes;
	for (int k = 0; k < DSO_MEMO__COUNT; k++)
		if (d->memo[k])
			m += dso_alloc_bytes(d->memo_size[k]);
	if (d->mod)
		m += DW_MODULE + (uint64_t)cu_index_units(d->cus) * DW_UNIT +
		     d->dw_lines * DW_LINE;
	return m;
}

void dso_mem_update(struct dso *d)
{
	atomic_store_explicit(&d->mem, heap_bytes(d) + d->memfd_bytes +
			      d->file_bytes, memory_order_relaxed);
}

uint64_t dso_mem_bytes(const struct dso *d)
{
	/* the rows (dso_rows.c) grow under a lock of their own */
	return atomic_load_explicit(&d->mem, memory_order_relaxed) +
	       atomic_load_explicit(&d->rows_bytes, memory_order_relaxed);
}

void dso_mem_parts(struct dso *d, struct dso_mem_parts *p)
{
	pthread_mutex_lock(&d->lock);
	*p = (struct dso_mem_parts){ .heap = heap_bytes(d) +
					     atomic_load(&d->rows_bytes),
				     .inflated = d->memfd_bytes,
				     .mapped = d->file_bytes };
	pthread_mutex_unlock(&d->lock);
}
