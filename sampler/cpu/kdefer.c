// SPDX-License-Identifier: GPL-2.0-or-later
/* kdefer.c - held CPU samples in one growing arena of records. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/grow.h"
#include "sampler/cpu/kdefer.h"

/* A record: this header, then nk + nu uint64_t, then the labels. */
struct rec {
	uint32_t nk, nu, nlabels, size;	/* size: of the whole record */
	int64_t values[2];
};

struct kdefer {
	char *buf;
	size_t len, cap;
};

int kdefer_add(struct kdefer **kd, const struct kdefer_sample *s)
{
	size_t size = sizeof(struct rec) + (s->nk + s->nu) * sizeof(uint64_t) +
		      s->nlabels * sizeof(struct pf_label);
	struct kdefer *k = *kd;
	struct rec *r;
	uint64_t *v;

	size = (size + 7) & ~(size_t)7;
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k)
			return -ENOMEM;
		*kd = k;
	}
	if (grow_array((void **)&k->buf, &k->cap, k->len + size, 1, 4096))
		return -ENOMEM;
	r = (struct rec *)(k->buf + k->len);
	*r = (struct rec){ .nk = s->nk, .nu = s->nu, .nlabels = s->nlabels,
			   .size = (uint32_t)size,
			   .values = { s->values[0], s->values[1] } };
	v = (uint64_t *)(r + 1);
	memcpy(v, s->kpcs, s->nk * sizeof(*v));
	memcpy(v + s->nk, s->ulocs, s->nu * sizeof(*v));
	memcpy(v + s->nk + s->nu, s->labels,
	       s->nlabels * sizeof(struct pf_label));
	k->len += size;
	return 0;
}

size_t kdefer_bytes(const struct kdefer *kd)
{
	return kd ? kd->len : 0;
}

int kdefer_replay(struct kdefer *kd,
		  int (*fn)(void *arg, const struct kdefer_sample *s),
		  void *arg)
{
	int ret = 0;

	if (!kd)
		return 0;
	for (size_t off = 0; off < kd->len && !ret;) {
		const struct rec *r = (const struct rec *)(kd->buf + off);
		const uint64_t *v = (const uint64_t *)(r + 1);
		struct kdefer_sample s = {
			.kpcs = v, .nk = r->nk, .ulocs = v + r->nk,
			.nu = r->nu, .nlabels = r->nlabels,
			.labels = (const struct pf_label *)(v + r->nk + r->nu),
			.values = r->values,
		};

		ret = fn(arg, &s);
		off += r->size;
	}
	kd->len = 0;
	return ret;
}

void kdefer_free(struct kdefer *kd)
{
	if (!kd)
		return;
	free(kd->buf);
	free(kd);
}
