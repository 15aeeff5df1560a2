// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-golabels.c - golabels_read() (sampler/runtime/golabels.h) over
 * maps laid out here, in this process, as Go 1.19 lays a labelMap out
 * (read back with process_vm_readv of our own pid): nil and empty maps,
 * one bucket, an overflow chain, a map halfway through growing (some
 * old buckets moved to the new array, some not), and the inconsistent
 * ones (a count that the cells do not match, a key twice, a string too
 * long, a loop of overflow buckets, B out of bounds) read as -EINVAL.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sampler/runtime/golabels.h"

#define CELLS 8

/* Go 1.19's bmap for map[string]string, and hmap. */
struct gostr {
	const char *p;
	uint64_t len;
};

struct bucket {
	uint8_t tophash[CELLS];
	struct gostr keys[CELLS], values[CELLS];
	struct bucket *overflow;
};

struct hmap {
	int64_t count;
	uint8_t flags, b;
	uint16_t noverflow;
	uint32_t hash0;
	struct bucket *buckets, *oldbuckets;
	uint64_t nevacuate;
	void *extra;
};

_Static_assert(sizeof(struct bucket) == 272, "Go 1.19's bucket");
_Static_assert(sizeof(struct hmap) == 48, "Go 1.19's hmap");

static struct golabels_layout layout;

static void put(struct bucket *b, int i, uint8_t top, const char *k,
		const char *v)
{
	b->tophash[i] = top;
	b->keys[i] = (struct gostr){ k, strlen(k) };
	b->values[i] = (struct gostr){ v, strlen(v) };
}

/* Read the map behind labelmap (a *labelMap: &h). */
static int read_map(struct hmap **labelmap, struct golabels **out)
{
	return golabels_read(getpid(), &layout, (uint64_t)(uintptr_t)labelmap,
			     out);
}

/* s holds exactly the n pairs "k0"="v0", ... sorted by key. */
static void check_pairs(const struct golabels *s, const char *const *kv,
			size_t n, const char *what)
{
	CHECK(s && s->n == n, "%s: %zu labels, want %zu", what,
	      s ? s->n : 0, n);
	for (size_t i = 0; s && i < n && i < s->n; i++)
		CHECK(!strcmp(s->kv[i].key, kv[2 * i]) &&
		      !strcmp(s->kv[i].value, kv[2 * i + 1]),
		      "%s: %zu: %s=%s, want %s=%s", what, i, s->kv[i].key,
		      s->kv[i].value, kv[2 * i], kv[2 * i + 1]);
}

static void test_none_and_empty(void)
{
	struct hmap h = { 0 }, *nil = NULL, *hp = &h;
	struct golabels *s = (void *)1;

	CHECK(!golabels_read(getpid(), &layout, 0, &s) && !s,
	      "no labels: NULL");
	CHECK(!read_map(&nil, &s) && s && s->n == 0, "nil map: empty set");
	golabels_free(s);
	CHECK(!read_map(&hp, &s) && s && s->n == 0, "empty map: empty set");
	golabels_free(s);
}

static void test_one_bucket_and_overflow(void)
{
	static struct bucket b[1], over[2];
	struct hmap h = { .count = 3, .buckets = b }, *hp = &h;
	static const char *const want[] = { "shard", "7", "worker", "a",
					    "zone", "" };
	struct golabels *s;

	put(&b[0], 0, 0x80, "worker", "a");
	b[0].tophash[1] = 1;	/* emptyOne: a deleted cell */
	put(&b[0], 2, 0x22, "zone", "");
	b[0].overflow = &over[0];
	put(&over[0], 5, 0xfe, "shard", "7");
	CHECK(!read_map(&hp, &s), "one bucket with an overflow one");
	check_pairs(s, want, 3, "overflow");
	golabels_free(s);

	h.count = 4;		/* more than the cells hold */
	CHECK(read_map(&hp, &s) == -EINVAL && !s, "count too high");
	h.count = 2;		/* fewer */
	CHECK(read_map(&hp, &s) == -EINVAL && !s, "count too low");
	h.count = 3;
	over[0].overflow = &over[0];	/* a loop */
	CHECK(read_map(&hp, &s) == -EINVAL && !s, "overflow loop");
	over[0].overflow = NULL;
	put(&over[0], 6, 0x99, "worker", "b");	/* a key twice */
	h.count = 4;
	CHECK(read_map(&hp, &s) == -EINVAL && !s, "a key twice");
	over[0].tophash[6] = 0;
	h.count = 3;
	b[0].values[0].len = GOLABELS_STR + 1;
	CHECK(read_map(&hp, &s) == -EINVAL && !s, "a string too long");
	b[0].values[0].len = 1;
	h.b = GOLABELS_MAX_B + 1;
	CHECK(read_map(&hp, &s) == -EINVAL && !s, "B out of bounds");
}

/*
 * Growing from B=1 to B=2: old bucket 0 moved (its cells marked
 * evacuatedX/Y, their entries in new buckets 0 and 2), old bucket 1 not
 * yet (its entries there only, new buckets 1 and 3 empty), as
 * runtime/map.go's evacuate() leaves it.
 */
static void test_growing(void)
{
	static struct bucket old[2], nb[4];
	struct hmap h = { .count = 5, .b = 2, .buckets = nb,
			  .oldbuckets = old, .nevacuate = 1 }, *hp = &h;
	static const char *const want[] = { "a", "1", "b", "2", "c", "3",
					    "d", "4", "e", "5" };
	struct golabels *s;

	/* moved: tophash evacuatedX (2), evacuatedY (3); the cells kept
	 * their keys here (Go clears them; a stale copy must not count) */
	put(&old[0], 0, 2, "a", "stale");
	put(&old[0], 1, 3, "b", "stale");
	put(&old[0], 2, 4, "", "");	/* evacuatedEmpty */
	put(&nb[0], 0, 0x51, "a", "1");
	put(&nb[2], 0, 0x52, "b", "2");
	/* not moved yet */
	put(&old[1], 0, 0x61, "c", "3");
	put(&old[1], 3, 0x62, "d", "4");
	put(&nb[2], 1, 0x63, "e", "5");	/* put after the growth began */
	CHECK(!read_map(&hp, &s), "growing map");
	check_pairs(s, want, 5, "growing");
	golabels_free(s);

	/* the same size (sameSizeGrow): old and new arrays alike */
	memset(old, 0, sizeof(old));
	memset(nb, 0, sizeof(nb));
	h = (struct hmap){ .count = 2, .b = 1, .flags = 8, .buckets = nb,
			   .oldbuckets = old };
	put(&old[1], 0, 0x70, "x", "old");
	put(&nb[0], 0, 0x71, "y", "new");
	CHECK(!read_map(&hp, &s) && s && s->n == 2 &&
	      !strcmp(s->kv[0].value, "old") && !strcmp(s->kv[1].value, "new"),
	      "same-size growth");
	golabels_free(s);

	/* doubling from B=0 is not a thing: inconsistent */
	h = (struct hmap){ .count = 1, .b = 0, .buckets = nb,
			   .oldbuckets = old };
	CHECK(read_map(&hp, &s) == -EINVAL && !s, "growing to B=0");
}

int main(void)
{
	golabels_layout_119(&layout);
	test_none_and_empty();
	test_one_bucket_and_overflow();
	test_growing();
	if (!failures)
		printf("test-golabels: ok\n");
	return failures ? 1 : 0;
}
