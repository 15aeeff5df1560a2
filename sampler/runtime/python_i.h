/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * python_i.h - what python.c (reading frames) and python_setup.c
 * (finding the runtime, its life cycle, its notes) share: the state of
 * one process's CPython reader. Private to sampler/runtime/.
 */
#ifndef PROFFS_PYTHON_I_H
#define PROFFS_PYTHON_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/unwind/dso.h"
#include "sampler/runtime/python.h"
#include "sampler/runtime/pyoffsets.h"

#define PAGE 4096ull
#define PAGE_SLOTS 16		/* pages one stack read may touch, cached */
#define MAX_PY_FRAMES 256	/* frames read per thread */
#define MAX_THREADS 4096	/* thread states walked to find one */
#define MAX_INTERPS 64
#define TID_SLOTS 256		/* tid -> thread state, direct-mapped */
#define MAX_STR 512		/* bytes kept of a name or file name */
#define MAX_LINETABLE 65536
#define CODE_MAX 65536		/* code objects cached, at most */
#define READ_TRIES 2
#define LINE_SLOTS 16		/* per code object; a power of two */
#define UNIQ_MAX 32		/* distinct code objects looked for per stack */
#define PRE_PAGES 8		/* frame pages read with a thread's guess */
#define PRE_CODES 16		/* code headers read with a thread's guess */

/* What one code object gives its frames; linetable NULL = empty slot. */
struct py_code {
	uint64_t addr;		/* 0 = empty */
	uint64_t name_p, qualname_p, file_p, linetable_p;
	int32_t firstlineno;
	char *name, *qualname, *file;
	uint8_t *linetable;
	size_t linetable_len;
	enum py_lines kind;	/* of linetable */
	struct { int32_t line; uint64_t loc; } *locs;
	size_t nlocs, locs_cap;
	/* lines of recent instructions, direct-mapped (lasti 0 = empty:
	 * stored as lasti + 2) */
	struct { int64_t lasti2; int32_t line; } lines[LINE_SLOTS];
};

/* One Python frame as read: its code, line and whether it entered the
 * evaluation loop. */
struct py_frame {
	struct py_code *code;
	int32_t line;
	bool entry;
};

/* A thread's frames read while it was stopped (pyrt_snapshot()). */
struct py_snap {
	pid_t tid;
	int ret;		/* of reading them */
	int n, nentry;
	enum pyrt_gil gil;
	struct py_frame *frames;
};

struct pyrt {
	pid_t pid;
	struct profile *p;
	const struct py_offsets *o;	/* NULL: unknown version */
	struct py_offsets own;		/* 3.13's, parsed: o points here */
	unsigned minor;
	char why[160];			/* why nothing is merged */
	uint64_t runtime;		/* address of _PyRuntime */
	uint64_t eval_start, eval_end;	/* _PyEval_EvalFrameDefault */
	struct dso_range *eval;		/* its ranges (.cold parts too) */
	size_t neval;
	uint64_t bias;
	/* A thread's state, and where its last read found its cframe and
	 * its leaf frame's page (0: not yet): the next read guesses them,
	 * checked at its end, in one system call. */
	struct {
		uint32_t tid;
		uint64_t tstate, cframe;
		uint64_t ident;	/* its id at ts_native_tid: tid, or its
				 * pthread_t (3.8-3.10) */
		/* the pages its recent chains were on, the code objects its
		 * recent frames ran: read with the guess, in the same call,
		 * so that a chain found there takes one call in all */
		uint64_t pages[PRE_PAGES];
		uint64_t codes[PRE_CODES];
		uint8_t npages, ncodes;
	} tids[TID_SLOTS];
	uint64_t page_addr[PAGE_SLOTS];	/* 0 = empty, per stack read */
	uint8_t *pages;			/* PAGE_SLOTS * PAGE */
	uint8_t *codebuf;		/* MAX_PY_FRAMES code headers */
	unsigned npages_used;
	uint64_t page_reads;		/* by page_get(), ever */
	struct py_code **codes;		/* open addressing by addr; the
					 * entries never move */
	size_t codes_cap, ncodes;
	struct py_frame frames[MAX_PY_FRAMES];
	struct py_snap *snaps;		/* read while threads were stopped */
	size_t nsnaps, snaps_cap;
	struct pynames *names;		/* pythreads.c's; NULL: none yet */
	/* 3.8-3.10 (pyread.c): where glibc's struct pthread keeps the tid,
	 * 0 until learnt; the tries at it */
	uint32_t tid_off;
	unsigned tid_tries;
	/* The kernel's reading (pybpf.c): the program, whether it is
	 * attached to the session's events, why not when tried and not */
	struct pybpf *bpf;
	bool bpf_on, bpf_tried;
	char bpf_why[120];
	/* the frames of the sample pyrt_bpf_sample() paired last */
	struct {
		pid_t tid;	/* 0: none */
		int ret, n, nentry;
		enum pyrt_gil gil;
	} cur;
	/* counted, for pyrt_note() */
	uint64_t merged, changed, mismatch, no_thread, unreadable;
	uint64_t unmatched;	/* samples with no record of the kernel's */
};

struct pynames;
/* Free pythreads.c's state; NULL is fine. */
void pyrt_names_free(struct pynames *pn);

/* Grow r's code table (twice the slots); 0 or -ENOMEM. */
int pyrt_codes_grow(struct pyrt *r);

/* Reads len bytes of the target at addr: 0, or -EFAULT. */
typedef int (*pyrt_read_fn)(struct pyrt *r, uint64_t addr, void *buf,
			    size_t len);
int pyrt_str(struct pyrt *r, pyrt_read_fn rd, uint64_t addr, char *buf,
	     size_t size);
/* Free what a code entry holds and zero it. */
void pyrt_code_clear(struct py_code *c);

/* The cached code object at addr whose pointers pybpf_sig() gives sig
 * (read from the target when not cached or not the same): 0, -EAGAIN
 * (it is another object now), -EFAULT, -ENOSPC, -ENOMEM. */
int pyrt_code_at(struct pyrt *r, uint64_t addr, uint64_t sig,
		 struct py_code **out);
/* The line of instruction lasti of c (cached), or -1. */
int32_t pyrt_code_line(struct py_code *c, int64_t lasti);

/* The instruction a frame runs, as its line table counts them, from
 * the frame's code object and the word read at fr_instr: 3.11+'s
 * pointer into the code's instructions as their index; 3.8-3.10's int
 * f_lasti as it is. -1: not started. */
static inline int64_t pyrt_lasti(const struct py_offsets *o, uint64_t code,
				 uint64_t instr)
{
	if (o->fr_lasti)
		return (int32_t)(uint32_t)instr;
	return ((int64_t)instr - (int64_t)(code + o->co_code)) / 2;
}

/* A pyrt_read_fn reading the target directly (no cache). */
int pyrt_read(struct pyrt *r, uint64_t addr, void *buf, size_t len);
/* 3.8-3.10 (pyread.c): r->tid_off, learnt from the process through rd
 * when not yet: 0 or -ENOENT. */
int pyrt_tid_off(struct pyrt *r, pyrt_read_fn rd);
/* The thread state ts's id (*ident: the word at ts_native_tid) and
 * whether it is thread tid's: 0 (it is), -ENOENT (not, or not known),
 * -EFAULT. */
int pyrt_tstate_ident(struct pyrt *r, pyrt_read_fn rd, uint64_t ts,
		      pid_t tid, uint64_t *ident);

struct pybpf;
/* Free pybpf.c's state; NULL is fine. */
void pyrt_bpf_free(struct pybpf *b);

#endif
