/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * golabels.h - a goroutine's profiler labels (what runtime/pprof.Do and
 * SetGoroutineLabels put on it), read from outside with process_vm_readv
 * while the program runs.
 *
 * g.labels points at a runtime/pprof.labelMap, a map[string]string (Go
 * 1.9 to 1.20): the map's header (runtime.hmap) gives its count, its
 * bucket array (2^B buckets) and, while it grows, the old one; each
 * bucket has 8 tophash bytes, 8 keys and 8 values (string headers) and
 * a pointer to its overflow bucket. As Go's own iterator does while a
 * map grows, both arrays are read: an entry the growth moved is marked
 * in the old bucket (its tophash below minTopHash) and read in the new
 * one, so every entry is read once without its hash. A label map is
 * never written after it is made (WithLabels makes a new one), so a
 * read that does not give exactly count distinct keys is not a map being
 * written but memory that changed under us: -EINVAL, no labels.
 *
 * Everything is bounded: GOLABELS_MAX entries, 2^GOLABELS_MAX_B
 * buckets, GOLABELS_CHAIN overflow buckets per bucket, GOLABELS_STR
 * bytes per key or value.
 *
 * Layouts: the map's and bucket's fields from the program's DWARF where
 * it has them, else Go 1.19's (golabels_layout_119()).
 */
#ifndef PROFFS_GOLABELS_H
#define PROFFS_GOLABELS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GOLABELS_MAX	64
#define GOLABELS_MAX_B	4
#define GOLABELS_CHAIN	8
#define GOLABELS_STR	1024

/* Where runtime.hmap's and bucket<string,string>'s fields are. */
struct golabels_layout {
	unsigned h_count, h_flags, h_b, h_buckets, h_oldbuckets, h_size;
	unsigned b_keys, b_values, b_overflow, b_size;
};

struct golabel {
	char *key, *value;
};

/* A goroutine's labels, sorted by key. */
struct golabels {
	size_t n;
	struct golabel kv[];
};

/* Go 1.19's layout (from the DWARF of a program Debian's 1.19.8 built). */
void golabels_layout_119(struct golabels_layout *l);

struct dso;
/* The layout from the program's DWARF: 0, or -ENOENT (no DWARF, or not
 * these types). */
int golabels_layout_dwarf(struct dso *d, struct golabels_layout *l);

/*
 * The labels g.labels (the pointer value labels, in pid) points at, into
 * *out: NULL when labels is 0 (a goroutine without labels), else a
 * set of n >= 0 labels (an empty map: Go prints "{}"). Returns 0;
 * -EINVAL (inconsistent, or past the bounds: *out NULL), -EFAULT
 * (memory that cannot be read), -ENOMEM. Free *out with golabels_free().
 */
int golabels_read(pid_t pid, const struct golabels_layout *l,
		  uint64_t labels, struct golabels **out);
void golabels_free(struct golabels *s);

#endif
