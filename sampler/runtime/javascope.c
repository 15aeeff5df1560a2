// SPDX-License-Identifier: GPL-2.0-or-later
/* javascope.c - the inlined Java frames of a compiled method's pc. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/bytes.h"
#include "sampler/log.h"
#include "sampler/proc.h"
#include "sampler/runtime/javamethod.h"
#include "sampler/runtime/javascope.h"

#define NM_SLOTS 64			/* nmethods kept */
#define NM_COPY_MAX (256u << 10)	/* of one nmethod's sections */
#define NM_SIZE_MAX (64u << 20)		/* of one nmethod */
#define HEADER_WINDOW 4096		/* looked through for the header */
#define PCS_MAX (1u << 20)

/* One nmethod's metadata, scopes data and PcDescs, copied. */
struct nm {
	uint64_t start, size;	/* its code, as the perf map has it; 0 =
				 * free */
	int err;		/* 0, or why it cannot be read */
	uint64_t method;	/* its own Method */
	uint8_t *data;		/* [metadata_offset, dependencies_offset) */
	size_t md_n;		/* metadata slots at data */
	size_t sd_off, sd_len;	/* scopes data in data */
	size_t pcs_off, pcs_n;	/* PcDescs in data */
};

struct javascope {
	struct javamethod *m;
	pid_t pid;
	bool have_layout;
	int layout_err;
	struct javamethod_nm l;
	struct nm slots[NM_SLOTS];
	unsigned next;		/* the slot to reuse */
	unsigned long failures;
	bool logged;
};

int javascope_new(struct javamethod *m, pid_t pid, struct javascope **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->m = m;
	(*out)->pid = pid;
	return 0;
}

void javascope_free(struct javascope *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < NM_SLOTS; i++)
		free(s->slots[i].data);
	free(s);
}

static bool layout_ok(const struct javamethod_nm *l);

void javascope_set_layout(struct javascope *s, const struct javamethod_nm *l)
{
	s->l = *l;
	s->have_layout = true;
	s->layout_err = layout_ok(l) ? 0 : -ENOENT;
}

unsigned long javascope_failures(const struct javascope *s)
{
	return s ? s->failures : 0;
}

/* Every field within the header or PcDesc it is read from. */
static bool layout_ok(const struct javamethod_nm *l)
{
	const uint64_t in_header[] = {
		l->size, l->header_size, l->code_begin, l->code_end,
		l->method, l->scopes_data_begin, l->metadata_offset,
		l->scopes_pcs_offset, l->dependencies_offset,
	};

	if (l->nm_size < 16 || l->nm_size > HEADER_WINDOW / 2 ||
	    l->nm_size % 8 || l->pc_size < 8 || l->pc_size > 64 ||
	    l->pc_offset > l->pc_size - 4 || l->scope_offset > l->pc_size - 4)
		return false;
	for (size_t i = 0; i < sizeof(in_header) / sizeof(in_header[0]); i++)
		if (in_header[i] > l->nm_size - 8)
			return false;
	return true;
}

/*
 * The header of the nmethod whose code is [start, start + size) into
 * hdr (l->nm_size bytes), its address *h: the nearest place before
 * start that names that code as its own.
 */
static int find_header(struct javascope *s, uint64_t start, uint64_t size,
		       uint8_t *hdr, uint64_t *h)
{
	const struct javamethod_nm *l = &s->l;
	uint8_t win[HEADER_WINDOW];
	uint64_t w = sizeof(win), k;

	/* the code cache's first blob may be nearer its start than that */
	while (w >= l->nm_size && w > 64 &&
	       proc_mem_read(s->pid, start - w, win + sizeof(win) - w, w))
		w /= 2;
	if (w < l->nm_size || w <= 64)
		return -EFAULT;
	for (k = sizeof(win) - l->nm_size; k + w >= sizeof(win); k -= 8) {
		const uint8_t *p = win + k;

		if (ld_u64(p, l->code_begin) == start &&
		    ld_u64(p, l->code_end) == start + size &&
		    (uint64_t)ld_i32(p, l->header_size) == l->nm_size) {
			memcpy(hdr, p, l->nm_size);
			*h = start - (sizeof(win) - k);
			return 0;
		}
		if (k < 8)
			break;
	}
	return -EINVAL;
}

/* Reads and checks the nmethod of [start, start + size) into n. */
static int nm_read(struct javascope *s, struct nm *n, uint64_t start,
		   uint64_t size)
{
	const struct javamethod_nm *l = &s->l;
	uint8_t hdr[HEADER_WINDOW / 2];
	int64_t cb_size, md, sd, pcs, deps;
	uint64_t h;
	int ret;

	ret = find_header(s, start, size, hdr, &h);
	if (ret)
		return ret;
	cb_size = ld_i32(hdr, l->size);
	md = ld_i32(hdr, l->metadata_offset);
	pcs = ld_i32(hdr, l->scopes_pcs_offset);
	deps = ld_i32(hdr, l->dependencies_offset);
	sd = (int64_t)(ld_u64(hdr, l->scopes_data_begin) - h);
	n->method = ld_u64(hdr, l->method);
	if (cb_size <= 0 || cb_size > NM_SIZE_MAX ||
	    start + size > h + (uint64_t)cb_size ||
	    md < (int64_t)l->nm_size || sd < md || pcs < sd || deps < pcs ||
	    deps > cb_size || (sd - md) % 8 || (deps - pcs) % l->pc_size ||
	    !n->method || n->method & 7)
		return -EINVAL;
	if (deps - md > NM_COPY_MAX || (deps - pcs) / l->pc_size > PCS_MAX)
		return -E2BIG;
	n->data = malloc(deps - md ? deps - md : 1);
	if (!n->data)
		return -ENOMEM;
	if (proc_mem_read(s->pid, h + md, n->data, deps - md))
		return -EFAULT;
	n->md_n = (sd - md) / 8;
	n->sd_off = sd - md;
	n->sd_len = pcs - sd;
	n->pcs_off = pcs - md;
	n->pcs_n = (deps - pcs) / l->pc_size;
	return 0;
}

