// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dso_rows.c - values a user computes per address from an object alone
 * (the unwinder's CFI rows), kept with the object (dso.h: dso_row_get),
 * so that every later session and every process mapping the same file
 * finds them computed: the object's own lock (rows_lock, not the one
 * its DWARF loading holds), an open-addressing index of vaddrs beside a
 * flat array of values, at most DSO_ROWS_MAX of them, counted in the
 * object's bytes (dso_mem.c) and so under the cache's byte bound, and
 * let go with the object (dso_expire.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/unwind/dso.h"
#include "sampler/unwind/dso_i.h"

static _Atomic uint64_t rows_hits, rows_misses, rows_full;

bool dso_row_get(struct dso *d, uint64_t vaddr, void *val, size_t size)
{
	uint64_t v;
	bool found;

	pthread_mutex_lock(&d->rows_lock);
	found = d->rows_size == size && dso_map_get(&d->rows, vaddr, &v);
	if (found)
		memcpy(val, d->rows_vals + v * size, size);
	pthread_mutex_unlock(&d->rows_lock);
	atomic_fetch_add_explicit(found ? &rows_hits : &rows_misses, 1,
				  memory_order_relaxed);
	return found;
}

void dso_row_put(struct dso *d, uint64_t vaddr, const void *val, size_t size)
{
	uint8_t *nv;
	uint64_t v;

	if (!size || size > DSO_ROW_SIZE_MAX || vaddr == U64MAP_EMPTY)
		return;
	pthread_mutex_lock(&d->rows_lock);
	if (!d->rows_size)
		d->rows_size = size;
	if (d->rows_size != size || dso_map_get(&d->rows, vaddr, &v))
		goto out;
	if (d->rows_n == DSO_ROWS_MAX) {
		atomic_fetch_add_explicit(&rows_full, 1, memory_order_relaxed);
		goto out;
	}
	if (d->rows_n == d->rows_cap) {
		size_t cap = d->rows_cap ? d->rows_cap * 2 : 256;

		nv = realloc(d->rows_vals, cap * size);
		if (!nv)
			goto out;
		d->rows_vals = nv;
		d->rows_cap = cap;
	}
	if (dso_map_put(&d->rows, vaddr, d->rows_n))
		goto out;
	memcpy(d->rows_vals + d->rows_n * size, val, size);
	d->rows_n++;
	atomic_store_explicit(&d->rows_bytes,
			      dso_alloc_bytes(d->rows_cap * size) +
			      2 * dso_alloc_bytes((d->rows.mask + 1) *
						  sizeof(uint64_t)),
			      memory_order_relaxed);
out:
	pthread_mutex_unlock(&d->rows_lock);
}

size_t dso_rows_held(struct dso *d)
{
	size_t n;

	pthread_mutex_lock(&d->rows_lock);
	n = d->rows_n;
	pthread_mutex_unlock(&d->rows_lock);
	return n;
}

void dso_rows_counters(uint64_t *hits, uint64_t *misses, uint64_t *full)
{
	*hits = atomic_load_explicit(&rows_hits, memory_order_relaxed);
	*misses = atomic_load_explicit(&rows_misses, memory_order_relaxed);
	*full = atomic_load_explicit(&rows_full, memory_order_relaxed);
}

void dso_rows_free(struct dso *d)
{
	dso_map_free(&d->rows);
	free(d->rows_vals);
	pthread_mutex_destroy(&d->rows_lock);
}
