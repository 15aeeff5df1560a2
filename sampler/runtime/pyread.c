// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pyread.c - what reading a CPython process needs beside its frames:
 * direct reads, str objects as UTF-8, and which thread a 3.8-3.10
 * thread state is.
 *
 * Before 3.11 a thread state knows its thread only by thread_id, the
 * pthread_t PyThread_get_thread_ident() gave it: pthread_self(), which
 * glibc makes the address of the thread's struct pthread (its thread
 * control block). That struct holds the kernel's tid at a fixed offset
 * per glibc build: 0x2d0 on x86-64 (tcbhead_t, 0x2c0 bytes, then a
 * list_t, then tid; checked on Debian 12's glibc 2.36 with a program
 * printing *(pid_t *)((char *)pthread_self() + 0x2d0) beside gettid()).
 * Rather than trust it, the offset is learnt from the process itself:
 * the main thread's struct pthread holds the process id as its tid, so
 * the first thread state of the main interpreter whose struct pthread
 * has the pid at 0x2d0 confirms it; else the main thread's struct is
 * searched for the one 4-byte slot that holds the pid (a glibc of
 * another layout). Learnt once per reader (a few tries, then given up:
 * the stacks keep their native frames, counted as "no thread state").
 *
 * The eBPF reader (pybpf.bpf.c) follows the same pointer with the
 * offset learnt here: the sampled task's fsbase is its pthread_self()
 * too, but reading it needs the kernel's task_struct layout (BTF, CO-RE)
 * where this needs nothing.
 *
 * Errors: -ENOENT (not learnt), -EFAULT (unreadable). No state of its
 * own beyond r->tid_off.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sampler/bytes.h"
#include "sampler/proc.h"
#include "sampler/runtime/python_i.h"

#define TID_OFF_GLIBC 0x2d0	/* x86-64 glibc 2.x */
#define TID_SCAN 0x800		/* bytes of struct pthread searched */
#define TID_TRIES 8		/* to learn it, per reader */
#define MAIN_THREADS 256	/* thread states looked at to learn it */

static int rd64(struct pyrt *r, pyrt_read_fn rd, uint64_t addr, uint64_t *v)
{
	return rd(r, addr, v, sizeof(*v));
}

/* The offset of the tid in the struct pthread at pt, of the main
 * thread when it holds the pid (at glibc's offset, else, with scan, at
 * one place only): 0 when not. */
static uint32_t tid_off_in(struct pyrt *r, pyrt_read_fn rd, uint64_t pt,
			   bool scan)
{
	uint8_t buf[TID_SCAN];
	uint32_t found = 0;
	int hits = 0;

	if (rd(r, pt, buf, sizeof(buf)))
		return 0;
	if (ld_u32(buf, TID_OFF_GLIBC) == (uint32_t)r->pid)
		return TID_OFF_GLIBC;
	if (!scan)
		return 0;
	/* past the first words (the tcb's self pointers) */
	for (uint32_t off = 16; off + 4 <= sizeof(buf); off += 4)
		if (ld_u32(buf, off) == (uint32_t)r->pid) {
			found = off;
			hits++;
		}
	return hits == 1 ? found : 0;
}

static int learn(struct pyrt *r, pyrt_read_fn rd)
{
	const struct py_offsets *o = r->o;
	uint64_t interp, ts, pt;

	if (r->tid_tries >= TID_TRIES)
		return -ENOENT;
	r->tid_tries++;
	/* glibc's offset in any thread state's first, then a search */
	for (int scan = 0; scan < 2; scan++) {
		if (rd64(r, rd, r->runtime + o->rt_interp_head, &interp) ||
		    rd64(r, rd, interp + o->is_threads_head, &ts))
			return -EFAULT;
		for (int i = 0; ts && i < MAIN_THREADS; i++) {
			if (rd64(r, rd, ts + o->ts_native_tid, &pt))
				return -EFAULT;
			r->tid_off = pt ? tid_off_in(r, rd, pt, scan) : 0;
			if (r->tid_off)
				return 0;
			if (rd64(r, rd, ts + o->ts_next, &ts))
				return -EFAULT;
		}
	}
	return -ENOENT;
}

/*
 * A compact str object (what names, qualnames and file names are), read
 * through rd (this file's page cache, or pythreads.c's direct reads), as
 * UTF-8 into buf, cut at size - 1 bytes at a character's end; at most
 * MAX_STR characters are read.
 */
int pyrt_str(struct pyrt *r, pyrt_read_fn rd, uint64_t addr, char *buf,
	     size_t size)
{
	const struct py_offsets *o = r->o;
	uint8_t hdr[80], data[MAX_STR * 4];
	uint64_t len;
	uint32_t state, kind;
	size_t n = 0;

	if (!size || rd(r, addr, hdr, o->str_compact_data))
		return -EFAULT;
	len = ld_u64(hdr, o->str_length);
	state = ld_u32(hdr, o->str_state);
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || kind < 1 || kind > 4 || kind == 3)
		return -EFAULT;	/* not compact */
	if (len > MAX_STR)
		len = MAX_STR;
	if (rd(r, addr + ((state >> 6) & 1 ? o->str_ascii_data :
			  o->str_compact_data), data, len * kind))
		return -EFAULT;
	for (uint64_t i = 0; i < len; i++) {
		uint32_t c = kind == 1 ? data[i] : kind == 2 ?
			     (uint32_t)data[2 * i] | data[2 * i + 1] << 8 :
			     ld_u32(data, 4 * i);
		char u[4];
		size_t k;

		if (c < 0x80) {
			u[0] = c;
			k = 1;
		} else if (c < 0x800) {
			u[0] = 0xc0 | c >> 6;
			u[1] = 0x80 | (c & 0x3f);
			k = 2;
		} else if (c < 0x10000) {
			u[0] = 0xe0 | c >> 12;
			u[1] = 0x80 | ((c >> 6) & 0x3f);
			u[2] = 0x80 | (c & 0x3f);
			k = 3;
		} else {
			u[0] = 0xf0 | c >> 18;
			u[1] = 0x80 | ((c >> 12) & 0x3f);
			u[2] = 0x80 | ((c >> 6) & 0x3f);
			u[3] = 0x80 | (c & 0x3f);
			k = 4;
		}
		if (n + k >= size)
			break;
		memcpy(buf + n, u, k);
		n += k;
	}
	buf[n] = '\0';
	return 0;
}

int pyrt_read(struct pyrt *r, uint64_t addr, void *buf, size_t len)
{
	return addr ? proc_mem_read(r->pid, addr, buf, len) : -EFAULT;
}

int pyrt_tid_off(struct pyrt *r, pyrt_read_fn rd)
{
	if (r->tid_off)
		return 0;
	return learn(r, rd);
}

int pyrt_tstate_ident(struct pyrt *r, pyrt_read_fn rd, uint64_t ts,
		      pid_t tid, uint64_t *ident)
{
	uint64_t v;
	uint32_t t;

	if (rd64(r, rd, ts + r->o->ts_native_tid, &v))
		return -EFAULT;
	*ident = v;
	if (!r->o->ts_pthread)
		return v == (uint64_t)tid ? 0 : -ENOENT;
	if (pyrt_tid_off(r, rd))
		return -ENOENT;
	if (!v || rd(r, v + r->tid_off, &t, sizeof(t)))
		return -EFAULT;
	return t == (uint32_t)tid ? 0 : -ENOENT;
}
