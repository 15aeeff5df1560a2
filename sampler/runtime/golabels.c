// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * golabels.c - a goroutine's pprof labels out of its labelMap, read
 * with process_vm_readv (golabels.h). Go's map code (runtime/map.go,
 * 1.19) is what the reads follow: hmap -> buckets (and oldbuckets while
 * it grows) -> each bucket's chain of overflow buckets.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/bytes.h"
#include "sampler/proc.h"
#include "sampler/runtime/golabels.h"
#include "sampler/unwind/dso.h"

#define BUCKET_CNT 8		/* bucketCnt */
#define MIN_TOPHASH 5		/* below it: empty, or moved by growth */
#define SAME_SIZE_GROW 8	/* hmap.flags: the growth keeps B */
#define STR_HDR 16		/* a string header: data, len */
#define BUCKET_MAX 4096		/* bytes of a bucket we would read */

void golabels_layout_119(struct golabels_layout *l)
{
	*l = (struct golabels_layout){
		.h_count = 0, .h_flags = 8, .h_b = 9, .h_buckets = 16,
		.h_oldbuckets = 24, .h_size = 48,
		.b_keys = 8, .b_values = 136, .b_overflow = 264,
		.b_size = 272,
	};
}

static bool layout_sane(const struct golabels_layout *l)
{
	return l->h_size <= 256 && l->h_count + 8 <= l->h_size &&
	       l->h_flags < l->h_size && l->h_b < l->h_size &&
	       l->h_buckets + 8 <= l->h_size &&
	       l->h_oldbuckets + 8 <= l->h_size &&
	       l->b_keys >= BUCKET_CNT &&
	       l->b_keys + BUCKET_CNT * STR_HDR <= l->b_size &&
	       l->b_values + BUCKET_CNT * STR_HDR <= l->b_size &&
	       l->b_overflow + 8 <= l->b_size && l->b_size <= BUCKET_MAX;
}

int golabels_layout_dwarf(struct dso *d, struct golabels_layout *l)
{
	static const char *const hm[] = {
		"count", "flags", "B", "buckets", "oldbuckets", "extra",
	};
	static const char *const bm[] = {
		"tophash", "keys", "values", "overflow",
	};
	long ho[6], bo[4];

	/* the bucket type the compiler made for map[string]string */
	if (dso_struct_offsets(d, "runtime", "runtime.hmap", hm, ho, 6) ||
	    dso_struct_offsets(d, "runtime/pprof", "bucket<string,string>",
			       bm, bo, 4))
		return -ENOENT;
	for (int i = 0; i < 6; i++)
		if (ho[i] < 0 || ho[i] > 248)
			return -ENOENT;
	for (int i = 0; i < 4; i++)
		if (bo[i] < 0 || bo[i] > BUCKET_MAX - 8)
			return -ENOENT;
	if (bo[0])
		return -ENOENT;	/* tophash first, as map.go's bmap */
	*l = (struct golabels_layout){
		.h_count = (unsigned)ho[0], .h_flags = (unsigned)ho[1],
		.h_b = (unsigned)ho[2], .h_buckets = (unsigned)ho[3],
		.h_oldbuckets = (unsigned)ho[4],
		/* extra is hmap's last field */
		.h_size = (unsigned)ho[5] + 8,
		.b_keys = (unsigned)bo[1], .b_values = (unsigned)bo[2],
		/* overflow is the bucket's last field */
		.b_overflow = (unsigned)bo[3], .b_size = (unsigned)bo[3] + 8,
	};
	return layout_sane(l) ? 0 : -ENOENT;
}

void golabels_free(struct golabels *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->kv[i].key);
		free(s->kv[i].value);
	}
	free(s);
}

struct rd {
	pid_t pid;
	const struct golabels_layout *l;
	struct golabels *s;
	size_t count;		/* hmap.count */
	unsigned buckets;	/* read, overflow ones included */
};

/* The string whose header is at hdr (in our copy) into *out. */
static int read_str(struct rd *r, const uint8_t *hdr, char **out)
{
	uint64_t p = ld_u64(hdr, 0), len = ld_u64(hdr, 8);

	if (len > GOLABELS_STR || (len && !p))
		return -EINVAL;
	*out = malloc(len + 1);
	if (!*out)
		return -ENOMEM;
	if (len && proc_mem_read(r->pid, p, *out, len))
		return -EFAULT;
	(*out)[len] = '\0';
	return 0;
}

