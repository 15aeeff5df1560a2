// SPDX-License-Identifier: GPL-2.0-or-later
/* python.c - CPython frames read from outside, merged into native stacks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "sampler/bytes.h"
#include "sampler/unwind/dso.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/proc.h"
#include "sampler/model/profile.h"
#include "sampler/runtime/pybpf_abi.h"
#include "sampler/runtime/pyline.h"
#include "sampler/runtime/python_i.h"

static inline size_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x;
}

/* Reading: pages of the target, each read once per stack */

static void pages_reset(struct pyrt *r)
{
	memset(r->page_addr, 0, sizeof(r->page_addr));
	r->npages_used = 0;
}

static const uint8_t *page_get(struct pyrt *r, uint64_t page)
{
	unsigned slot;

	for (unsigned i = 0; i < r->npages_used; i++)
		if (r->page_addr[i] == page)
			return r->pages + i * PAGE;
	/* Full: start over (a stack touching more pages is rare). */
	if (r->npages_used == PAGE_SLOTS)
		pages_reset(r);
	slot = r->npages_used;
	r->page_reads++;
	if (proc_mem_read(r->pid, page, r->pages + slot * PAGE, PAGE))
		return NULL;
	r->page_addr[slot] = page;
	r->npages_used++;
	return r->pages + slot * PAGE;
}

/* len bytes at addr, through the page cache. 0 or -EFAULT. */
static int mem(struct pyrt *r, uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;

	if (!addr)
		return -EFAULT;
	while (len) {
		uint64_t page = addr & ~(PAGE - 1), off = addr - page;
		size_t chunk = PAGE - off < len ? PAGE - off : len;
		const uint8_t *pg = page_get(r, page);

		if (!pg)
			return -EFAULT;
		memcpy(out, pg + off, chunk);
		out += chunk;
		addr += chunk;
		len -= chunk;
	}
	return 0;
}

static int mem_u64(struct pyrt *r, uint64_t addr, uint64_t *v)
{
	return mem(r, addr, v, sizeof(*v));
}

/* A code object's str, malloc()ed, cut at MAX_STR characters. */
static char *read_str(struct pyrt *r, uint64_t addr)
{
	char buf[MAX_STR * 4 + 1];

	return pyrt_str(r, mem, addr, buf, sizeof(buf)) ? NULL : strdup(buf);
}

/* Code objects */

/* The line of instruction lasti of c, cached. */
static int32_t code_line(struct py_code *c, int64_t lasti)
{
	size_t slot = (uint64_t)lasti & (LINE_SLOTS - 1);

	if (c->lines[slot].lasti2 == lasti + 2)
		return c->lines[slot].line;
	c->lines[slot].line = (c->kind == PY_LINES_LNOTAB ? pyline_lnotab :
			       c->kind == PY_LINES_310 ? pyline_310 :
			       pyline_311)(c->linetable, c->linetable_len,
					   c->firstlineno, lasti);
	c->lines[slot].lasti2 = lasti + 2;
	return c->lines[slot].line;
}

void pyrt_code_clear(struct py_code *c)
{
	free(c->name);
	free(c->qualname);
	free(c->file);
	free(c->linetable);
	free(c->locs);
	memset(c, 0, sizeof(*c));
}

/* The slot for addr: the entry's pointer, NULL when free. */
static struct py_code **code_slot(struct pyrt *r, uint64_t addr)
{
	for (size_t i = hash64(addr) & (r->codes_cap - 1);;
	     i = (i + 1) & (r->codes_cap - 1))
		if (!r->codes[i] || r->codes[i]->addr == addr)
			return &r->codes[i];
}

int pyrt_codes_grow(struct pyrt *r)
{
	size_t ncap = r->codes_cap ? r->codes_cap * 2 : 256;
	struct py_code **old = r->codes, **nc;
	size_t oldcap = r->codes_cap;

	nc = calloc(ncap, sizeof(*nc));
	if (!nc)
		return -ENOMEM;
	r->codes = nc;
	r->codes_cap = ncap;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i])
			*code_slot(r, old[i]->addr) = old[i];
	free(old);
	return 0;
}

