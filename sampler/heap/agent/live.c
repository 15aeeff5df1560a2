// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * live.c - the set of sampled addresses not yet freed.
 *
 * free() must tell, for every pointer, whether it was sampled; nearly
 * none were (one allocation in thousands at the default rate), so the
 * common answer must cost one load: a 64 KiB counting filter indexed by
 * the address says "certainly not" for most pointers. Behind it,
 * open-addressing tables of the addresses themselves, lock-free: an
 * insert claims an empty or deleted slot with a compare-and-swap, a
 * removal turns the slot into a tombstone. An address is inserted after
 * malloc returned it and removed before free runs, so it is never in a
 * table twice and never raced by its own removal.
 *
 * The small table (64 Ki slots) holds what the default rate produces; a
 * large one (8 Mi slots, reserved but only touched as used) is mapped the
 * first time the small one is half full, as rate=1 needs. Probing stops
 * after PROBES slots, so inserting can fail: the record then says
 * UNTRACKED and no free will be reported for it.
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "sampler/heap/agent/agent_i.h"

#define SMALL_BITS 16
#define LARGE_BITS 23
#define PROBES 32
#define EMPTY 0
#define TOMB 1

struct table {
	_Atomic uintptr_t *slots;
	unsigned bits;
	_Atomic unsigned count;
};

_Atomic uint8_t live_filter[1u << LIVE_FILTER_BITS];
static struct table small = { .bits = SMALL_BITS };
static struct table large = { .bits = LARGE_BITS };
static _Atomic(_Atomic uintptr_t *) large_slots;

static uint64_t hash(uintptr_t p)
{
	return (uint64_t)(p >> 3) * 0x9e3779b97f4a7c15ull;
}

static void *map(size_t bytes)
{
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

int live_init(void)
{
	small.slots = map(sizeof(uintptr_t) << SMALL_BITS);
	return small.slots ? 0 : -1;
}

void live_reset(void)
{
	_Atomic uintptr_t *l = atomic_load(&large_slots);

	memset((void *)live_filter, 0, 1u << LIVE_FILTER_BITS);
	/* NULL's bucket: free(NULL) takes free's slow path, which counts no
	 * free for it (fast.c). Blocks there add to this 1, never below. */
	atomic_store(&live_filter[live_bucket(0)], 1);
	memset((void *)small.slots, 0, sizeof(uintptr_t) << SMALL_BITS);
	small.count = 0;
	if (l) {	/* give the pages back rather than zeroing them */
		madvise((void *)l, sizeof(uintptr_t) << LARGE_BITS,
			MADV_DONTNEED);
		large.count = 0;
	}
}

static void filter_add(uintptr_t p, int delta)
{
	_Atomic uint8_t *c = &live_filter[live_bucket(p)];
	uint8_t v = atomic_load_explicit(c, memory_order_relaxed);

	/* A saturated counter stays saturated: it may have lost count. */
	do {
		if (v == 255 || (delta < 0 && v == 0))
			return;
	} while (!atomic_compare_exchange_weak_explicit(
			 c, &v, (uint8_t)(v + delta), memory_order_relaxed,
			 memory_order_relaxed));
}

static bool table_insert(struct table *t, uintptr_t p, uint64_t h)
{
	size_t mask = ((size_t)1 << t->bits) - 1;
	size_t i = h >> (64 - t->bits);

	for (int k = 0; k < PROBES; k++, i = (i + 1) & mask) {
		uintptr_t v = atomic_load_explicit(&t->slots[i],
						   memory_order_relaxed);

		while (v == EMPTY || v == TOMB) {
			if (atomic_compare_exchange_weak_explicit(
				    &t->slots[i], &v, p, memory_order_release,
				    memory_order_relaxed)) {
				atomic_fetch_add_explicit(
					&t->count, 1, memory_order_relaxed);
				return true;
			}
		}
	}
	return false;
}

static bool table_remove(struct table *t, uintptr_t p, uint64_t h)
{
	size_t mask = ((size_t)1 << t->bits) - 1;
	size_t i = h >> (64 - t->bits);

	for (int k = 0; k < PROBES; k++, i = (i + 1) & mask) {
		uintptr_t v = atomic_load_explicit(&t->slots[i],
						   memory_order_acquire);

		if (v == EMPTY)
			return false;
		if (v == p && atomic_compare_exchange_strong_explicit(
				      &t->slots[i], &v, TOMB,
				      memory_order_relaxed,
				      memory_order_relaxed)) {
			atomic_fetch_sub_explicit(&t->count, 1,
						  memory_order_relaxed);
			return true;
		}
	}
	return false;
}

/* The large table, mapped by whoever needs it first. */
static bool large_table(void)
{
	_Atomic uintptr_t *l = atomic_load(&large_slots), *mine;

	if (!l) {
		mine = map(sizeof(uintptr_t) << LARGE_BITS);
		if (!mine)
			return false;
		if (!atomic_compare_exchange_strong(&large_slots, &l, mine))
			munmap((void *)mine, sizeof(uintptr_t) << LARGE_BITS);
		else
			l = mine;
	}
	large.slots = l;
	return true;
}

void live_prefetch(uintptr_t p)
{
	prefetch_for_write(&small.slots[hash(p) >> (64 - SMALL_BITS)]);
}

bool live_insert(uintptr_t p)
{
	uint64_t h = hash(p);
	bool ok = false;

	if (atomic_load_explicit(&small.count, memory_order_relaxed) <
	    (1u << SMALL_BITS) / 2)
		ok = table_insert(&small, p, h);
	if (!ok && large_table())
		ok = table_insert(&large, p, h);
	if (ok)
		filter_add(p, 1);
	return ok;
}

bool live_remove(uintptr_t p)
{
	uint64_t h = hash(p);
	bool ok = table_remove(&small, p, h);

	if (!ok && atomic_load_explicit(&large_slots, memory_order_acquire)) {
		large.slots = atomic_load(&large_slots);
		ok = table_remove(&large, p, h);
	}
	if (ok)
		filter_add(p, -1);
	return ok;
}
