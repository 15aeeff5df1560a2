// SPDX-License-Identifier: GPL-2.0-or-later
/* kframes.c - "[k] name" locations, one per kernel function. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/unwind/kallsyms.h"
#include "sampler/unwind/kframes.h"
#include "sampler/model/profile.h"

#define NAME_MAX_LEN 200
#define PREFIX "[k] "
#define MAPPING "[kernel.kallsyms]"
#define KERNEL_START 0xffff800000000000ull	/* x86-64's kernel half */

struct pc_slot {
	uint64_t key;		/* lookup address; 0 = empty */
	uint64_t loc;
};

struct kframes {
	struct profile *p;
	struct kallsyms *ksyms;
	int held;		/* ksyms held: 0 not yet asked, 1, -1 no */
	struct pc_slot *pcs;	/* open addressing, power of two */
	size_t pcs_cap, pcs_n;
	uint64_t *by_fn;	/* function id -> location id, 0 = none */
	size_t by_fn_cap;
	uint64_t mapping_id;	/* 0 until the first frame */
};

int kframes_new(struct profile *p, struct kallsyms *ksyms,
		struct kframes **out)
{
	struct kframes *kf = calloc(1, sizeof(*kf));

	if (!kf)
		return -ENOMEM;
	kf->p = p;
	kf->ksyms = ksyms;
	kf->pcs_cap = 256;
	kf->pcs = calloc(kf->pcs_cap, sizeof(*kf->pcs));
	if (!kf->pcs) {
		free(kf);
		return -ENOMEM;
	}
	*out = kf;
	return 0;
}

void kframes_free(struct kframes *kf)
{
	if (!kf)
		return;
	if (kf->held > 0)
		kallsyms_put(kf->ksyms);
	free(kf->pcs);
	free(kf->by_fn);
	free(kf);
}

static int add_mapping(struct kframes *kf)
{
	struct pf_mapping m = {
		.start = KERNEL_START, .limit = UINT64_MAX,
		.has_functions = true,
	};

	if (kf->mapping_id)
		return 0;
	m.filename = profile_intern(kf->p, MAPPING);
	if (m.filename < 0)
		return -ENOMEM;
	return profile_add_mapping(kf->p, &m, &kf->mapping_id);
}

/* The location of name, at addr (the function's start, or 0). */
static int named_at(struct kframes *kf, const char *name, size_t len,
		    uint64_t addr, uint64_t *loc)
{
	char shown[sizeof(PREFIX) + NAME_MAX_LEN], sys[NAME_MAX_LEN + 1];
	struct pf_line line = { 0 };
	uint64_t fid;
	int ret;

	if (len > NAME_MAX_LEN)
		len = NAME_MAX_LEN;
	memcpy(sys, name, len);
	sys[len] = '\0';
	snprintf(shown, sizeof(shown), PREFIX "%s", sys);
	ret = profile_add_function(kf->p, shown, sys, NULL, 0, &fid);
	if (ret)
		return ret;
	if (fid < kf->by_fn_cap && kf->by_fn[fid]) {
		*loc = kf->by_fn[fid];
		return 0;
	}
	if (fid >= kf->by_fn_cap) {
		size_t ncap = kf->by_fn_cap ? kf->by_fn_cap : 64;
		uint64_t *v;

		while (ncap <= fid)
			ncap *= 2;
		v = realloc(kf->by_fn, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memset(v + kf->by_fn_cap, 0,
		       (ncap - kf->by_fn_cap) * sizeof(*v));
		kf->by_fn = v;
		kf->by_fn_cap = ncap;
	}
	line.function_id = fid;
	ret = add_mapping(kf);
	if (!ret)
		ret = profile_add_location(kf->p, kf->mapping_id, addr, &line,
					   1, loc);
	if (!ret)
		kf->by_fn[fid] = *loc;
	return ret;
}

/* The table, held from the first frame to name to kframes_free(); NULL
 * when there is none or it cannot be held. */
static const struct kallsyms *table(struct kframes *kf)
{
	if (kf->ksyms && !kf->held)
		kf->held = kallsyms_hold(kf->ksyms) ? 1 : -1;
	return kf->held > 0 ? kf->ksyms : NULL;
}

/* A function the kernel named: at its address where the table has it
 * (Go's debug=1 dumps print every frame's address), else 0. */
static int named(struct kframes *kf, const char *name, size_t len,
		 uint64_t *loc)
{
	const struct kallsyms *k = table(kf);
	uint64_t addr = 0;

	if (k && kallsyms_addr(k, name, len, &addr))
		addr = 0;
	return named_at(kf, name, len, addr, loc);
}

int kframes_named(struct kframes *kf, const char *name, size_t len,
		  uint64_t *loc)
{
	return named(kf, name, len, loc);
}

static inline size_t hash_key(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x;
}

static struct pc_slot *slot_of(struct pc_slot *v, size_t cap, uint64_t key)
{
	for (size_t i = hash_key(key) & (cap - 1);; i = (i + 1) & (cap - 1))
		if (v[i].key == key || !v[i].key)
			return &v[i];
}

/* Room for one more pc: the table is kept at most half full. */
static int pcs_room(struct kframes *kf)
{
	size_t ncap = kf->pcs_cap * 2;
	struct pc_slot *v;

	if ((kf->pcs_n + 1) * 2 <= kf->pcs_cap)
		return 0;
	v = calloc(ncap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < kf->pcs_cap; i++)
		if (kf->pcs[i].key)
			*slot_of(v, ncap, kf->pcs[i].key) = kf->pcs[i];
	free(kf->pcs);
	kf->pcs = v;
	kf->pcs_cap = ncap;
	return 0;
}

int kframes_pc(struct kframes *kf, uint64_t pc, bool leaf, uint64_t *loc)
{
	uint64_t key = leaf ? pc : pc - 1, start = 0;
	struct pc_slot *s;
	const struct kallsyms *k;
	const char *name = NULL;
	char hex[24], buf[KALLSYMS_NAME_MAX];
	int ret;

	if (!key)
		key = 1;	/* 0 marks an empty slot */
	s = slot_of(kf->pcs, kf->pcs_cap, key);
	if (s->key) {
		*loc = s->loc;
		return 0;
	}
	k = table(kf);
	if (k)
		name = kallsyms_name(k, key, buf, sizeof(buf), &start);
	if (!name) {
		snprintf(hex, sizeof(hex), "0x%" PRIx64, key);
		name = hex;
		start = key;
	}
	ret = pcs_room(kf);
	if (!ret)
		ret = named_at(kf, name, strlen(name), start, loc);
	if (ret)
		return ret;
	s = slot_of(kf->pcs, kf->pcs_cap, key);
	s->key = key;
	s->loc = *loc;
	kf->pcs_n++;
	return 0;
}

int kframes_proc_stack(struct kframes *kf, const char *text, uint64_t *locs,
		       int max, int *n)
{
	const char *line = text;
	int ret;

	*n = 0;
	while (*line && *n < max) {
		const char *eol = strchrnul(line, '\n');
		const char *name = memchr(line, ']', eol - line);

		/* "[<0>] name+0x1/0x2": the name runs to '+' or the end */
		if (name && name + 2 <= eol && name[1] == ' ') {
			size_t len;

			name += 2;
			len = strcspn(name, "+ \n");
			if (name + len > eol)
				len = eol - name;
			if (len) {
				ret = named(kf, name, len, &locs[(*n)++]);
				if (ret)
					return ret;
			}
		}
		line = *eol ? eol + 1 : eol;
	}
	return 0;
}