/* Fill c from the code object at addr whose first co_size bytes are obj. */
static int code_load(struct pyrt *r, struct py_code *c, uint64_t addr,
		     const uint8_t *obj)
{
	const struct py_offsets *o = r->o;
	uint64_t lt = ld_u64(obj, o->co_linetable), size;

	c->addr = addr;
	c->name_p = ld_u64(obj, o->co_name);
	c->qualname_p = ld_u64(obj, o->co_qualname);
	c->file_p = ld_u64(obj, o->co_filename);
	c->linetable_p = lt;
	c->kind = o->lines;
	c->firstlineno = (int32_t)ld_u32(obj, o->co_firstlineno);
	c->name = read_str(r, c->name_p);
	c->qualname = read_str(r, c->qualname_p);
	c->file = read_str(r, c->file_p);
	if (!mem_u64(r, lt + o->ob_size, &size) && size <= MAX_LINETABLE) {
		c->linetable = malloc(size ? size : 1);
		if (c->linetable && !mem(r, lt + o->bytes_data, c->linetable,
					 size))
			c->linetable_len = size;
	}
	if (!c->name || !c->file || !c->linetable)
		return -EFAULT;	/* the slot is cleared by the caller */
	return 0;
}

/* The cached code object at addr, checked against obj, its first
 * co_size bytes as they are now. */
static int code_get(struct pyrt *r, uint64_t addr, const uint8_t *obj,
		    struct py_code **out)
{
	const struct py_offsets *o = r->o;
	struct py_code **slot, *c;
	int ret;

	slot = code_slot(r, addr);
	if (!*slot) {
		if (r->ncodes >= CODE_MAX)
			return -ENOSPC;
		*slot = calloc(1, sizeof(**slot));
		if (!*slot)
			return -ENOMEM;
		r->ncodes++;
	}
	c = *slot;
	if (c->addr && c->name_p == ld_u64(obj, o->co_name) &&
	    c->qualname_p == ld_u64(obj, o->co_qualname) &&
	    c->file_p == ld_u64(obj, o->co_filename) &&
	    c->linetable_p == ld_u64(obj, o->co_linetable) &&
	    c->firstlineno == (int32_t)ld_u32(obj, o->co_firstlineno)) {
		*out = c;
		return 0;
	}
	pyrt_code_clear(c);
	ret = code_load(r, c, addr, obj);
	if (ret) {
		/* The slot stays taken (a probe chain must not break) by
		 * an entry no object matches: its name_p is 0. */
		pyrt_code_clear(c);
		c->addr = addr;
		return ret;
	}
	*out = c;
	return r->ncodes * 2 >= r->codes_cap ? pyrt_codes_grow(r) : 0;
}

int pyrt_code_at(struct pyrt *r, uint64_t addr, uint64_t sig,
		 struct py_code **out)
{
	struct py_code *c = *code_slot(r, addr);
	int ret;

	if (!c || !c->name_p || pybpf_sig(c->file_p, c->name_p, c->qualname_p,
					  c->linetable_p) != sig) {
		pages_reset(r);
		if (mem(r, addr, r->codebuf, r->o->co_size))
			return -EFAULT;
		ret = code_get(r, addr, r->codebuf, &c);
		if (ret)
			return ret == -ENOMEM ? ret : -EAGAIN;
		if (pybpf_sig(c->file_p, c->name_p, c->qualname_p,
			      c->linetable_p) != sig)
			return -EAGAIN;
	}
	*out = c;
	return 0;
}

int32_t pyrt_code_line(struct py_code *c, int64_t lasti)
{
	return code_line(c, lasti);
}

