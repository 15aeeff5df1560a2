// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * unwind.c - unwinding over stack copies: CFI rows cached per pc, and
 * libunwind's remote API for what the rows cannot express.
 *
 * Most stacks are unwound from a pc -> CFI row table (see cfi.h): a row
 * is computed once per distinct pc, then each frame costs one hash probe
 * and a few loads from the stack copy. libunwind, which re-reads its
 * tables and takes a signal-masking lock on every step, serves the rest:
 * a stack is handed to it whole, from the sample's registers, as soon as
 * one of its frames has no usable row (no FDE, a DWARF expression as in
 * PLT stubs and signal trampolines). The rows follow libunwind's rules
 * (where it stops, RSP = CFA, ip - 1 lookups), so both paths give the
 * same frames.
 *
 * For libunwind, find_proc_info hands it the .eh_frame_hdr binary search
 * table of the object holding the ip (UNW_INFO_FORMAT_REMOTE_TABLE), as
 * perf does; libunwind then reads the table and the FDEs through
 * access_mem, which serves them from the dso's mmapped file. Code the
 * .eh_frame does not cover gets its .debug_frame FDE (found by cfi.c)
 * as a one-entry UNW_INFO_FORMAT_TABLE, read from our copy of the section
 * through libunwind's local address space, as perf's
 * dwarf_find_debug_frame() would make it.
 */
#include <errno.h>
#include <libunwind.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/unwind/cfi.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/gopclntab.h"
#include "sampler/unwind/gostack.h"
#include "sampler/runtime/javastack.h"
#include "sampler/unwind/livestack.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/unwind/unwind.h"

/* Not in libunwind's public headers, but exported (perf uses it too). */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as,
					      unw_word_t ip,
					      unw_dyn_info_t *di,
					      unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)

/* Rows kept per session: a few hundred distinct pcs are typical, a big
 * interpreter reaches thousands; past ROWS_MAX the table starts over. */
#define ROWS_MIN 1024
#define ROWS_MAX 65536

/* A pc's row, or why its stacks go to libunwind. */
struct row_val {
	int8_t status;		/* 0, or cfi_row_at()'s error */
	uint8_t top;		/* no caller to find: enum go_top */
	struct cfi_row row;
};

/* One line of the session's row table: the key beside its row, so the
 * probe that finds a pc has fetched its row too (a big program's deep
 * stacks probe tens of pcs a sample in a table of megabytes; with the
 * keys apart, each frame missed the cache twice). */
struct row_slot {
	uint64_t pc;		/* lookup address (ip, or ip - 1); 0 = empty */
	struct row_val v;
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct row_slot) == 64, "a row slot is one line");

struct unwinder {
	struct proc_maps *maps;
	unw_addr_space_t as;
	unsigned maps_generation;
	struct row_slot *rows;	/* open addressing, rows_cap slots */
	void *rows_mem;		/* calloc()'s block holding them */
	size_t rows_cap, rows_n;
	uint64_t fast, slow;	/* stacks unwound by each path */
	struct livestack *live;	/* words past a copy; NULL: none */
	const uint64_t *fp_ips;	/* the kernel's frame-pointer walk of the
				 * next sample (unwinder_set_fp_chain()) */
	size_t fp_n;
	struct javastack *java;	/* NULL: the process is no JVM */
	size_t last_used;	/* of the last unwind_stack() */
	bool last_short;
	bool last_complete;
};

/* What one unwind_stack() call lends the accessors. */
struct unwind_ctx {
	struct unwinder *u;
	const struct unwind_regs *regs;
	const uint8_t *stack;	/* the copy */
	size_t copy_len;
	const uint8_t *live;	/* the live words just past it, if read */
	size_t stack_len;	/* copy_len + the live words' length */
	uint64_t sp;
	size_t used;		/* bytes of the copy read, from its start */
	bool short_copy;	/* a stack word beyond the copy was wanted */
	bool complete;		/* the outermost frame was reached */
	bool live_read;		/* a live word was read (livestack.h) */
	bool switched;		/* on another stack than the copy's */
};

/* Stack words sit below this distance from sp; farther is not stack. */
#define STACK_REACH (1u << 20)

