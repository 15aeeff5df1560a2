// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * livestack.c - stack words beyond a sample's copy, from the live thread,
 * and the call-site check of the frames unwound with them.
 *
 * The check reads code, never the stack: the bytes before a return
 * address must be a call (e8 rel32, or ff /2 with any ModRM form), and an
 * e8 must land on the first byte of the callee's function, as its FDE
 * gives it, or on a PLT stub (endbr64, bnd, jmp *GOT(%rip)) whose GOT
 * slot, read from the process, holds that address. An indirect call's
 * target was in a register or in memory that may have changed since: it
 * is taken as it is.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/unwind/cfi.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/gopclntab.h"
#include "sampler/unwind/livestack.h"
#include "sampler/unwind/maps.h"
#include "sampler/proc.h"

#define PAGE 4096ull
/* Read this much past the word wanted: the callers above a big frame
 * are usually small, and one read then serves them all. */
#define READ_AHEAD (8 * 1024)
#define VERDICTS 512		/* power of two */
#define WINDOW 2048		/* livestack_word()'s read */

struct verdict {
	uint64_t callee_pc, ra;	/* 0, 0: empty */
	bool ok;
};

struct livestack {
	pid_t pid;
	struct proc_maps *maps;
	uint8_t *buf;		/* LIVESTACK_MAX: the words past the copy;
				 * made at the first deep sample (a
				 * whole-host profile has one per process) */
	size_t len;		/* valid bytes of buf */
	bool extended;		/* this sample called livestack_extend() */
	bool short_read;	/* this sample's read came short */
	unsigned maps_gen;	/* of the verdicts */
	struct verdict *verdicts;	/* VERDICTS, made with buf */
	uint8_t win[WINDOW];	/* words of another stack */
	uint64_t win_at;	/* address of win[0] */
	size_t win_len;		/* 0: none this sample */
	uint64_t reads, refused;
};

int livestack_new(pid_t pid, struct proc_maps *maps, struct livestack **out)
{
	struct livestack *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return -ENOMEM;
	ls->pid = pid;
	ls->maps = maps;
	ls->maps_gen = maps_generation(maps);
	*out = ls;
	return 0;
}

void livestack_free(struct livestack *ls)
{
	if (!ls)
		return;
	free(ls->buf);
	free(ls->verdicts);
	free(ls);
}

void livestack_begin(struct livestack *ls)
{
	ls->len = 0;
	ls->extended = false;
	ls->short_read = false;
	ls->win_len = 0;
}

bool livestack_word(struct livestack *ls, uint64_t addr, uint64_t *v)
{
	if (addr & 7)
		return false;
	/* the frames read here are checked: livestack_check() needs these */
	if (!ls->verdicts &&
	    !(ls->verdicts = calloc(VERDICTS, sizeof(*ls->verdicts))))
		return false;
	if (addr < ls->win_at || addr - ls->win_at + 8 > ls->win_len) {
		ls->win_at = addr;
		ls->win_len = proc_mem_copy(ls->pid, addr, ls->win, WINDOW);
		if (ls->win_len < 8)
			return false;
	}
	memcpy(v, ls->win + (addr - ls->win_at), sizeof(*v));
	return true;
}

/* Up to max bytes of the stack at addr, clipped to the mapping that
 * holds it (when the maps know it): the bytes copied. */
static size_t copy_stack(const struct livestack *ls, uint64_t addr,
			 void *buf, size_t max)
{
	const struct map_entry *e = maps_find(ls->maps, addr);

	if (e && e->end < addr + max)
		max = e->end - addr;
	return proc_mem_copy(ls->pid, addr, buf, max);
}

bool livestack_extend(struct livestack *ls, uint64_t sp, size_t copy_len,
		      size_t need, const uint8_t **live, size_t *live_len)
{
	uint64_t end;
	size_t want, got;

	if (copy_len > LIVESTACK_MAX || need > LIVESTACK_MAX)
		return false;
	if (!ls->buf) {
		ls->buf = malloc(LIVESTACK_MAX);
		if (!ls->verdicts)
			ls->verdicts = calloc(VERDICTS,
					      sizeof(*ls->verdicts));
		if (!ls->buf || !ls->verdicts) {
			free(ls->buf);
			free(ls->verdicts);
			ls->buf = NULL;
			ls->verdicts = NULL;
			return false;
		}
	}
	if (!ls->extended) {
		ls->extended = true;
		ls->reads++;
	}
	/* the bytes held, from sp: copy_len + ls->len */
	if (need > copy_len + ls->len && !ls->short_read) {
		end = (sp + need + READ_AHEAD + PAGE - 1) & ~(PAGE - 1);
		want = end - sp < LIVESTACK_MAX ? end - sp : LIVESTACK_MAX;
		want -= copy_len + ls->len;
		got = copy_stack(ls, sp + copy_len + ls->len,
				 ls->buf + ls->len, want);
		ls->short_read = got < want;
		ls->len += got;
	}
	*live = ls->buf;
	*live_len = ls->len;
	return need <= copy_len + ls->len;
}