/* The location of a Python frame, made once per (code, line). */
static int frame_location(struct pyrt *r, const struct py_frame *f,
			  uint64_t *loc)
{
	struct py_code *c = f->code;
	const char *base = strrchr(c->file, '/');
	struct pf_line line = { .line = f->line };
	char name[MAX_STR * 3];
	int ret;

	for (size_t i = 0; i < c->nlocs; i++)
		if (c->locs[i].line == f->line) {
			*loc = c->locs[i].loc;
			return 0;
		}
	if (c->nlocs == c->locs_cap) {
		size_t ncap = c->locs_cap ? c->locs_cap * 2 : 4;
		void *nl = realloc(c->locs, ncap * sizeof(*c->locs));

		if (!nl)
			return -ENOMEM;
		c->locs = nl;
		c->locs_cap = ncap;
	}
	snprintf(name, sizeof(name), "%s (%s:%d)",
		 c->qualname ? c->qualname : c->name, base ? base + 1 : c->file,
		 (int)f->line);
	ret = profile_add_function(r->p, name, c->name, c->file,
				   c->firstlineno, &line.function_id);
	if (!ret)
		ret = profile_mark_runtime(r->p, line.function_id);
	if (!ret)
		ret = profile_add_location(r->p, 0, 0, &line, 1, loc);
	if (ret)
		return ret;
	c->locs[c->nlocs].line = f->line;
	c->locs[c->nlocs++].loc = *loc;
	return 0;
}

/* Thread states */

static bool tstate_is(struct pyrt *r, uint64_t ts, pid_t tid,
		      uint64_t *ident)
{
	return !pyrt_tstate_ident(r, mem, ts, tid, ident);
}

/* The thread state of tid: cached, else found by walking every
 * interpreter's list. 0 or -ENOENT. */
static int find_tstate(struct pyrt *r, pid_t tid, uint64_t *out)
{
	const struct py_offsets *o = r->o;
	size_t slot = (uint32_t)tid % TID_SLOTS;
	uint64_t interp, ts, ident;

	if (r->tids[slot].tid == (uint32_t)tid &&
	    tstate_is(r, r->tids[slot].tstate, tid, &ident)) {
		*out = r->tids[slot].tstate;
		return 0;
	}
	if (mem_u64(r, r->runtime + o->rt_interp_head, &interp))
		return -EFAULT;
	for (int i = 0; interp && i < MAX_INTERPS; i++) {
		if (mem_u64(r, interp + o->is_threads_head, &ts))
			return -EFAULT;
		for (int j = 0; ts && j < MAX_THREADS; j++) {
			if (tstate_is(r, ts, tid, &ident)) {
				r->tids[slot].tid = tid;
				r->tids[slot].tstate = ts;
				r->tids[slot].ident = ident;
				r->tids[slot].cframe = 0;
				r->tids[slot].npages = 0;
				r->tids[slot].ncodes = 0;
				*out = ts;
				return 0;
			}
			if (mem_u64(r, ts + o->ts_next, &ts))
				return -EFAULT;
		}
		if (mem_u64(r, interp + o->is_next, &interp))
			return -EFAULT;
	}
	return -ENOENT;
}

#define IOV(addr, buf, len) do { \
		local[k] = (struct iovec){ (buf), (len) }; \
		remote[k++] = (struct iovec){ (void *)(uintptr_t)(addr), \
					      (len) }; \
		want += (len); \
	} while (0)

/* v last into the set (of at most max, *n now), the least recently
 * remembered giving way. */
static void remember(uint64_t *set, uint8_t *n, unsigned max, uint64_t v)
{
	for (unsigned i = 0; i < *n; i++)
		if (set[i] == v) {
			memmove(set + i, set + i + 1,
				(*n - i - 1) * sizeof(*set));
			(*n)--;
			break;
		}
	if (*n == max) {
		memmove(set, set + 1, (max - 1) * sizeof(*set));
		(*n)--;
	}
	set[(*n)++] = v;
}

/*
 * The guess: in one call, where the thread's cframe was, its current
 * frame, the pages its recent chains were on and its recent code
 * objects' headers, then afresh its cframe and current frame, the GIL
 * holder and its native id. *fast when all of it was read and nothing
 * changed from the first word to the last: a chain walked within those
 * pages, of those code objects, is then the chain of one moment (as
 * read_frames() checks with its second call). *frame 0 when even it
 * could not be read (or the thread runs no Python frame).
 */
