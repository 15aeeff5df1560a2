// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * heap_pair.c - entries and returns of allocator calls into allocations
 * and frees (heap_pair.h): a small stack of pending calls per thread, in
 * a hash table of threads.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/heap/heap_pair.h"

struct slot {
	struct heap_pair_call call;
	uint64_t rsp;		/* at the entry: the return address's */
	uint64_t args[3];	/* rdi, rsi, rdx */
	bool nested;		/* inside another call: not counted */
	void *buf;		/* owns call.stack's bytes */
	size_t cap;
};

struct thread {
	uint32_t tid;
	int n;			/* pending calls, outermost first */
	struct slot s[HEAP_PAIR_MAX_NEST];
};

struct heap_pair {
	struct heap_pair_ops ops;
	void *arg;
	struct thread **t;	/* open addressing by tid */
	size_t cap, n;		/* cap: a power of two */
	struct heap_pair_stats st;
};

static const char *const fn_names[HEAP_FN__COUNT] = {
	[HEAP_FN_MALLOC] = "malloc",
	[HEAP_FN_CALLOC] = "calloc",
	[HEAP_FN_REALLOC] = "realloc",
	[HEAP_FN_FREE] = "free",
	[HEAP_FN_POSIX_MEMALIGN] = "posix_memalign",
	[HEAP_FN_ALIGNED_ALLOC] = "aligned_alloc",
	[HEAP_FN_MEMALIGN] = "memalign",
	[HEAP_FN_VALLOC] = "valloc",
	[HEAP_FN_PVALLOC] = "pvalloc",
};

const char *heap_fn_name(enum heap_fn fn)
{
	return (unsigned)fn < HEAP_FN__COUNT ? fn_names[fn] : "?";
}

int heap_pair_new(const struct heap_pair_ops *ops, void *arg,
		  struct heap_pair **out)
{
	struct heap_pair *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->ops = *ops;
	p->arg = arg;
	*out = p;
	return 0;
}

void heap_pair_free(struct heap_pair *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->cap; i++) {
		if (!p->t[i])
			continue;
		for (int k = 0; k < HEAP_PAIR_MAX_NEST; k++)
			free(p->t[i]->s[k].buf);
		free(p->t[i]);
	}
	free(p->t);
	free(p);
}

void heap_pair_stats(const struct heap_pair *p, struct heap_pair_stats *st)
{
	*st = p->st;
}

/* ---- threads ---- */

static size_t slot_of(uint32_t tid, size_t cap)
{
	return ((uint64_t)tid * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
}

static int grow_threads(struct heap_pair *p)
{
	size_t cap = p->cap ? p->cap * 2 : 64;
	struct thread **t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < p->cap; i++) {
		size_t k;

		if (!p->t[i])
			continue;
		k = slot_of(p->t[i]->tid, cap);
		while (t[k])
			k = (k + 1) & (cap - 1);
		t[k] = p->t[i];
	}
	free(p->t);
	p->t = t;
	p->cap = cap;
	return 0;
}

static struct thread *thread_of(struct heap_pair *p, uint32_t tid, bool add)
{
	size_t k;

	for (k = p->cap ? slot_of(tid, p->cap) : 0; p->cap && p->t[k];
	     k = (k + 1) & (p->cap - 1))
		if (p->t[k]->tid == tid)
			return p->t[k];
	if (!add)
		return NULL;
	if ((p->n + 1) * 2 > p->cap && grow_threads(p))
		return NULL;
	for (k = slot_of(tid, p->cap); p->t[k]; k = (k + 1) & (p->cap - 1))
		;
	p->t[k] = calloc(1, sizeof(**p->t));
	if (!p->t[k])
		return NULL;
	p->t[k]->tid = tid;
	p->n++;
	return p->t[k];
}

/* Forget the pending calls from index i up (outermost first), their
 * returns unseen. */
static void drop_from(struct heap_pair *p, struct thread *t, int i)
{
	if (i < t->n) {
		p->st.dropped += t->n - i;
		t->n = i;
	}
}

/* Drop what a stack pointer of sp proves stale: calls at or below it
 * (returned unseen: sp is a new entry's, or a return's minus 8 for
 * deeper ones) or too far above to enclose it (another stack). */
static void prune(struct heap_pair *p, struct thread *t, uint64_t sp,
		  bool at_or_below)
{
	int keep = 0;

	while (keep < t->n) {
		uint64_t r = t->s[keep].rsp;

		if (r < sp || (at_or_below && r == sp))
			break;
		keep++;
	}
	drop_from(p, t, keep);
	/* The outermost ones too far above: all of them or none. */
	while (t->n && t->s[0].rsp - sp > HEAP_PAIR_NEST_SPAN) {
		struct slot gone = t->s[0];

		p->st.dropped++;
		memmove(&t->s[0], &t->s[1], (t->n - 1) * sizeof(t->s[0]));
		t->s[--t->n] = gone;	/* its buffer stays ours */
	}
}

