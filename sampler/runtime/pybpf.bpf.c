// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pybpf.bpf.c - the kernel half of the Python frame reader: an eBPF
 * program (BPF_PROG_TYPE_PERF_EVENT) attached to the cpu-clock events of
 * one CPython 3.8-3.13 process. At each sample, in the sampled thread's
 * context, it finds the thread's state (the GIL holder when it is the
 * thread, else the interpreter's list), walks its frame chain with
 * bpf_probe_read_user() (never faulting pages in, never stopping
 * anything), and writes one record (pybpf_abi.h) into a ring buffer the
 * daemon drains with the perf samples. It returns 1: perf writes its
 * sample as ever. It reads only the target's memory, writes only the
 * ring. Built with clang -target bpf; embedded in the daemon.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "sampler/runtime/pybpf_abi.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pybpf_cfg);
} cfg SEC(".maps");

/* The record being made, and the blocks read (per cpu: the program
 * runs once at a time on a cpu). */
struct scratch {
	struct pybpf_rec rec;
	__u8 block[PYBPF_BUF];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} records SEC(".maps");

/* A bpf_loop() walk's state, on the program's stack. */
struct walk {
	__u64 ptr;		/* the next frame, or thread state */
	__u64 last_code, last_sig;
	__u32 tid;
	__u64 found;		/* the thread state found */
};

static __always_inline __u64 at(const __u8 *block, __u32 off)
{
	return *(const __u64 *)(block + (off & (PYBPF_BUF - 8)));
}

static __always_inline __u32 read_u32(__u64 addr)
{
	__u32 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* The thread state ts's thread: its native id, or (3.8-3.10) the tid
 * in the struct pthread its thread_id points at (pyread.c). */
static __always_inline __u64 ts_tid(const struct pybpf_cfg *c, __u64 ts)
{
	__u64 v = read_u64(ts + c->ts_native_tid);

	if (c->tid_off && v)
		v = read_u32(v + c->tid_off);
	return v;
}

/* One thread state of the interpreter's list: is it tid's? */
static long thread_step(__u32 i, void *arg)
{
	struct walk *w = arg;
	__u32 k = 0;
	const struct pybpf_cfg *c = bpf_map_lookup_elem(&cfg, &k);

	(void)i;
	if (!c || !w->ptr)
		return 1;
	if (ts_tid(c, w->ptr) == w->tid) {
		w->found = w->ptr;
		return 1;
	}
	w->ptr = read_u64(w->ptr + c->ts_next);
	return 0;
}

/* One frame of the chain into the record. */
static long frame_step(__u32 i, void *arg)
{
	struct walk *w = arg;
	__u32 k = 0;
	const struct pybpf_cfg *c = bpf_map_lookup_elem(&cfg, &k);
	struct scratch *s = bpf_map_lookup_elem(&scratch, &k);
	struct pybpf_frame *f;
	__u64 code;
	__u8 mark;
	long err;

	if (!c || !s || !w->ptr)
		return 1;
	if (i >= PYBPF_MAX_FRAMES) {
		s->rec.flags |= PYBPF_TRUNCATED;
		return 1;
	}
	if (c->fr_wide == 2)
		err = bpf_probe_read_user(s->block, PYBPF_XBLOCK,
					  (const void *)(w->ptr + c->fr_base));
	else if (c->fr_wide)
		err = bpf_probe_read_user(s->block, PYBPF_FBLOCK,
					  (const void *)(w->ptr + c->fr_base));
	else
		err = bpf_probe_read_user(s->block, PYBPF_BLOCK,
					  (const void *)(w->ptr + c->fr_base));
	if (err) {
		s->rec.flags |= PYBPF_FAULT;
		return 1;
	}
	/* i < PYBPF_MAX_FRAMES (a power of two), masked again where the
	 * compiler cannot drop it: the verifier loses the bound when i is
	 * spilled */
	asm volatile("" : "+r"(i));
	f = &s->rec.f[i & (PYBPF_MAX_FRAMES - 1)];
	code = at(s->block, c->fr_code);
	f->code = code;
	mark = s->block[c->fr_is_entry & (PYBPF_BUF - 1)];
	if (c->fr_lasti)
		f->instr = (at(s->block, c->fr_instr) & 0xffffffffull) << 1 |
			   1;
	else
		f->instr = (at(s->block, c->fr_instr) & ~1ull) |
			   (c->fr_shim ? mark == c->fr_shim : mark != 0);
	w->ptr = at(s->block, c->fr_previous);
	if (code != w->last_code) {
		if (bpf_probe_read_user(s->block, PYBPF_BLOCK,
					(const void *)(code + c->co_base))) {
			s->rec.flags |= PYBPF_FAULT;
			return 1;
		}
		w->last_code = code;
		w->last_sig = pybpf_sig(at(s->block, c->co_filename),
					at(s->block, c->co_name),
					at(s->block, c->co_qualname),
					at(s->block, c->co_linetable));
	}
	f->sig = w->last_sig;
	s->rec.n = i + 1;
	return 0;
}

SEC("perf_event")
int pybpf_sample(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), ts, gil, cframe, size;
	struct walk w = { 0 };
	const struct pybpf_cfg *c;
	struct scratch *s;
	__u32 k = 0, n;

	(void)ctx;
	c = bpf_map_lookup_elem(&cfg, &k);
	s = bpf_map_lookup_elem(&scratch, &k);
	if (!c || !s || id >> 32 != c->tgid)
		return 1;
	s->rec.time = bpf_ktime_get_ns();
	s->rec.tid = (__u32)id;
	s->rec.n = 0;
	s->rec.flags = 0;
	w.tid = (__u32)id;
	gil = read_u64(c->runtime + c->rt_gil_holder);
	ts = gil;
	if (c->rt_gil_locked && !read_u32(c->runtime + c->rt_gil_locked))
		gil = 0;	/* its last holder, not holding it now */
	if (!ts || ts_tid(c, ts) != w.tid) {
		__u64 interp = read_u64(c->runtime + c->rt_interp_head);

		w.ptr = interp ? read_u64(interp + c->is_threads_head) : 0;
		bpf_loop(PYBPF_MAX_THREADS, thread_step, &w, 0);
		ts = w.found;
	}
	if (!ts) {
		s->rec.flags |= PYBPF_NO_TSTATE;
	} else {
		if (ts == gil)
			s->rec.flags |= PYBPF_GIL;
		cframe = c->no_cframe ? ts : read_u64(ts + c->ts_cframe);
		w.ptr = cframe ? read_u64(cframe + c->cf_current_frame) : 0;
		bpf_loop(PYBPF_MAX_FRAMES + 1, frame_step, &w, 0);
	}
	n = s->rec.n;
	if (n > PYBPF_MAX_FRAMES)
		n = PYBPF_MAX_FRAMES;
	size = PYBPF_HDR + (__u64)n * sizeof(struct pybpf_frame);
	bpf_ringbuf_output(&records, &s->rec, size, BPF_RB_NO_WAKEUP);
	return 1;
}