/* The stack up to need bytes from sp, with live words past the copy
 * when the unwinder may read them. */
static bool extend(struct unwind_ctx *ctx, size_t need)
{
	size_t live_len = ctx->stack_len - ctx->copy_len;
	bool ok;

	if (!ctx->u->live)
		return false;
	ok = livestack_extend(ctx->u->live, ctx->sp, ctx->copy_len, need,
			      &ctx->live, &live_len);
	ctx->stack_len = ctx->copy_len + live_len;
	return ok;
}

/* Note a read of the stack word at addr: in the copy or just past it. */
static bool in_copy(struct unwind_ctx *ctx, uint64_t addr)
{
	uint64_t off = addr - ctx->sp;

	if (addr < ctx->sp || off >= STACK_REACH)
		return false;
	if ((ctx->stack_len < 8 || off > ctx->stack_len - 8) &&
	    !extend(ctx, off + 8)) {
		ctx->short_copy = true;
		return false;
	}
	if (off + 8 > ctx->used)
		ctx->used = off + 8;
	if (off + 8 > ctx->copy_len)
		ctx->live_read = true;
	return true;
}

/* A frame unwound with live words is kept only if its return address
 * continues the frame below it (livestack.h). A return address in a
 * mapping that holds no code is a wrong or stale word, never a frame: a
 * ucontext read past a signal frame after the signal stack was reused
 * gave prometheus a "frame" in Go's heap. (One in no mapping may be JIT
 * code newer than the maps: kept.) */
/* Below vm.mmap_min_addr's default nothing is ever mapped. */
#define LOWEST_CODE 0x10000

static bool continues(struct unwind_ctx *ctx, uint64_t callee_pc,
		      uint64_t ra)
{
	bool live = ctx->live_read;
	const struct map_entry *e;

	ctx->live_read = false;
	if (live && !livestack_check(ctx->u->live, callee_pc, ra))
		return false;
	if (ra < LOWEST_CODE)	/* a small number, never an address */
		return false;
	e = maps_find(ctx->u->maps, ra);
	return !e || e->exec;
}

#if UNW_VERSION_MAJOR == 1 && UNW_VERSION_MINOR >= 6 && UNW_VERSION_MINOR <= 8
/* libunwind's own struct table_entry and struct unw_debug_frame_list
 * (src/dwarf/Gfind_proc_info-lsb.c, include/dwarf.h: the same from 1.6
 * to 1.8; 1.5 lacks load_offset): the UNW_INFO_FORMAT_TABLE descriptor. */
struct lu_table_entry {
	int32_t start_ip_offset;
	int32_t fde_offset;
};

struct lu_debug_frame {
	unw_word_t start, end, load_offset;
	char *debug_frame;
	size_t debug_frame_size;
	struct lu_table_entry *index;
	size_t index_size;	/* bytes */
	void *next;
};

/*
 * ip's .debug_frame FDE as a one-entry table over the section copy the
 * dso keeps. libunwind parses it, and later runs its program, from our
 * memory through its local address space; arg is NULL because its local
 * accessors take arg for one of its cursors. Only FDEs cfi.c parsed
 * whole, without expressions (libunwind would evaluate them in the
 * target's memory) and not CIE version 4 (libunwind 1.6 misreads its
 * address size fields) are handed over.
 */
static int find_debug_frame(unw_addr_space_t as, const struct map_entry *e,
			    unw_word_t ip, unw_proc_info_t *pi,
			    int need_unwind_info)
{
	struct dso_debug_frame df;
	struct lu_table_entry ent;
	struct lu_debug_frame list;
	struct cfi_fde fde;
	unw_dyn_info_t di;

	if (cfi_debug_frame_fde(e->dso, ip - e->bias, &df, &fde) ||
	    !fde.plain || fde.end > INT32_MAX || fde.off > INT32_MAX)
		return -UNW_ENOINFO;
	ent = (struct lu_table_entry){ .start_ip_offset = fde.start,
				       .fde_offset = fde.off };
	list = (struct lu_debug_frame){
		.start = e->bias + fde.start, .end = e->bias + fde.end,
		.debug_frame = (char *)df.data, .debug_frame_size = df.size,
		.index = &ent, .index_size = sizeof(ent),
	};
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_TABLE;
	di.start_ip = list.start;
	di.end_ip = list.end;
	di.u.ti.segbase = e->bias;
	di.u.ti.table_data = (unw_word_t *)&list;
	di.u.ti.table_len = sizeof(list) / sizeof(unw_word_t);
	return dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info,
					 NULL);
}
#else
/* Another libunwind: its descriptor's layout is not known here. */
static int find_debug_frame(unw_addr_space_t as, const struct map_entry *e,
			    unw_word_t ip, unw_proc_info_t *pi,
			    int need_unwind_info)
{
	(void)as, (void)e, (void)ip, (void)pi, (void)need_unwind_info;
	return -UNW_ENOINFO;
}
#endif