/* The live cells of one bucket (a copy, b_size bytes). */
static int read_cells(struct rd *r, const uint8_t *b)
{
	const struct golabels_layout *l = r->l;
	struct golabel *kv;
	int ret;

	for (unsigned i = 0; i < BUCKET_CNT; i++) {
		if (b[i] < MIN_TOPHASH)
			continue;	/* empty, or moved to the new array */
		if (r->s->n >= r->count)
			return -EINVAL;	/* more entries than the map has */
		kv = &r->s->kv[r->s->n++];
		ret = read_str(r, b + l->b_keys + STR_HDR * i, &kv->key);
		if (!ret)
			ret = read_str(r, b + l->b_values + STR_HDR * i,
				       &kv->value);
		if (ret)
			return ret;
	}
	return 0;
}

/* The nb buckets of the array at addr, each with its overflow chain. */
static int read_array(struct rd *r, uint64_t addr, unsigned nb)
{
	const struct golabels_layout *l = r->l;
	uint8_t *arr, *b;
	uint64_t next;
	int ret;

	if (!addr || addr & 7)
		return -EINVAL;
	arr = malloc((size_t)nb * l->b_size + l->b_size);
	if (!arr)
		return -ENOMEM;
	ret = proc_mem_read(r->pid, addr, arr, (size_t)nb * l->b_size);
	for (unsigned i = 0; i < nb && !ret; i++) {
		b = arr + (size_t)i * l->b_size;
		for (unsigned k = 0; !ret; k++) {
			ret = read_cells(r, b);
			next = ld_u64(b, l->b_overflow);
			if (ret || !next)
				break;
			/* the overflow bucket, read into the spare one */
			b = arr + (size_t)nb * l->b_size;
			if (k >= GOLABELS_CHAIN || next & 7 ||
			    ++r->buckets > (BUCKET_CNT << GOLABELS_MAX_B))
				ret = -EINVAL;
			else
				ret = proc_mem_read(r->pid, next, b, l->b_size);
		}
	}
	free(arr);
	return ret;
}

static int cmp_key(const void *x, const void *y)
{
	return strcmp(((const struct golabel *)x)->key,
		      ((const struct golabel *)y)->key);
}

/* What the map's header says; its arrays read into r->s. */
static int read_map(struct rd *r, uint64_t h)
{
	const struct golabels_layout *l = r->l;
	uint8_t hdr[256];
	uint64_t buckets, old;
	int64_t count;
	unsigned b, nold;
	int ret;

	if (h & 7)
		return -EINVAL;
	if (proc_mem_read(r->pid, h, hdr, l->h_size))
		return -EFAULT;
	count = (int64_t)ld_u64(hdr, l->h_count);
	b = hdr[l->h_b];
	buckets = ld_u64(hdr, l->h_buckets);
	old = ld_u64(hdr, l->h_oldbuckets);
	if (count < 0 || count > GOLABELS_MAX || b > GOLABELS_MAX_B ||
	    (count && !buckets))
		return -EINVAL;
	r->count = (size_t)count;
	if (!count)
		return 0;
	if (old) {
		/* growing: the old array, half the size or the same */
		if (!(hdr[l->h_flags] & SAME_SIZE_GROW) && !b)
			return -EINVAL;
		nold = hdr[l->h_flags] & SAME_SIZE_GROW ? 1u << b
							: 1u << (b - 1);
		ret = read_array(r, old, nold);
		if (ret)
			return ret;
	}
	ret = read_array(r, buckets, 1u << b);
	if (ret)
		return ret;
	return r->s->n == r->count ? 0 : -EINVAL;
}

int golabels_read(pid_t pid, const struct golabels_layout *l,
		  uint64_t labels, struct golabels **out)
{
	struct rd r = { .pid = pid, .l = l };
	uint64_t h;
	int ret;

	*out = NULL;
	if (!labels)
		return 0;
	if (labels & 7 || !layout_sane(l))
		return -EINVAL;
	/* g.labels is a *labelMap: a pointer to the map's header */
	if (proc_mem_read(pid, labels, &h, sizeof(h)))
		return -EFAULT;
	r.s = calloc(1, sizeof(*r.s) + GOLABELS_MAX * sizeof(r.s->kv[0]));
	if (!r.s)
		return -ENOMEM;
	ret = h ? read_map(&r, h) : 0;
	if (!ret && r.s->n > 1) {
		qsort(r.s->kv, r.s->n, sizeof(r.s->kv[0]), cmp_key);
		for (size_t i = 1; i < r.s->n && !ret; i++)
			if (!strcmp(r.s->kv[i - 1].key, r.s->kv[i].key))
				ret = -EINVAL;	/* a map has each once */
	}
	if (ret) {
		/* a cell half read holds a key and a NULL value */
		golabels_free(r.s);
		return ret;
	}
	*out = r.s;
	return 0;
}
