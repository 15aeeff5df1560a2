// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pybpf.c - the user half of the Python frame reader that runs in the
 * kernel (pybpf.bpf.c): loads the program for one CPython process,
 * attaches it to the session's perf events, drains its ring buffer, and
 * pairs each perf sample with the record the program wrote for the same
 * thread at the same moment (both clocks are CLOCK_MONOTONIC; the
 * program runs in the sample's overflow handler, just before perf writes
 * the sample). A record's frames become r->frames for the next
 * pyrt_locations() of that thread; code objects come from python.c's
 * cache, checked against what the program saw of them at the sample.
 *
 * PROFFS_NO_BPF in the daemon's environment turns it off (the tests
 * check both ways). Owns the BPF object, its maps and the records not yet
 * paired (each malloc()ed); a session's program goes back, loaded, to the
 * daemon's struct pybpf_keep it came through (python.h), which unloads
 * it once idle. Built without libbpf (PROFFS_BPF undefined), every entry
 * point says -ENOTSUP and the eager reading of python.c is used.
 * Errors: -ENOMEM; the rest (load, attach) are reasons to fall back,
 * logged once per keep (per daemon) and kept in r->bpf_why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "sampler/clock.h"
#include "sampler/log.h"
#include "sampler/runtime/pybpf_abi.h"
#include "sampler/runtime/python_i.h"

/* Loaded programs kept for the next sessions (loading one, the
 * verifier's pass and its maps, takes ~1.3 ms of the daemon's CPU). */
#define IDLE_MAX 2

struct pybpf_keep {
	pthread_mutex_t lock;
	struct pybpf *idle[IDLE_MAX];	/* loaded, attached to nothing */
	int nidle;
	bool logged;		/* why the eager path is taken: said once */
};

int pybpf_keep_new(struct pybpf_keep **out)
{
	struct pybpf_keep *k = calloc(1, sizeof(*k));

	*out = NULL;
	if (!k)
		return -ENOMEM;
	pthread_mutex_init(&k->lock, NULL);
	*out = k;
	return 0;
}

/* Say once per keep (per daemon; every time without one) what is logged
 * once: whether this caller is the one to say it. */
static bool say_once(struct pybpf_keep *k)
{
	bool first;

	if (!k)
		return true;
	pthread_mutex_lock(&k->lock);
	first = !k->logged;
	k->logged = true;
	pthread_mutex_unlock(&k->lock);
	return first;
}

#ifdef PROFFS_BPF
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sampler/bpfobj.h"
#include "pybpf_obj.h"		/* pybpf_obj[]: the compiled program */

/* A record paired with a sample within this much of its time. */
#define MATCH_NS 500000ull
/* Unpaired records older than the newest by this much are dropped. */
#define EXPIRE_NS 2000000000ull
#define POOL_MAX 16384

struct pyrec {
	uint64_t time;
	uint32_t tid;
	uint16_t n, flags;
	struct pybpf_frame f[];
};

struct pybpf {
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct ring_buffer *rb;
	int cfg_fd;		/* -1 until the program is loaded */
	uint64_t idle_since;	/* CLOCK_MONOTONIC ns, when kept */
	struct pyrec **pool;	/* unpaired records */
	size_t npool;
	uint64_t newest;	/* the latest record's time */
	uint64_t expired;	/* newest when old records were last dropped */
	int err;		/* of the ring's callback: -ENOMEM */
	struct pybpf_keep *keep;	/* where it goes back; may be NULL */
};

static void pool_drop(struct pybpf *b, size_t i)
{
	free(b->pool[i]);
	b->pool[i] = b->pool[--b->npool];
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct pybpf *b = ctx;
	const struct pybpf_rec *rec = data;
	struct pyrec *p;
	size_t n;

	if (len < PYBPF_HDR)
		return 0;
	n = rec->n;
	if (n > PYBPF_MAX_FRAMES || PYBPF_HDR + n * sizeof(rec->f[0]) > len)
		return 0;
	if (rec->time > b->newest)
		b->newest = rec->time;
	/* a look for old ones now and then, not at every record */
	if (b->newest > b->expired + EXPIRE_NS / 4) {
		b->expired = b->newest;
		for (size_t i = 0; i < b->npool;)
			if (b->pool[i]->time + EXPIRE_NS < b->newest)
				pool_drop(b, i);
			else
				i++;
	}
	if (b->npool == POOL_MAX)
		pool_drop(b, 0);
	p = malloc(sizeof(*p) + n * sizeof(p->f[0]));
	if (!p) {
		b->err = -ENOMEM;
		return -ENOMEM;
	}
	p->time = rec->time;
	p->tid = rec->tid;
	p->n = n;
	p->flags = rec->flags;
	memcpy(p->f, rec->f, n * sizeof(p->f[0]));
	b->pool[b->npool++] = p;
	return 0;
}