/* ip's FDE through the .eh_frame_hdr table (in the one form dso.h's
 * dso_eh_table() takes, which libunwind can use too). */
static int find_eh_frame(unw_addr_space_t as, const struct map_entry *e,
			 unw_word_t ip, unw_proc_info_t *pi,
			 int need_unwind_info, void *arg)
{
	struct dso_eh_table t;
	unw_dyn_info_t di;

	if (dso_eh_table(e->dso, &t))
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = e->start;
	di.end_ip = e->end;
	di.u.rti.segbase = e->bias + t.hdr;
	di.u.rti.table_data = e->bias + t.hdr + 12;
	di.u.rti.table_len = t.count * 8 / sizeof(unw_word_t);
	return dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info,
					 arg);
}

static int find_proc_info(unw_addr_space_t as, unw_word_t ip,
			  unw_proc_info_t *pi, int need_unwind_info,
			  void *arg)
{
	struct unwind_ctx *ctx = arg;
	struct map_entry *e = maps_find(ctx->u->maps, ip);
	int ret;

	if (!e || !e->dso)
		return -UNW_ENOINFO;
	ret = find_eh_frame(as, e, ip, pi, need_unwind_info, arg);
	if (ret == -UNW_ENOINFO)
		ret = find_debug_frame(as, e, ip, pi, need_unwind_info);
	return ret;
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi,
			    void *arg)
{
	(void)as;
	(void)pi;
	(void)arg;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr,
				  void *arg)
{
	(void)as;
	(void)addr;
	(void)arg;
	return -UNW_ENOINFO;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr,
		      unw_word_t *valp, int write, void *arg)
{
	struct unwind_ctx *ctx = arg;
	struct map_entry *e;

	(void)as;
	if (write)
		return -UNW_EINVAL;
	if (in_copy(ctx, addr)) {
		*valp = livestack_join(ctx->stack, ctx->copy_len, ctx->live,
				       addr - ctx->sp);
		return 0;
	}
	e = maps_find(ctx->u->maps, addr);
	if (e && e->dso &&
	    !dso_read(e->dso, addr - e->bias, valp, sizeof(*valp)))
		return 0;
	/* Beyond the copy: the live stack has moved on since the sample. */
	*valp = 0;
	return -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t regnum,
		      unw_word_t *valp, int write, void *arg)
{
	struct unwind_ctx *ctx = arg;

	(void)as;
	if (write)
		return -UNW_EINVAL;
	if (regnum < 0 || regnum >= UREG__COUNT)
		return -UNW_EBADREG;
	*valp = ctx->regs->r[regnum];
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t num,
			unw_fpreg_t *val, int write, void *arg)
{
	(void)as;
	(void)num;
	(void)val;
	(void)write;
	(void)arg;
	return -UNW_EINVAL;
}

