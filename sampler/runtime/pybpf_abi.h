/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pybpf_abi.h - what the kernel half of the Python frame reader
 * (pybpf.bpf.c, an eBPF program run at each perf sample) and its user
 * half (pybpf.c) share: the configuration it is given through an array
 * map, and the record it writes into a BPF ring buffer per sample.
 * Included by both; only linux/types.h types.
 */
#ifndef PROFFS_PYBPF_ABI_H
#define PROFFS_PYBPF_ABI_H

#include <linux/types.h>

#define PYBPF_MAX_FRAMES 128	/* Python frames a record carries */
#define PYBPF_MAX_THREADS 64	/* thread states walked to find one */
#define PYBPF_BLOCK 64		/* bytes read of a frame, of a code object */
#define PYBPF_FBLOCK 80		/* bytes read of a frame when fr_wide */
#define PYBPF_XBLOCK 96		/* when fr_wide is 2 (3.8, 3.9) */
#define PYBPF_BUF 128		/* the buffer they are read into */

/* Where to look, in the target (pyoffsets.h's layout). The fr_* and co_*
 * offsets are relative to fr_base and co_base, each below PYBPF_BLOCK - 8
 * (PYBPF_FBLOCK - 8 for fr_* when fr_wide): one read of PYBPF_BLOCK
 * (PYBPF_FBLOCK) bytes per frame, one of PYBPF_BLOCK per code object.
 * fr_shim 0: the byte at fr_is_entry is a bool, "this frame entered the
 * evaluation loop" (3.11); else it is the frame's owner, and fr_shim
 * the owner of the C stack's shim frames that mark each entry (3.12):
 * bit 0 of a frame's instr then says "a shim". rt_gil_locked 0: the
 * word at rt_gil_holder is the holder (0 when none); else the holder is
 * the last holder when the u32 at rt_gil_locked is not 0.
 * fr_lasti (3.8-3.10): fr_instr is an int, f_lasti, recorded as
 * lasti << 1; every frame entered the evaluation loop; the word at
 * ts_native_tid is a pthread_t whose u32 at tid_off is the tid. */
struct pybpf_cfg {
	__u64 runtime;		/* address of _PyRuntime */
	__u32 tgid;		/* the target; other processes are skipped */
	__u32 rt_gil_holder, rt_interp_head, is_threads_head;
	__u32 ts_next, ts_cframe, ts_native_tid, cf_current_frame;
	__u32 fr_base, fr_code, fr_previous, fr_instr, fr_is_entry;
	__u32 fr_wide, fr_shim, rt_gil_locked;
	__u32 no_cframe;	/* 3.13: the current frame at ts +
				 * cf_current_frame */
	__u32 co_base, co_filename, co_name, co_qualname, co_linetable;
	__u32 fr_lasti, tid_off;
};

enum {
	PYBPF_GIL = 1,		/* the thread held the GIL */
	PYBPF_NO_TSTATE = 2,	/* no thread state is the thread's */
	PYBPF_FAULT = 4,	/* a read failed (a page not present) */
	PYBPF_TRUNCATED = 8,	/* more than PYBPF_MAX_FRAMES frames */
};

/* One frame: its code object, its last instruction (3.8-3.10: f_lasti
 * << 1, as a u32) with bit 0 set when the frame entered the evaluation
 * loop, and pybpf_sig() of its code
 * object's name, qualname, file and line table pointers at the sample. */
struct pybpf_frame {
	__u64 code, instr, sig;
};

/* One sample's record; n frames, innermost first, follow the header. */
struct pybpf_rec {
	__u64 time;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 tid;
	__u16 n;
	__u16 flags;
	struct pybpf_frame f[PYBPF_MAX_FRAMES];
};

#define PYBPF_HDR 16		/* offsetof(struct pybpf_rec, f) */

static inline __u64 pybpf_rotl(__u64 v, unsigned k)
{
	return v << k | v >> (64 - k);
}

/* What identifies a code object's contents cheaply. */
static inline __u64 pybpf_sig(__u64 file, __u64 name, __u64 qualname,
			      __u64 linetable)
{
	return file ^ pybpf_rotl(name, 16) ^ pybpf_rotl(qualname, 32) ^
	       pybpf_rotl(linetable, 48);
}

#endif