static void read_guess(struct pyrt *r, uint64_t ts, pid_t tid,
		       uint64_t *cframe, uint64_t *frame, uint64_t *gil_ts,
		       bool *fast)
{
	const struct py_offsets *o = r->o;
	size_t slot = (uint32_t)tid % TID_SLOTS;
	struct iovec local[PRE_PAGES + PRE_CODES + 6];
	struct iovec remote[PRE_PAGES + PRE_CODES + 6];
	uint64_t now[3];
	uint32_t locked = 1;
	size_t want = 0;
	ssize_t got;
	int k = 0;

	*cframe = r->tids[slot].cframe;
	*frame = 0;
	*fast = false;
	pages_reset(r);
	IOV(*cframe + o->cf_current_frame, frame, 8);
	for (int i = 0; i < r->tids[slot].npages; i++)
		IOV(r->tids[slot].pages[i], r->pages + i * PAGE, PAGE);
	for (int i = 0; i < r->tids[slot].ncodes; i++)
		IOV(r->tids[slot].codes[i], r->codebuf + i * o->co_size,
		    o->co_size);
	if (o->no_cframe)
		now[0] = ts;	/* the thread state is its own "cframe" */
	else
		IOV(ts + o->ts_cframe, &now[0], 8);
	IOV(*cframe + o->cf_current_frame, &now[1], 8);
	IOV(r->runtime + o->rt_gil_holder, gil_ts, 8);
	if (o->rt_gil_locked)
		IOV(r->runtime + o->rt_gil_locked, &locked, 4);
	IOV(ts + o->ts_native_tid, &now[2], 8);
	got = process_vm_readv(r->pid, local, k, remote, k, 0);
	if (!locked)
		*gil_ts = 0;	/* its last holder, not holding it now */
	if (got < 8) {
		*frame = 0;
		return;
	}
	if (got != (ssize_t)want) {
		/* a page or code object gone: read as needed, then
		 * checked; the sets start again from this chain */
		r->tids[slot].npages = r->tids[slot].ncodes = 0;
		return;
	}
	for (int i = 0; i < r->tids[slot].npages; i++)
		r->page_addr[i] = r->tids[slot].pages[i];
	r->npages_used = r->tids[slot].npages;
	*fast = now[0] == *cframe && now[1] == *frame &&
		now[2] == r->tids[slot].ident;
}

/* Where the chain just read was, for the next guess. */
static void remember_chain(struct pyrt *r, size_t slot, uint64_t cframe,
			   const uint64_t *fp, const uint64_t *code,
			   const bool *shim, int n)
{
	r->tids[slot].cframe = cframe;
	for (int i = 0; i < n; i++) {
		remember(r->tids[slot].pages, &r->tids[slot].npages,
			 PRE_PAGES, fp[i] & ~(PAGE - 1));
		if ((fp[i] + r->o->fr_size - 1) / PAGE != fp[i] / PAGE)
			remember(r->tids[slot].pages, &r->tids[slot].npages,
				 PRE_PAGES, (fp[i] & ~(PAGE - 1)) + PAGE);
		if (!shim[i])
			remember(r->tids[slot].codes, &r->tids[slot].ncodes,
				 PRE_CODES, code[i]);
	}
}

/*
 * The Python frames of the thread state ts, innermost first: *n of
 * them, *nentry of which entered the evaluation loop; *gil whether ts
 * holds the GIL. The chain is walked through the page cache (frames
 * sit together in the thread's data stack); then one system call reads
 * every frame's code object header, the GIL holder, and afresh the
 * thread's current cframe and frame and the code its leaf frame runs:
 * -EAGAIN when those changed (the chain changed while it was read).
 * With guess, the first call is read_guess()'s, and when its pages and
 * code headers held the whole chain, it is the only one.
 * -EFAULT when it could not be read, -ENOMEM.
 */