static int resume(unw_addr_space_t as, unw_cursor_t *cu, void *arg)
{
	(void)as;
	(void)cu;
	(void)arg;
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf,
			 size_t len, unw_word_t *offp, void *arg)
{
	(void)as;
	(void)addr;
	(void)buf;
	(void)len;
	(void)offp;
	(void)arg;
	return -UNW_EINVAL;
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

/* ---- the row cache ---- */

static inline size_t hash_pc(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x;
}

static size_t row_probe(const struct row_slot *t, size_t cap, uint64_t pc)
{
	for (size_t i = hash_pc(pc) & (cap - 1);; i = (i + 1) & (cap - 1))
		if (t[i].pc == pc || !t[i].pc)
			return i;
}

/* A zeroed table of cap slots, on a line boundary: calloc()'s block
 * (fresh zero pages for a big one, nothing touched) into *mem. */
static struct row_slot *rows_alloc(size_t cap, void **mem)
{
	uintptr_t p;

	*mem = calloc(cap + 1, sizeof(struct row_slot));
	if (!*mem)
		return NULL;
	p = ((uintptr_t)*mem + 63) & ~(uintptr_t)63;
	return (struct row_slot *)p;
}

static void rows_clear(struct unwinder *u)
{
	memset(u->rows, 0, u->rows_cap * sizeof(*u->rows));
	u->rows_n = 0;
}

/* Room for one more row: double the table, or, at ROWS_MAX or without
 * memory, start it over (rows are only a cache). */
static void rows_make_room(struct unwinder *u)
{
	size_t ncap = u->rows_cap * 2;
	struct row_slot *nt = NULL;
	void *mem = NULL;

	if ((u->rows_n + 1) * 2 <= u->rows_cap)
		return;
	if (ncap <= ROWS_MAX)
		nt = rows_alloc(ncap, &mem);
	if (!nt) {
		rows_clear(u);
		return;
	}
	for (size_t i = 0; i < u->rows_cap; i++)
		if (u->rows[i].pc)
			nt[row_probe(nt, ncap, u->rows[i].pc)] = u->rows[i];
	free(u->rows_mem);
	u->rows = nt;
	u->rows_mem = mem;
	u->rows_cap = ncap;
}

static void row_compute(struct unwinder *u, struct row_val *v, uint64_t pc)
{
	struct map_entry *e = maps_find(u->maps, pc);

	/* kept with the object by the sessions before (dso.h) */
	if (e && e->dso && dso_row_get(e->dso, pc - e->bias, v, sizeof(*v)))
		return;
	memset(v, 0, sizeof(*v));
	v->status = e && e->dso ? cfi_row_at(e->dso, pc - e->bias, &v->row)
				: -ENOENT;
	if (v->status && e && e->dso && dso_gopcln(e->dso))
		v->status = gostack_row(dso_gopcln(e->dso), pc - e->bias, &v->row);
	else if (!v->status && dso_is_go(e->dso) && gostack_code(u->maps, pc))
		gostack_fp_rule(&v->row);	/* not cgo's C code */
	v->top = e && e->dso && dso_is_go(e->dso) ?
		 gostack_top_frame(dso_symbol_name(e->dso, pc - e->bias)) :
		 GO_NOT_TOP;
	if (e && e->dso && v->status != -ENOMEM)
		dso_row_put(e->dso, pc - e->bias, v, sizeof(*v));
}

/* What is known of lookup address pc, or NULL for pc 0. */
static const struct row_val *row_get(struct unwinder *u, uint64_t pc)
{
	size_t k;

	if (!pc)
		return NULL;
	k = row_probe(u->rows, u->rows_cap, pc);
	if (!u->rows[k].pc) {
		rows_make_room(u);
		k = row_probe(u->rows, u->rows_cap, pc);
		u->rows[k].pc = pc;
		row_compute(u, &u->rows[k].v, pc);
		u->rows_n++;
	}
	return &u->rows[k].v;
}

/* Whether the frame of v is the last to report; then whether it is the
 * outermost one. */
static bool row_top(const struct row_val *v, bool *complete)
{
	if (!v || !v->top || v->top == GO_INJECTED)
		return false;
	*complete = v->top == GO_START;
	return true;
}

/* ---- the cached path ---- */

/* Registers of the frame being unwound, as libunwind tracks them: known
 * (a value we have), and undefined (a rule said so; libunwind's NULL
 * location), which for RBP or the RA ends the stack. */
struct frame {
	uint64_t r[CFI_NREGS];
	uint32_t known, undef;
};

#define BIT(reg) (1u << (reg))

static bool stack_word(struct unwind_ctx *ctx, uint64_t addr, uint64_t *v)
{
	if (ctx->switched) {
		ctx->live_read = true;
		return livestack_word(ctx->u->live, addr, v);
	}
	if (!in_copy(ctx, addr))
		return false;
	*v = livestack_join(ctx->stack, ctx->copy_len, ctx->live,
			    addr - ctx->sp);
	return true;
}

static void apply_rule(const struct cfi_rule *ru, uint64_t cfa,
		       const struct frame *old, struct unwind_ctx *ctx,
		       struct frame *f)
{
	uint32_t bit = BIT(ru->reg);
	bool known = true;

	switch (ru->kind) {
	case CFI_UNDEF:
		f->known &= ~bit;
		f->undef |= bit;
		return;
	case CFI_OFFSET:
		known = stack_word(ctx, cfa + ru->off, &f->r[ru->reg]);
		break;
	case CFI_VAL_OFFSET:
		f->r[ru->reg] = cfa + ru->off;
		break;
	case CFI_REGISTER:
		f->r[ru->reg] = old->r[ru->src];
		known = old->known & BIT(ru->src);
		f->undef = (f->undef & ~bit) | (old->undef & BIT(ru->src));
		break;
	}
	if (ru->kind != CFI_REGISTER)
		f->undef &= ~bit;
	f->known = known ? f->known | bit : f->known & ~bit;
}

/*
 * Step f to its caller with row: 1; 0 at the outermost frame (RA or RBP
 * undefined: what _start and clone's child mark), -1 where the unwind
 * cannot go on (CFA or RA not known, nothing changed). libunwind's
 * unw_step stops at the same places.
 */
static int apply_row(const struct cfi_row *row, struct unwind_ctx *ctx,
		     struct frame *f)
{
	const struct frame old = *f;
	uint64_t cfa;

	if (!(old.known & BIT(row->cfa_reg)))
		return -1;
	cfa = old.r[row->cfa_reg] + (int64_t)row->cfa_off;
	for (int i = 0; i < row->nrules; i++)
		apply_rule(&row->rules[i], cfa, &old, ctx, f);
	/* libunwind's x86-64 RSP is always the CFA. */
	f->r[CFI_REG_RSP] = cfa;
	f->known |= BIT(CFI_REG_RSP);
	f->undef &= ~BIT(CFI_REG_RSP);
	if (f->undef & (BIT(CFI_REG_RA) | BIT(CFI_REG_RBP)))
		return 0;
	if (!(f->known & BIT(CFI_REG_RA)))
		return -1;
	if (f->r[CFI_REG_RA] == old.r[CFI_REG_RA] &&
	    cfa == old.r[CFI_REG_RSP])
		return -1;
	return 1;
}

/* Whether pc is where Go starts a stack (goexit). */
static bool go_start(struct unwinder *u, uint64_t pc)
{
	const struct row_val *v = row_get(u, pc);

	return v && v->top == GO_START;
}

/*
 * The caller's pc, to look up and to report, from its return address ra
 * as found above the frame of callee: the call one byte before it, except
 * above a frame Go's runtime injected (asyncPreempt at a preemption
 * signal, sigpanic at a fault), whose "return address" is the exact pc
 * where the goroutine was interrupted - at a function's first byte, ra - 1
 * would name the function before it, in its padding, without a line (as
 * Go's own traceback, which does not subtract there either).
 */
static uint64_t caller_pc(struct unwinder *u, uint64_t callee, uint64_t ra)
{
	const struct row_val *v = row_get(u, callee);

	return v && v->top == GO_INJECTED ? ra : ra - 1;
}

/*
 * Leave the system stack (g0's) at a Go function that switched to it
 * (systemstack, mcall, morestack, asmcgocall...) for the goroutine's, by
 * its frame pointer: the switch keeps RBP, so the first frame on the
 * system stack saved the goroutine's frame pointer, and the frame it
 * points to leads back to the goroutine's start. The caller whose frame
 * has not saved RBP (the function that called systemstack itself) is
 * not seen: frame pointers skip it, as they skip it in Go's own
 * frame-pointer tracebacks. The words are read from the process (the
 * copy holds the system stack), each later frame checked as any live
 * frame is. false: stop here.
 */
static bool go_switch(struct unwinder *u, struct unwind_ctx *ctx,
		      struct frame *f, uint64_t *lookup)
{
	uint64_t bp = f->r[CFI_REG_RBP], caller_bp, ra;

	if (!u->live || !(f->known & BIT(CFI_REG_RBP)) || !bp || bp & 7 ||
	    !livestack_word(u->live, bp, &caller_bp) ||
	    !livestack_word(u->live, bp + 8, &ra) || !ra ||
	    !(gostack_return(u->maps, ra) || go_start(u, ra - 1)))
		return false;
	f->r[CFI_REG_RSP] = bp + 16;
	f->r[CFI_REG_RBP] = caller_bp;
	f->r[CFI_REG_RA] = ra;
	f->known = BIT(CFI_REG_RSP) | BIT(CFI_REG_RBP) | BIT(CFI_REG_RA);
	f->undef = 0;
	ctx->switched = true;
	ctx->live_read = false;
	*lookup = ra - 1;
	return true;
}

/*
 * Leave the system stack as go_switch() does, with the frames the kernel
 * walked by frame pointers at the sample: the one that returns into the
 * switching function (lookup itself when exact: the leaf's pc, or the pc
 * above a frame the runtime or the kernel made, GO_INJECTED), then the
 * rest, taken while they are Go code, up to goexit. Race-free where
 * go_switch() reads a goroutine stack that may have moved on since.
 * false when the walk does not hold the switch: then go_switch().
 */
static bool go_switch_chain(struct unwinder *u, struct unwind_ctx *ctx,
			    const struct frame *f, uint64_t lookup, bool exact,
			    uint64_t *pcs, int max, int *cnt)
{
	uint64_t want = exact ? lookup : lookup + 1, gap[2];
	size_t k = 0;
	int added = 0, ngap;

	while (k < u->fp_n && u->fp_ips[k] != want)
		k++;
	if (f && k + 1 < u->fp_n && (f->known & BIT(CFI_REG_RBP))) {
		ngap = u->live ? gostack_gap(u->maps, u->live,
					     f->r[CFI_REG_RBP], lookup,
					     u->fp_ips[k + 1], gap) : 0;
		for (int i = 0; i < ngap && *cnt < max; i++, added++)
			pcs[(*cnt)++] = gap[i];
	}
	for (k++; k < u->fp_n && *cnt < max; k++) {
		uint64_t ra = u->fp_ips[k];
		bool start = ra && go_start(u, ra - 1);

		if (!start && (!ra || !gostack_return(u->maps, ra)))
			break;
		pcs[*cnt] = caller_pc(u, pcs[*cnt - 1], ra);
		(*cnt)++;
		added++;
		if (start) {
			ctx->complete = true;
			break;
		}
	}
	return added > 0;
}

static bool java_word(void *arg, uint64_t addr, uint64_t *v)
{
	return stack_word(arg, addr, v);
}

/* Frames in a JVM's code cache: by their return addresses
 * (javastack.h); an interpreted frame's *pc becomes its Method. false:
 * not such a frame, or no caller found. */
static bool java_step(struct unwinder *u, struct unwind_ctx *ctx,
		      struct frame *f, uint64_t lookup, uint64_t *pc)
{
	uint64_t ra, sp, bp, method;
	bool bp_known;

	if (!u->java || !(f->known & BIT(CFI_REG_RSP)) ||
	    !javastack_code(u->java, lookup) ||
	    !javastack_step(u->java, java_word, ctx, lookup,
			    f->r[CFI_REG_RSP], f->r[CFI_REG_RBP], &ra, &sp,
			    &bp, &bp_known, &method))
		return false;
	/* an interpreted frame: its Method stands for its pc */
	if (method)
		*pc = method;
	if (!(f->known & BIT(CFI_REG_RBP)) && sp == f->r[CFI_REG_RSP] + 8)
		bp_known = false;
	f->r[CFI_REG_RSP] = sp;
	f->r[CFI_REG_RBP] = bp;
	f->r[CFI_REG_RA] = ra;
	f->known = BIT(CFI_REG_RSP) | BIT(CFI_REG_RA) |
		   (bp_known ? BIT(CFI_REG_RBP) : 0);
	f->undef = 0;
	return true;
}

/* Stack switches followed in one unwind at most (a signal's stack, the
 * system stack, the goroutine's). */
#define GO_SWITCHES 3

/* 0 with the frames in pcs, or -EAGAIN when a frame has no row. */
static int unwind_cached(struct unwinder *u, struct unwind_ctx *ctx,
			 uint64_t *pcs, int max, int *n)
{
	struct frame f = { .known = BIT(CFI_NREGS) - 1 };
	uint64_t lookup = ctx->regs->r[UREG_RIP];	/* the leaf is exact */
	bool exact = true;	/* lookup is a pc, not a return address - 1 */
	int cnt = 0, switches = 0;

	_Static_assert(CFI_NREGS == UREG__COUNT, "register numbering");
	memcpy(f.r, ctx->regs->r, sizeof(f.r));
	pcs[cnt++] = lookup;
	while (cnt < max) {
		const struct row_val *v = row_get(u, lookup);
		bool injected;
		int step;

		if (v && v->top == GO_SWITCH && !switches &&
		    go_switch_chain(u, ctx, &f, lookup, exact, pcs, max,
				    &cnt))
			break;
		if (v && v->top == GO_SWITCH && switches < GO_SWITCHES &&
		    go_switch(u, ctx, &f, &lookup)) {
			exact = false;
			switches++;
			pcs[cnt++] = lookup;
			continue;
		}
		if (row_top(v, &ctx->complete))
			break;
		if (v && v->status &&
		    java_step(u, ctx, &f, lookup, &pcs[cnt - 1])) {
			step = 1;
		} else if (!v || v->status || v->row.signal) {
			return -EAGAIN;
		} else {
			step = apply_row(&v->row, ctx, &f);
		}
		if (step <= 0 || !f.r[CFI_REG_RA]) {
			ctx->complete = step >= 0;
			break;
		}
		injected = v->top == GO_INJECTED;	/* v: go_start() moves */
		/* (a goroutine's first return address is goexit's first
		 * byte plus one, made by newproc, after no call) */
		if (!continues(ctx, lookup, f.r[CFI_REG_RA]) &&
		    !go_start(u, f.r[CFI_REG_RA] - 1))
			break;
		/* A return address points after the call; the call itself is
		 * one byte earlier (a signal frame's would not be: those go
		 * to libunwind; nor one Go's runtime injected): caller_pc(),
		 * with the row at hand. */
		lookup = f.r[CFI_REG_RA] - !injected;
		exact = injected;
		pcs[cnt++] = lookup;
	}
	/* A Go stack cut short (a live frame refused: the goroutine's
	 * stack moved when it grew) goes on with the kernel's walk. */
	if (!ctx->complete && cnt < max)
		go_switch_chain(u, ctx, NULL, lookup, exact, pcs, max,
				&cnt);
	*n = cnt;
	return 0;
}

/* ---- libunwind ---- */

/* Whether ip, a handler's return address, is a signal's restorer: the
 * kernel made its first byte the return address, so it is named there,
 * not one byte back, as gdb and Go's traceback name it (perf's DWARF
 * unwinding stops at the handler). glibc starts __restore_rt's CFI
 * (a signal frame's, 'S') at the nop before it for unwinders that look
 * one byte back; that nop has no name (libc.so.6+0x3c04f where
 * __restore_rt is 0x3c050). */
static bool is_restorer(struct unwinder *u, uint64_t ip)
{
	const struct row_val *v = row_get(u, ip - 1);

	return v && v->row.signal;	/* whatever the status: to_row() */
}

static void unwind_libunwind(struct unwinder *u, struct unwind_ctx *ctx,
			     uint64_t *pcs, int max, int *n)
{
	unw_cursor_t c;
	int cnt = 0;

	pcs[cnt++] = ctx->regs->r[UREG_RIP];
	if (max <= 1 || unw_init_remote(&c, u->as, ctx) < 0)
		goto out;
	while (cnt < max) {
		unw_word_t ip;
		int step;

		if (row_top(row_get(u, pcs[cnt - 1]), &ctx->complete))
			break;
		step = unw_step(&c);
		if (step <= 0) {
			ctx->complete = step == 0;
			break;
		}
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0)
			break;
		if (!ip) {
			ctx->complete = true;
			break;
		}
		if (!continues(ctx, pcs[cnt - 1], ip))
			break;
		/* A return address points after the call; the call itself is
		 * one byte earlier. A frame interrupted by a signal was not
		 * calling anything: libunwind says so of the cursor the step
		 * out of the signal frame left (its mark is the frame last
		 * stepped from, as perf reads it), not of the signal frame. */
		pcs[cnt++] = unw_is_signal_frame(&c) > 0 ||
			     is_restorer(u, ip) ? ip : ip - 1;
	}
out:
	*n = cnt;
}