static void why(struct pyrt *r, struct pybpf_keep *k, const char *what,
		int err)
{
	if (err == -ENOTSUP)
		snprintf(r->bpf_why, sizeof(r->bpf_why), "%s", what);
	else
		snprintf(r->bpf_why, sizeof(r->bpf_why), "%s: %s", what,
			 strerror(-err));
	if (say_once(k))
		pr_info("python: frames read after each sample, not in the "
			"kernel (eBPF %s)", r->bpf_why);
}

static void set_cfg(const struct pyrt *r, struct pybpf_cfg *c)
{
	const struct py_offsets *o = r->o;
	uint32_t fb = o->fr_code, cb = o->co_filename;

	fb = o->fr_previous < fb ? o->fr_previous : fb;
	fb = o->fr_instr < fb ? o->fr_instr : fb;
	fb = o->fr_is_entry < fb ? o->fr_is_entry : fb;
	cb = o->co_name < cb ? o->co_name : cb;
	cb = o->co_qualname < cb ? o->co_qualname : cb;
	cb = o->co_linetable < cb ? o->co_linetable : cb;
	*c = (struct pybpf_cfg){
		.runtime = r->runtime,
		.tgid = (uint32_t)r->pid,
		.rt_gil_holder = o->rt_gil_holder,
		.rt_interp_head = o->rt_interp_head,
		.is_threads_head = o->is_threads_head,
		.ts_next = o->ts_next,
		.ts_cframe = o->ts_cframe,
		.ts_native_tid = o->ts_native_tid,
		.cf_current_frame = o->cf_current_frame,
		.fr_base = fb,
		.fr_code = o->fr_code - fb,
		.fr_previous = o->fr_previous - fb,
		.fr_instr = o->fr_instr - fb,
		.fr_is_entry = o->fr_is_entry - fb,
		.co_base = cb,
		.co_filename = o->co_filename - cb,
		.co_name = o->co_name - cb,
		.co_qualname = o->co_qualname - cb,
		.co_linetable = o->co_linetable - cb,
		.fr_shim = o->entry == PY_ENTRY_SHIM ? o->fr_shim_owner : 0,
		.rt_gil_locked = o->rt_gil_locked,
		.no_cframe = o->no_cframe,
		.fr_lasti = o->fr_lasti,
		.tid_off = o->ts_pthread ? r->tid_off : 0,
	};
	c->fr_wide = c->fr_code > PYBPF_BLOCK - 8 ||
		     c->fr_previous > PYBPF_BLOCK - 8 ||
		     c->fr_instr > PYBPF_BLOCK - 8 ||
		     c->fr_is_entry >= PYBPF_BLOCK;
	if (c->fr_code > PYBPF_FBLOCK - 8 ||
	    c->fr_previous > PYBPF_FBLOCK - 8 ||
	    c->fr_instr > PYBPF_FBLOCK - 8 || c->fr_is_entry >= PYBPF_FBLOCK)
		c->fr_wide = 2;
}

/* Whether the layout fits the program's one-block reads. */
static bool cfg_fits(const struct pybpf_cfg *c)
{
	const uint32_t fr[] = { c->fr_code, c->fr_previous, c->fr_instr };
	const uint32_t co[] = { c->co_filename, c->co_name, c->co_qualname,
				c->co_linetable };
	uint32_t flen = c->fr_wide == 2 ? PYBPF_XBLOCK :
			c->fr_wide ? PYBPF_FBLOCK : PYBPF_BLOCK;

	for (size_t i = 0; i < sizeof(fr) / sizeof(fr[0]); i++)
		if (fr[i] > flen - 8 || fr[i] % 8)
			return false;
	for (size_t i = 0; i < sizeof(co) / sizeof(co[0]); i++)
		if (co[i] > PYBPF_BLOCK - 8 || co[i] % 8)
			return false;
	return c->fr_is_entry < flen;
}

static void pool_clear(struct pybpf *b)
{
	for (size_t i = 0; i < b->npool; i++)
		free(b->pool[i]);
	b->npool = 0;
	b->newest = b->expired = 0;
	b->err = 0;
}

static void bpf_close(struct pybpf *b)
{
	pool_clear(b);
	free(b->pool);
	ring_buffer__free(b->rb);
	bpf_object__close(b->obj);
	free(b);
}

/* Kept for the next session when it is whole and there is room. Its
 * events are closed: it runs no more (a sample in flight as they close
 * writes a record the next session drops). */