static int read_frames(struct pyrt *r, uint64_t ts, pid_t tid, bool guess,
		       int *n, int *nentry, enum pyrt_gil *gil)
{
	const struct py_offsets *o = r->o;
	size_t slot = (uint32_t)tid % TID_SLOTS;
	uint64_t cframe, frame, leaf, now[5], gil_ts = 0, reads;
	struct iovec local[MAX_PY_FRAMES + 6], remote[MAX_PY_FRAMES + 6];
	uint64_t code[MAX_PY_FRAMES], instr[MAX_PY_FRAMES];
	uint64_t fp[MAX_PY_FRAMES];
	bool shim[MAX_PY_FRAMES];	/* 3.12's entry shims */
	bool isent[MAX_PY_FRAMES];	/* 3.11's is_entry */
	uint32_t locked = 1;
	uint64_t uniq[MAX_PY_FRAMES];	/* distinct code objects */
	struct py_code *uc[MAX_PY_FRAMES];
	uint8_t which[MAX_PY_FRAMES];	/* frame -> uniq index, or 255 */
	size_t want = 0;
	uint8_t fr[128];
	int k = 0, nu = 0, nall = 0, ret;
	bool fast = false;
	ssize_t got;

	*n = *nentry = 0;
	if (guess) {
		read_guess(r, ts, tid, &cframe, &frame, &gil_ts, &fast);
		if (!frame && !fast)
			return -EAGAIN;	/* unread, or not checked */
	} else if (o->no_cframe) {
		cframe = ts;	/* 3.13: ts->current_frame */
		if (mem_u64(r, ts + o->cf_current_frame, &frame))
			return -EFAULT;
	} else if (mem_u64(r, ts + o->ts_cframe, &cframe) ||
		   mem_u64(r, cframe + o->cf_current_frame, &frame)) {
		return -EFAULT;
	}
	reads = r->page_reads;
	leaf = frame;
	while (frame && nall < MAX_PY_FRAMES) {
		if (mem(r, frame, fr, o->fr_size))
			return -EAGAIN;	/* freed under us */
		fp[nall] = frame;
		code[nall] = ld_u64(fr, o->fr_code);
		instr[nall] = o->fr_lasti ? ld_u32(fr, o->fr_instr) :
			      ld_u64(fr, o->fr_instr);
		shim[nall] = o->entry == PY_ENTRY_SHIM &&
			     fr[o->fr_is_entry] == o->fr_shim_owner;
		isent[nall] = o->entry == PY_ENTRY_EVERY ||
			      (o->entry == PY_ENTRY_IS_ENTRY &&
			       fr[o->fr_is_entry] != 0);
		nall++;
		frame = ld_u64(fr, o->fr_previous);
	}
	/* The fast way: every frame on the guessed pages (no page read
	 * since) and of a code object whose header came with them. */
	fast = fast && r->page_reads == reads;
	nu = fast ? r->tids[slot].ncodes : 0;
	for (int i = 0; fast && i < nall; i++) {
		int u = 0;

		if (shim[i])
			continue;
		while (u < nu && r->tids[slot].codes[u] != code[i])
			u++;
		fast = u < nu;
		which[i] = u;
	}
	if (fast) {
		memcpy(uniq, r->tids[slot].codes, nu * sizeof(*uniq));
		now[3] = gil_ts;
		goto decode;
	}
	nu = 0;
	for (int i = 0; i < nall; i++) {
		int u = 0;

		if (shim[i])
			continue;
		while (u < nu && u < UNIQ_MAX && uniq[u] != code[i])
			u++;
		if (u < nu && uniq[u] == code[i]) {
			which[i] = u;
			continue;
		}
		which[i] = nu < UNIQ_MAX ? nu : 255;
		uniq[nu] = code[i];
		IOV(code[i], r->codebuf + nu * o->co_size, o->co_size);
		nu++;
	}
	if (o->no_cframe)
		now[0] = cframe;
	else
		IOV(ts + o->ts_cframe, &now[0], 8);
	IOV(cframe + o->cf_current_frame, &now[1], 8);
	IOV(r->runtime + o->rt_gil_holder, &now[3], 8);
	if (o->rt_gil_locked)
		IOV(r->runtime + o->rt_gil_locked, &locked, 4);
	IOV(ts + o->ts_native_tid, &now[4], 8);
	if (leaf)
		IOV(leaf + o->fr_code, &now[2], 8);
	got = process_vm_readv(r->pid, local, k, remote, k, 0);
	if (!locked)
		now[3] = 0;	/* its last holder, not holding it now */
	if (got != (ssize_t)want || now[0] != cframe || now[1] != leaf ||
	    now[4] != r->tids[slot].ident || (leaf && now[2] != code[0]))
		return -EAGAIN;
decode:
	remember_chain(r, slot, cframe, fp, code, shim, nall);
	*gil = now[3] == ts ? PYRT_GIL_HELD : PYRT_GIL_NOT_HELD;
	for (int u = 0; u < nu; u++)
		uc[u] = NULL;
	for (int i = 0, next = UNIQ_MAX; i < nall; i++) {
		struct py_frame *f = &r->frames[*n];
		int u;

		if (shim[i]) {
			/* 3.12: the frame before a shim entered the loop */
			if (*n)
				r->frames[*n - 1].entry = true;
			(*nentry)++;
			continue;
		}
		u = which[i] != 255 ? which[i] : next++;
		f->entry = isent[i];
		*nentry += f->entry;

		/* past UNIQ_MAX distinct objects, each its own, in order */
		if (!uc[u]) {
			ret = code_get(r, uniq[u], r->codebuf + u * o->co_size,
				       &uc[u]);
			if (ret == -ENOMEM)
				return ret;
			if (ret)
				return -EAGAIN;
		}
		f->code = uc[u];
		f->line = code_line(f->code, pyrt_lasti(o, code[i], instr[i]));
		if (f->line < 0)
			return -EAGAIN;
		(*n)++;
	}
	return 0;
}
#undef IOV

