/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kdefer.h - CPU samples with kernel frames, held back until the kernel's
 * symbol table has been read.
 *
 * Reading /proc/kallsyms costs a fresh daemon about 40 ms (35 of them the
 * kernel formatting 120,000 lines), more than the rest of a cold 5 s read
 * of a busy thread, and most profiles of user code have no kernel frame,
 * or a handful. So a session does not read it before its window: a sample
 * with kernel frames, taken while the table is unread, is kept here as it
 * is (its kernel addresses, its user locations, labels and values) and
 * added to the profile once the table is read: at the end of the window,
 * or as soon as the held samples pass KDEFER_MAX_BYTES (a target that
 * lives in the kernel: then the table is read during the window, once).
 *
 * Owned by one session, not thread-safe. Errors: -ENOMEM.
 */
#ifndef PROFFS_KDEFER_H
#define PROFFS_KDEFER_H

#include <stddef.h>
#include <stdint.h>

#include "sampler/model/profile.h"

#define KDEFER_MAX_BYTES (1u << 20)

struct kdefer;

/* One held sample, as kdefer_replay() hands it back. */
struct kdefer_sample {
	const uint64_t *kpcs;		/* kernel callchain, leaf first */
	uint32_t nk;
	const uint64_t *ulocs;		/* user locations, leaf first */
	uint32_t nu;
	const struct pf_label *labels;
	uint32_t nlabels;
	const int64_t *values;		/* 2: samples, cpu */
};

/* Hold a copy of s; *kd is created on the first call. 0 or -ENOMEM. */
int kdefer_add(struct kdefer **kd, const struct kdefer_sample *s);
/* Bytes held (0 for NULL). */
size_t kdefer_bytes(const struct kdefer *kd);
/*
 * fn on every held sample in the order they came, then nothing is held.
 * Stops at fn's first error and returns it (the rest is dropped).
 */
int kdefer_replay(struct kdefer *kd,
		  int (*fn)(void *arg, const struct kdefer_sample *s),
		  void *arg);
void kdefer_free(struct kdefer *kd);

#endif