/* ---- the call-site check ---- */

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Bytes [addr, addr + len) of the code mapped at addr, from its file. */
static bool read_code(struct proc_maps *maps, uint64_t addr, void *buf,
		      size_t len)
{
	struct map_entry *e = maps_find(maps, addr);

	return e && e->exec && e->dso && addr + len <= e->end &&
	       !dso_read(e->dso, addr - e->bias, buf, len);
}

/*
 * The length of the call r/m64 (ff /2) whose ff byte is p[0], p[1] its
 * ModRM and p[2] its SIB byte when there is one (have: bytes known from
 * p on); 0 when p[1] is not a /2 ModRM.
 */
static unsigned call_rm_len(const uint8_t *p, unsigned have)
{
	unsigned mod = p[1] >> 6, rm = p[1] & 7, len = 2;

	if (((p[1] >> 3) & 7) != 2)
		return 0;
	if (mod == 3)
		return len;
	if (rm == 4) {
		if (have < 3)
			return 0;
		len++;
		if (mod == 0 && (p[2] & 7) == 5)
			len += 4;
	} else if (mod == 0 && rm == 5) {
		len += 4;	/* rip-relative */
	}
	return len + (mod == 1 ? 1 : mod == 2 ? 4 : 0);
}

/* The start of the function holding pc, as its FDE (or Go's table)
 * says. */
static bool function_start(struct proc_maps *maps, uint64_t pc,
			   uint64_t *start)
{
	struct map_entry *e = maps_find(maps, pc);
	struct gopcln_func f;
	uint64_t s, end;

	if (!e || !e->dso)
		return false;
	if (cfi_fde_range(e->dso, pc - e->bias, &s, &end)) {
		/* Go code: its own table (no CFI when built -s -w) */
		if (!dso_gopcln(e->dso) ||
		    gopcln_func(dso_gopcln(e->dso), pc - e->bias, &f))
			return false;
		s = f.entry;
	}
	*start = s + e->bias;
	return true;
}

/* What a PLT stub at t jumps to: the GOT slot's value, read from the
 * process (the file holds the value before binding). */
static bool plt_target(struct livestack *ls, uint64_t t, uint64_t *to)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	uint8_t b[16];
	unsigned i = 0;
	uint64_t got;

	if (!read_code(ls->maps, t, b, sizeof(b)))
		return false;
	if (!memcmp(b, endbr64, sizeof(endbr64)))
		i = 4;
	if (b[i] == 0xf2)	/* bnd */
		i++;
	if (b[i] != 0xff || b[i + 1] != 0x25)
		return false;
	got = t + i + 6 + (int64_t)(int32_t)le32(b + i + 2);
	return !proc_mem_read(ls->pid, got, to, sizeof(*to));
}

static bool returns_into_call(struct livestack *ls, uint64_t callee_pc,
			      uint64_t ra)
{
	uint8_t b[8];
	uint64_t t, start, via;

	if (ra < sizeof(b) || !read_code(ls->maps, ra - sizeof(b), b,
					 sizeof(b)))
		return false;
	/* call rel32 ending at ra, to code: its target decides. (An e8
	 * that is the tail of an indirect call's displacement lands
	 * nowhere, and the forms below are tried.) */
	t = ra + (int64_t)(int32_t)le32(b + 4);
	if (b[3] == 0xe8 && read_code(ls->maps, t, &via, 1)) {
		if (!function_start(ls->maps, callee_pc, &start))
			return false;
		return t == start ||
		       (plt_target(ls, t, &via) && via == start);
	}
	for (unsigned k = 2; k <= 7; k++)
		if (b[8 - k] == 0xff && call_rm_len(b + 8 - k, k) == k)
			return true;
	return false;
}

static size_t verdict_slot(uint64_t callee_pc, uint64_t ra)
{
	uint64_t x = callee_pc * 0x9e3779b97f4a7c15ull ^ ra;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	return (size_t)(x >> 32) & (VERDICTS - 1);
}

bool livestack_check(struct livestack *ls, uint64_t callee_pc, uint64_t ra)
{
	struct verdict *v = &ls->verdicts[verdict_slot(callee_pc, ra)];

	if (ls->maps_gen != maps_generation(ls->maps)) {
		memset(ls->verdicts, 0, VERDICTS * sizeof(*ls->verdicts));
		ls->maps_gen = maps_generation(ls->maps);
	}
	if (v->callee_pc != callee_pc || v->ra != ra || !v->ra) {
		v->callee_pc = callee_pc;
		v->ra = ra;
		v->ok = returns_into_call(ls, callee_pc, ra);
	}
	if (!v->ok)
		ls->refused++;
	return v->ok;
}

void livestack_stats(const struct livestack *ls, uint64_t *reads,
		     uint64_t *refused)
{
	*reads = ls->reads;
	*refused = ls->refused;
}