void pyrt_bpf_free(struct pybpf *b)
{
	struct pybpf_keep *k = b ? b->keep : NULL;

	if (!b)
		return;
	pool_clear(b);
	if (k && b->rb && b->cfg_fd >= 0) {
		pthread_mutex_lock(&k->lock);
		if (k->nidle < IDLE_MAX) {
			b->idle_since = clock_ns(CLOCK_MONOTONIC);
			k->idle[k->nidle++] = b;
			b = NULL;
		}
		pthread_mutex_unlock(&k->lock);
	}
	if (b)
		bpf_close(b);
}

/* Unload the kept programs idle since before the cut (all: UINT64_MAX);
 * how many. */
static int unload_older(struct pybpf_keep *k, uint64_t cut)
{
	struct pybpf *old[IDLE_MAX];
	int n = 0;

	pthread_mutex_lock(&k->lock);
	for (int i = 0; i < k->nidle;)
		if (k->idle[i]->idle_since <= cut) {
			old[n++] = k->idle[i];
			k->idle[i] = k->idle[--k->nidle];
		} else {
			i++;
		}
	pthread_mutex_unlock(&k->lock);
	for (int i = 0; i < n; i++)
		bpf_close(old[i]);
	return n;
}

void pybpf_keep_sweep(struct pybpf_keep *k, unsigned idle_s)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	uint64_t span = idle_s * 1000000000ull;
	int n;

	if (!k)
		return;
	n = unload_older(k, now > span ? now - span : 0);
	if (n)
		pr_debug("sweep: %d idle eBPF Python reader(s) unloaded", n);
}