/* The nmethod of [start, start + size), read now or before. */
static struct nm *nm_get(struct javascope *s, uint64_t start, uint64_t size)
{
	struct nm *n;

	for (unsigned i = 0; i < NM_SLOTS; i++)
		if (s->slots[i].start == start && s->slots[i].size == size)
			return &s->slots[i];
	n = &s->slots[s->next++ % NM_SLOTS];
	free(n->data);
	memset(n, 0, sizeof(*n));
	n->err = nm_read(s, n, start, size);
	if (n->err) {
		free(n->data);
		n->data = NULL;
	}
	/* an nmethod that could not be read is not tried again, unless
	 * memory ran out */
	if (n->err != -ENOMEM) {
		n->start = start;
		n->size = size;
	}
	return n;
}

/* The index of the first PcDesc at or after pc offset off. */
static size_t pc_desc(const struct javascope *s, const struct nm *n,
		      int64_t off)
{
	const uint8_t *pcs = n->data + n->pcs_off;
	size_t lo = 0, hi = n->pcs_n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ld_i32(pcs, mid * s->l.pc_size + s->l.pc_offset) < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The scope chain at decode offset d, innermost first. */
static int decode(const struct nm *n, uint32_t d, struct javascope_frame *f,
		  int max, int *cnt)
{
	const uint8_t *sd = n->data + n->sd_off;
	uint32_t sender, midx, bci;
	uint64_t method;

	*cnt = 0;
	/* 0 is no scope (DebugInformationRecorder::serialized_null) */
	while (d) {
		size_t i = d;

		if (d >= n->sd_len || !javamethod_u5(sd, n->sd_len, &i,
						     &sender) ||
		    !javamethod_u5(sd, n->sd_len, &i, &midx) ||
		    !javamethod_u5(sd, n->sd_len, &i, &bci))
			return -EINVAL;
		/* metadata indexes are biased by one: 0 is NULL */
		if (!midx || midx > n->md_n)
			return -EINVAL;
		memcpy(&method, n->data + 8 * (size_t)(midx - 1),
		       sizeof(method));
		if (!method || method & 7)
			return -EINVAL;
		if (*cnt == max)
			return -E2BIG;
		/* a bci is written plus one (InvocationEntryBci is -1) */
		f[(*cnt)++] = (struct javascope_frame){
			method, bci > 0 && bci <= 65536 ? (int)bci - 1 : -1 };
		/* a sender is written before the scopes it calls */
		if (sender >= d)
			return sender ? -EINVAL : 0;
		d = sender;
	}
	return 0;
}

static int fail(struct javascope *s, uint64_t start, int err,
		const char *why)
{
	if (err == -EINVAL || err == -E2BIG) {
		s->failures++;
		if (!s->logged)
			pr_info("java: %d: compiled method at 0x%llx: %s: "
				"%s; named without its inlined frames (logged "
				"once)", (int)s->pid,
				(unsigned long long)start, why,
				strerror(-err));
		s->logged = true;
	}
	return err;
}

int javascope_find(struct javascope *s, uint64_t pc, uint64_t start,
		   uint64_t size, struct javascope_frame *f, int max, int *n)
{
	struct nm *nm;
	size_t i;
	int ret;

	*n = 0;
	if (!s->have_layout) {
		s->have_layout = true;
		s->layout_err = javamethod_layout(s->m, &s->l);
		if (!s->layout_err && !layout_ok(&s->l)) {
			pr_info("java: %d: an nmethod layout out of bounds: "
				"no inlined frames", (int)s->pid);
			s->layout_err = -ENOENT;
		}
	}
	if (s->layout_err)
		return s->layout_err;
	if (pc < start || pc - start >= size || size > NM_SIZE_MAX || max < 1)
		return -EINVAL;
	nm = nm_get(s, start, size);
	if (nm->err)
		return fail(s, start, nm->err, "no nmethod");
	i = pc_desc(s, nm, (int64_t)(pc - start));
	if (i < nm->pcs_n) {
		const uint8_t *p = nm->data + nm->pcs_off + i * s->l.pc_size;
		int32_t d = ld_i32(p, s->l.scope_offset);

		if (d < 0)
			return fail(s, start, -EINVAL, "bad PcDesc");
		ret = decode(nm, (uint32_t)d, f, max, n);
		if (ret) {
			*n = 0;
			return fail(s, start, ret, "bad scopes");
		}
	}
	if (!*n) {
		/* no scope: the method, at no known bci */
		f[0] = (struct javascope_frame){ nm->method, -1 };
		*n = 1;
	}
	if (f[*n - 1].method != nm->method) {
		*n = 0;
		return fail(s, start, -EINVAL, "scopes of another method");
	}
	return 0;
}