/* ---- entries and returns ---- */

/* An entry at the stack pointer of the pending call on top, whose return
 * address is the trampoline: that call jumped here, and is active. */
static bool tail_call(const struct heap_pair *p, const struct thread *t,
		      uint64_t sp, const void *stack, size_t stack_len)
{
	uint64_t ret;

	if (!t->n || t->s[t->n - 1].rsp != sp || stack_len < sizeof(ret) ||
	    !p->ops.trampoline)
		return false;
	memcpy(&ret, stack, sizeof(ret));
	return p->ops.trampoline(p->arg, ret);
}

static int keep_stack(struct slot *s, const void *stack, size_t len)
{
	if (len > s->cap) {
		void *b = realloc(s->buf, len);

		if (!b)
			return -ENOMEM;
		s->buf = b;
		s->cap = len;
	}
	if (len)
		memcpy(s->buf, stack, len);
	s->call.stack = s->buf;
	s->call.stack_len = len;
	return 0;
}

int heap_pair_entry(struct heap_pair *p, uint32_t tid, enum heap_fn fn,
		    const struct unwind_regs *regs, const void *stack,
		    size_t stack_len)
{
	uint64_t sp = regs->r[UREG_RSP];
	struct thread *t = thread_of(p, tid, true);
	bool nested;
	struct slot *s;

	if (!t)
		return -ENOMEM;
	prune(p, t, sp, !tail_call(p, t, sp, stack, stack_len));
	nested = t->n > 0;
	if (nested)
		p->st.nested++;
	if (fn == HEAP_FN_FREE || (fn == HEAP_FN_REALLOC && !nested &&
				   regs->r[UREG_RDI])) {
		/* Before the allocator can give the block to another thread
		 * (the agent does the same). */
		if (!nested) {
			p->st.frees++;
			p->ops.free(p->arg, regs->r[UREG_RDI]);
		}
		if (fn == HEAP_FN_FREE)
			return 0;
	}
	if (t->n == HEAP_PAIR_MAX_NEST)	/* runaway nesting: keep the outer */
		return 0;
	s = &t->s[t->n];
	s->call.fn = fn;
	s->call.tid = tid;
	s->call.regs = *regs;
	s->rsp = sp;
	s->args[0] = regs->r[UREG_RDI];
	s->args[1] = regs->r[UREG_RSI];
	s->args[2] = regs->r[UREG_RDX];
	s->nested = nested;
	s->call.stack = NULL;
	s->call.stack_len = 0;
	if (!nested && keep_stack(s, stack, stack_len))
		return -ENOMEM;
	t->n++;
	return 0;
}

/* The block an outermost call returned, and its size; false if none. */
static bool result(struct heap_pair *p, const struct slot *s, uint64_t rax,
		   uint64_t *addr, uint64_t *size)
{
	const uint64_t *a = s->args;

	switch (s->call.fn) {
	case HEAP_FN_MALLOC:
	case HEAP_FN_VALLOC:
	case HEAP_FN_PVALLOC:
		*size = a[0];
		break;
	case HEAP_FN_CALLOC:
		if (__builtin_mul_overflow(a[0], a[1], size))
			return false;
		break;
	case HEAP_FN_REALLOC:
	case HEAP_FN_ALIGNED_ALLOC:
	case HEAP_FN_MEMALIGN:
		*size = a[1];
		break;
	case HEAP_FN_POSIX_MEMALIGN:
		if ((int)rax != 0)
			return false;
		*size = a[2];
		if (!p->ops.read_ptr || p->ops.read_ptr(p->arg, a[0], addr))
			*addr = 0;
		return true;
	default:
		return false;
	}
	*addr = rax;
	return rax != 0;
}

void heap_pair_return(struct heap_pair *p, uint32_t tid, uint64_t rsp,
		      uint64_t rax)
{
	struct thread *t = thread_of(p, tid, false);
	uint64_t entry_sp = rsp - 8, addr, size;
	struct slot *s;

	if (!t) {
		p->st.unpaired++;
		return;
	}
	prune(p, t, entry_sp, false);
	s = t->n ? &t->s[t->n - 1] : NULL;
	if (!s || s->rsp != entry_sp) {
		p->st.unpaired++;
		return;
	}
	t->n--;
	if (s->nested)
		return;
	p->st.calls++;
	if (result(p, s, rax, &addr, &size))
		p->ops.alloc(p->arg, &s->call, addr, size);
}