void pybpf_keep_free(struct pybpf_keep *k)
{
	if (!k)
		return;
	unload_older(k, UINT64_MAX);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

/* A kept program, its ring drained: NULL when none. */
static struct pybpf *take_idle(struct pybpf_keep *k)
{
	struct pybpf *b = NULL;

	if (!k)
		return NULL;
	pthread_mutex_lock(&k->lock);
	if (k->nidle)
		b = k->idle[--k->nidle];
	pthread_mutex_unlock(&k->lock);
	if (b) {
		ring_buffer__consume(b->rb);
		pool_clear(b);
	}
	return b;
}

int pyrt_bpf_start(struct pyrt *r, struct pybpf_keep *keep)
{
	struct pybpf_cfg c;
	struct pybpf *b;
	struct bpf_map *m;
	uint32_t key = 0;
	int ret;

	if (!r || !r->o)
		return -ENOTSUP;
	r->bpf_tried = true;
	/* the other way, asked for (tests/integration/test_python.py) */
	if (getenv("PROFFS_NO_BPF")) {
		why(r, keep, "PROFFS_NO_BPF set", -ENOTSUP);
		return -ENOTSUP;
	}
	/* 3.8-3.10: where the struct pthread keeps the tid, learnt now */
	if (r->o->ts_pthread && pyrt_tid_off(r, pyrt_read)) {
		why(r, keep, "no kernel thread id found in the threads' struct "
		    "pthread", -ENOTSUP);
		return -ENOTSUP;
	}
	set_cfg(r, &c);
	if (!cfg_fits(&c)) {
		why(r, keep, "layout", -ENOTSUP);
		return -ENOTSUP;
	}
	b = take_idle(keep);
	if (b) {
		if (bpf_map_update_elem(b->cfg_fd, &key, &c, BPF_ANY)) {
			ret = -errno;
			why(r, keep, "map", ret);
			bpf_close(b);
			return ret;
		}
		r->bpf = b;
		return 0;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->cfg_fd = -1;
	b->keep = keep;
	b->pool = malloc(POOL_MAX * sizeof(*b->pool));
	if (!b->pool) {
		free(b);
		return -ENOMEM;
	}
	ret = bpfobj_load(pybpf_obj, sizeof(pybpf_obj), "pybpf", &b->obj);
	if (ret) {
		why(r, keep, "load", ret);
		goto fail;
	}
	b->prog = bpf_object__find_program_by_name(b->obj, "pybpf_sample");
	m = bpf_object__find_map_by_name(b->obj, "cfg");
	if (!b->prog || !m) {
		ret = -ENOENT;
		why(r, keep, "object", ret);
		goto fail;
	}
	if (bpf_map_update_elem(bpf_map__fd(m), &key, &c, BPF_ANY)) {
		ret = -errno;
		why(r, keep, "map", ret);
		goto fail;
	}
	b->cfg_fd = bpf_map__fd(m);
	m = bpf_object__find_map_by_name(b->obj, "records");
	b->rb = m ? ring_buffer__new(bpf_map__fd(m), on_record, b, NULL) : NULL;
	if (!b->rb) {
		ret = m ? -errno : -ENOENT;
		why(r, keep, "ring", ret);
		goto fail;
	}
	r->bpf = b;
	return 0;
fail:
	bpf_close(b);
	return ret == -ENOMEM ? -ENOMEM : (ret ? ret : -EINVAL);
}

int pyrt_bpf_attach(struct pyrt *r, const int *fds, size_t n)
{
	int prog;

	if (!r || !r->bpf)
		return -ENOTSUP;
	prog = bpf_program__fd(r->bpf->prog);
	for (size_t i = 0; i < n; i++)
		if (ioctl(fds[i], PERF_EVENT_IOC_SET_BPF, prog)) {
			int ret = -errno;

			why(r, r->bpf->keep, "attach", ret);
			bpf_close(r->bpf);
			r->bpf = NULL;
			return ret;
		}
	r->bpf_on = true;
	return 0;
}

/* A record's frames into r->frames (*n of them; a 3.12 record's shims
 * are left out, marking the frames before them): 0, -ENOENT, -EFAULT,
 * -EAGAIN (a code object changed since the sample), -ENOMEM. */
static int record_frames(struct pyrt *r, const struct pyrec *p, int *n,
			 int *nentry)
{
	const struct py_offsets *o = r->o;

	*n = *nentry = 0;
	if (p->flags & PYBPF_NO_TSTATE)
		return -ENOENT;
	if (p->flags & PYBPF_FAULT)
		return -EFAULT;
	*n = 0;
	for (int i = 0; i < p->n; i++) {
		const struct pybpf_frame *f = &p->f[i];
		struct py_frame *pf = &r->frames[*n];
		uint64_t instr = f->instr & ~1ull;
		int ret;

		if (o->entry == PY_ENTRY_SHIM && (f->instr & 1)) {
			/* a shim: the frame before it entered the loop */
			if (*n)
				r->frames[*n - 1].entry = true;
			(*nentry)++;
			continue;
		}
		ret = pyrt_code_at(r, f->code, f->sig, &pf->code);
		if (ret)
			return ret;
		pf->entry = (o->entry == PY_ENTRY_IS_ENTRY ||
			     o->entry == PY_ENTRY_EVERY) && (f->instr & 1);
		*nentry += pf->entry;
		(*n)++;
		pf->line = pyrt_code_line(pf->code, pyrt_lasti(o, f->code,
				o->fr_lasti ? instr >> 1 : instr));
		if (pf->line < 0)
			return -EAGAIN;
	}
	return 0;
}

int pyrt_bpf_sample(struct pyrt *r, pid_t tid, uint64_t time)
{
	struct pybpf *b = r ? r->bpf : NULL;
	size_t best = SIZE_MAX;
	uint64_t dbest = MATCH_NS + 1;

	if (!b || !r->bpf_on)
		return 0;
	ring_buffer__consume(b->rb);
	if (b->err)
		return b->err;
	for (size_t i = 0; i < b->npool; i++) {
		const struct pyrec *p = b->pool[i];
		uint64_t d = p->time > time ? p->time - time : time - p->time;

		if (p->tid == (uint32_t)tid && d < dbest) {
			dbest = d;
			best = i;
		}
	}
	r->cur.tid = tid;
	r->cur.n = r->cur.nentry = 0;
	r->cur.gil = PYRT_GIL_UNKNOWN;
	if (best == SIZE_MAX) {
		r->cur.ret = -ENODATA;
		return 0;
	}
	r->cur.ret = record_frames(r, b->pool[best], &r->cur.n,
				   &r->cur.nentry);
	if (!r->cur.ret) {
		r->cur.gil = b->pool[best]->flags & PYBPF_GIL ?
			     PYRT_GIL_HELD : PYRT_GIL_NOT_HELD;
	}
	pool_drop(b, best);
	return r->cur.ret == -ENOMEM ? -ENOMEM : 0;
}

#else	/* !PROFFS_BPF */

void pyrt_bpf_free(struct pybpf *b)
{
	(void)b;
}

int pyrt_bpf_start(struct pyrt *r, struct pybpf_keep *keep)
{
	if (r)
		r->bpf_tried = true;
	if (r)
		snprintf(r->bpf_why, sizeof(r->bpf_why),
			 "built without libbpf");
	if (say_once(keep))
		pr_info("python: frames read after each sample (this build "
			"has no eBPF reader: built without libbpf)");
	return -ENOTSUP;
}

int pyrt_bpf_attach(struct pyrt *r, const int *fds, size_t n)
{
	(void)r;
	(void)fds;
	(void)n;
	return -ENOTSUP;
}

int pyrt_bpf_sample(struct pyrt *r, pid_t tid, uint64_t time)
{
	(void)r;
	(void)tid;
	(void)time;
	return 0;
}

void pybpf_keep_sweep(struct pybpf_keep *k, unsigned idle_s)
{
	(void)k;
	(void)idle_s;
}

void pybpf_keep_free(struct pybpf_keep *k)
{
	if (!k)
		return;
	pthread_mutex_destroy(&k->lock);
	free(k);
}

#endif