static bool is_eval(const struct pyrt *r, uint64_t pc)
{
	return pc >= r->eval_start && pc < r->eval_end &&
	       dso_ranges_hold(r->eval, r->neval, pc - r->bias);
}

/* Native locations only. */
static int native(const struct pyrt_native *nat, const uint64_t *pcs, int n,
		  uint64_t *locs, int max, int *nlocs)
{
	int ret;

	*nlocs = 0;
	for (int i = 0; i < n && i < max; i++) {
		ret = nat->location(nat->arg, pcs[i], &locs[i]);
		if (ret)
			return ret;
		(*nlocs)++;
	}
	return 0;
}

/* The native frames with the Python ones for each evaluation frame. */
static int merge(struct pyrt *r, const struct pyrt_native *nat,
		 const uint64_t *pcs, int n, int nframes, uint64_t *locs,
		 int max, int *nlocs)
{
	int k = 0, f = 0, ret;

	for (int i = 0; i < n && k < max; i++) {
		if (!is_eval(r, pcs[i])) {
			ret = nat->location(nat->arg, pcs[i], &locs[k++]);
			if (ret)
				return ret;
			continue;
		}
		while (f < nframes && k < max) {
			bool entry = r->frames[f].entry;

			ret = frame_location(r, &r->frames[f++], &locs[k++]);
			if (ret)
				return ret;
			if (entry)
				break;
		}
	}
	*nlocs = k;
	return 0;
}

/*
 * Thread tid's frames into r->frames now: 0, -ENOENT (no thread state),
 * -EAGAIN (changed while read, every try), -EFAULT, -ENOMEM.
 */
static int read_thread(struct pyrt *r, pid_t tid, int *nframes, int *nentry,
		       enum pyrt_gil *gil)
{
	size_t slot = (uint32_t)tid % TID_SLOTS;
	uint64_t ts;
	int ret = -EAGAIN;