int unwinder_new(struct proc_maps *maps, struct unwinder **out)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->maps = maps;
	u->as = unw_create_addr_space(&accessors, 0);
	if (!u->as) {
		free(u);
		return -ENOMEM;
	}
	/* CFI does not change while a mapping stays: cache it per ip. */
	unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
	if (javastack_new(maps, &u->java)) {
		unwinder_free(u);
		return -ENOMEM;
	}
	u->maps_generation = maps_generation(maps);
	u->rows_cap = ROWS_MIN;
	u->rows = rows_alloc(u->rows_cap, &u->rows_mem);
	if (!u->rows) {
		unwinder_free(u);
		return -ENOMEM;
	}
	*out = u;
	return 0;
}

/* unw_create_addr_space() with a global cache, measured (mallinfo2,
 * libunwind 1.6, x86-64): its rs cache lives in the space itself. */
#define LIBUNWIND_AS_BYTES (27 * 1024)

size_t unwinder_mem_bytes(const struct unwinder *u)
{
	if (!u)
		return 0;
	return sizeof(*u) + LIBUNWIND_AS_BYTES +
	       (u->rows_cap + 1) * sizeof(*u->rows);
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	pr_debug("unwind: %llu stacks from cached CFI rows (%zu rows), "
		 "%llu through libunwind", (unsigned long long)u->fast,
		 u->rows_n, (unsigned long long)u->slow);
	if (u->live) {
		uint64_t reads, refused;

		livestack_stats(u->live, &reads, &refused);
		pr_debug("unwind: %llu stacks read past their copy, %llu "
			 "frames of them refused", (unsigned long long)reads,
			 (unsigned long long)refused);
		livestack_free(u->live);
	}
	unw_destroy_addr_space(u->as);
	javastack_free(u->java);
	free(u->rows_mem);
	free(u);
}

int unwind_stack(struct unwinder *u, const struct unwind_regs *regs,
		 const void *stack, size_t stack_len, uint64_t *pcs, int max,
		 int *n)
{
	struct unwind_ctx ctx = {
		.u = u, .regs = regs, .stack = stack, .stack_len = stack_len,
		.copy_len = stack_len, .sp = regs->r[UREG_RSP],
	};

	if (u->maps_generation != maps_generation(u->maps)) {
		unw_flush_cache(u->as, 0, 0);
		rows_clear(u);
		u->maps_generation = maps_generation(u->maps);
	}
	if (u->live)
		livestack_begin(u->live);
	/* The frames' words are a few a frame, strewn up the copy, each a
	 * cache miss in a ring the kernel wrote a while ago: ask for the
	 * lines the last stack used, ahead of the loads that need them. */
	for (size_t at = 0; at < u->last_used && at < stack_len; at += 64)
		__builtin_prefetch((const uint8_t *)stack + at);
	if (max >= 1 && !unwind_cached(u, &ctx, pcs, max, n)) {
		u->fast++;
	} else {
		u->slow++;
		ctx.live_read = false;
		unwind_libunwind(u, &ctx, pcs, max, n);
	}
	u->fp_n = 0;
	u->last_used = ctx.used;
	u->last_short = ctx.short_copy;
	u->last_complete = ctx.complete;
	return 0;
}

void unwinder_set_fp_chain(struct unwinder *u, const uint64_t *ips,
			   size_t n)
{
	u->fp_ips = ips;
	u->fp_n = n;
}

int unwinder_read_live(struct unwinder *u, pid_t pid)
{
	livestack_free(u->live);
	u->live = NULL;
	return livestack_new(pid, u->maps, &u->live);
}

void unwind_last_stack_use(const struct unwinder *u, size_t *used,
			   bool *short_copy)
{
	*used = u->last_used;
	*short_copy = u->last_short;
}

bool unwind_last_complete(const struct unwinder *u)
{
	return u->last_complete;
}