	*gil = PYRT_GIL_UNKNOWN;
	/* Where the last read of tid found things, if they are still there
	 * (checked at the end of the read); else from _PyRuntime on. */
	if (r->tids[slot].tid == (uint32_t)tid && r->tids[slot].cframe &&
	    r->tids[slot].npages) {
		ret = read_frames(r, r->tids[slot].tstate, tid, true,
				  nframes, nentry, gil);
		if (ret != -EAGAIN)
			return ret;
		r->tids[slot].cframe = 0;
	}
	pages_reset(r);
	if (find_tstate(r, tid, &ts))
		return -ENOENT;
	ret = -EAGAIN;
	for (int t = 0; t < READ_TRIES && ret == -EAGAIN; t++) {
		if (t)
			pages_reset(r);
		ret = read_frames(r, ts, tid, false, nframes, nentry, gil);
	}
	return ret;
}

static struct py_snap *snap_of(struct pyrt *r, pid_t tid)
{
	for (size_t i = 0; i < r->nsnaps; i++)
		if (r->snaps[i].tid == tid)
			return &r->snaps[i];
	return NULL;
}

int pyrt_snapshot(struct pyrt *r, pid_t tid)
{
	struct py_snap *s;

	if (!r || !r->o)
		return 0;
	s = snap_of(r, tid);
	if (!s) {
		if (r->nsnaps == r->snaps_cap) {
			size_t ncap = r->snaps_cap ? r->snaps_cap * 2 : 16;
			void *ns = realloc(r->snaps, ncap * sizeof(*s));

			if (!ns)
				return -ENOMEM;
			r->snaps = ns;
			r->snaps_cap = ncap;
		}
		s = &r->snaps[r->nsnaps++];
		*s = (struct py_snap){ .tid = tid };
	}
	s->ret = read_thread(r, tid, &s->n, &s->nentry, &s->gil);
	if (s->ret == -ENOMEM)
		return s->ret;
	free(s->frames);
	s->frames = NULL;
	if (!s->ret && s->n) {
		s->frames = malloc(s->n * sizeof(*s->frames));
		if (!s->frames)
			return -ENOMEM;
		memcpy(s->frames, r->frames, s->n * sizeof(*s->frames));
	}
	return 0;
}

int pyrt_locations(struct pyrt *r, const struct pyrt_native *nat, pid_t tid,
		   const uint64_t *pcs, int n, uint64_t *locs, int max,
		   int *nlocs, enum pyrt_gil *gil)
{
	int neval = 0, nframes = 0, nentry = 0, ret;
	enum pyrt_gil g = PYRT_GIL_UNKNOWN;
	struct py_snap *s;

	if (gil)
		*gil = PYRT_GIL_UNKNOWN;
	if (r && r->o)
		for (int i = 0; i < n; i++)
			neval += is_eval(r, pcs[i]);
	if (!neval)
		return native(nat, pcs, n, locs, max, nlocs);
	s = r->bpf_on ? NULL : snap_of(r, tid);
	if (r->bpf_on) {
		/* read in the kernel at the sample (pybpf.c) */
		ret = r->cur.tid == tid ? r->cur.ret : -ENODATA;
		nframes = r->cur.n;
		nentry = r->cur.nentry;
		g = r->cur.gil;
		r->cur.tid = 0;
	} else if (s) {
		ret = s->ret;
		nframes = s->n;
		nentry = s->nentry;
		g = s->gil;
		if (!ret && nframes)
			memcpy(r->frames, s->frames,
			       nframes * sizeof(*r->frames));
	} else {
		ret = read_thread(r, tid, &nframes, &nentry, &g);
	}
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		if (ret == -EAGAIN)
			r->changed++;
		else if (ret == -ENOENT)
			r->no_thread++;
		else if (ret == -ENODATA)
			r->unmatched++;
		else
			r->unreadable++;
		return native(nat, pcs, n, locs, max, nlocs);
	}
	if (nentry != neval) {
		r->mismatch++;
		return native(nat, pcs, n, locs, max, nlocs);
	}
	if (gil)
		*gil = g;
	r->merged++;
	return merge(r, nat, pcs, n, nframes, locs, max, nlocs);
}
