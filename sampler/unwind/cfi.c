// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * cfi.c - the CFI row at one address: .eh_frame_hdr binary search, then
 * the CIE's and the FDE's call frame programs run up to the address
 * (DWARF 5 §6.4.1, and the LSB's .eh_frame encoding of it). Code without
 * an .eh_frame FDE is looked up in .debug_frame, the same records in
 * DWARF's own form (CIE id all ones, CIE pointers as section offsets,
 * absolute addresses, CIE version 4), through a table of its FDEs sorted
 * by address, built once per object and kept by the dso.
 *
 * Rows are computed the way libunwind computes them, so that the cached
 * unwinder built on them stops where libunwind stops: every register
 * starts as "same value", the program runs while the location is <= the
 * address, and DW_CFA_restore takes the CIE's rule.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/unwind/cfi.h"
#include "sampler/unwind/dso.h"

#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sleb128 0x09
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_indirect 0x80
#define DW_EH_PE_omit 0xff

enum {
	DW_CFA_nop = 0x00, DW_CFA_set_loc, DW_CFA_advance_loc1,
	DW_CFA_advance_loc2, DW_CFA_advance_loc4, DW_CFA_offset_extended,
	DW_CFA_restore_extended, DW_CFA_undefined, DW_CFA_same_value,
	DW_CFA_register, DW_CFA_remember_state, DW_CFA_restore_state,
	DW_CFA_def_cfa, DW_CFA_def_cfa_register, DW_CFA_def_cfa_offset,
	DW_CFA_def_cfa_expression, DW_CFA_expression,
	DW_CFA_offset_extended_sf, DW_CFA_def_cfa_sf,
	DW_CFA_def_cfa_offset_sf, DW_CFA_val_offset, DW_CFA_val_offset_sf,
	DW_CFA_val_expression,
	DW_CFA_GNU_args_size = 0x2e, DW_CFA_GNU_negative_offset_extended,
};

/* Bigger CIEs or FDEs than this are not code a compiler made. */
#define MAX_RECORD (1u << 20)
/* remember_state nesting; compilers use one level. */
#define STATE_DEPTH 8
/* Rule kinds beyond enum cfi_rule_kind, while a program runs. */
#define RULE_SAME 0
#define RULE_EXPR 0x7f

struct reader {
	const uint8_t *base, *p, *end;
	uint64_t vaddr;		/* of base, for pc-relative pointers */
	bool debug;		/* .debug_frame: nothing is pc-relative */
	bool bad;		/* read past end, or an unsupported encoding */
};

struct rule {
	uint8_t kind;
	uint8_t src;
	int64_t off;
};

struct state {
	uint64_t cfa_reg;
	int64_t cfa_off;
	bool cfa_expr;
	struct rule r[CFI_NREGS];
};

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	bool has_aug_data;	/* 'z': FDEs carry an augmentation length */
	bool signal;
	uint8_t version;
	struct reader insns;
};

/* Where records are read from: .eh_frame in the object's loaded image,
 * by vaddr, or a copy of .debug_frame, by section offset. */
struct source {
	const struct dso *d;
	const uint8_t *data;	/* .debug_frame; NULL for .eh_frame */
	size_t size;
};

/* One CIE or FDE, where it lies: the object's mapped file, or the copy
 * of .debug_frame. Both last as long as the dso; a reader stops at len. */
struct record {
	const uint8_t *buf;
	uint64_t vaddr;		/* .debug_frame: section offset */
	size_t len;		/* whole record, length field included */
	size_t id_at;		/* offset of the CIE id / CIE pointer */
	size_t id_size;		/* 4, or 8 in the 64-bit format */
	bool debug;
};

/* A .debug_frame FDE in the search table. */
struct df_fde {
	uint64_t start, end;	/* ELF vaddrs covered */
	uint64_t off;		/* of the FDE in the section */
	bool plain;		/* no expression, CIE version 1 or 3 */
};

struct df_index {
	size_t n;
	struct df_fde fde[];
};

static uint64_t rd_fixed(struct reader *r, size_t n)
{
	uint64_t v = 0;

	if ((size_t)(r->end - r->p) < n) {
		r->bad = true;
		r->p = r->end;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

/*
 * An offset factored by a CIE's alignment. Hostile CFI can make the
 * product overflow: it wraps (a nonsense offset, which the unwinder's
 * bounds checks reject) instead of being undefined.
 */
static int64_t scaled(uint64_t v, int64_t align)
{
	return (int64_t)(v * (uint64_t)align);
}

static uint8_t rd_u8(struct reader *r)
{
	return rd_fixed(r, 1);
}

/* A LEB128 number's bits, and how far they reach (for the sign). */
static uint64_t rd_leb(struct reader *r, unsigned *shift, uint8_t *last)
{
	uint64_t v = 0;
	uint8_t b;

	*shift = 0;
	do {
		if (r->p >= r->end) {
			r->bad = true;
			*last = 0;
			return 0;
		}
		b = *r->p++;
		if (*shift < 64)
			v |= (uint64_t)(b & 0x7f) << *shift;
		*shift += 7;
	} while (b & 0x80);
	*last = b;
	return v;
}

static uint64_t rd_uleb(struct reader *r)
{
	unsigned shift;
	uint8_t last;

	return rd_leb(r, &shift, &last);
}

static int64_t rd_sleb(struct reader *r)
{
	unsigned shift;
	uint8_t last;
	uint64_t v = rd_leb(r, &shift, &last);

	if (shift < 64 && (last & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

/* The value of an encoded pointer, before any relocation. */
static uint64_t rd_enc_value(struct reader *r, uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return rd_fixed(r, 8);
	case DW_EH_PE_uleb128:
		return rd_uleb(r);
	case DW_EH_PE_sleb128:
		return rd_sleb(r);
	case DW_EH_PE_udata2:
		return rd_fixed(r, 2);
	case DW_EH_PE_sdata2:
		return (int64_t)(int16_t)rd_fixed(r, 2);
	case DW_EH_PE_udata4:
		return rd_fixed(r, 4);
	case DW_EH_PE_sdata4:
		return (int64_t)(int32_t)rd_fixed(r, 4);
	default:
		r->bad = true;
		return 0;
	}
}

/* An FDE's address: absolute or pc-relative (what linkers emit). */
static uint64_t rd_address(struct reader *r, uint8_t enc)
{
	uint64_t at = r->vaddr + (uint64_t)(r->p - r->base);
	uint64_t v = rd_enc_value(r, enc);

	if (enc & DW_EH_PE_indirect)
		r->bad = true;
	switch (enc & 0x70) {
	case 0:
		return v;
	case DW_EH_PE_pcrel:
		if (r->debug)
			break;
		return v + at;
	}
	r->bad = true;
	return 0;
}

/* The len bytes at at of s, or NULL. */
static const uint8_t *src_bytes(const struct source *s, uint64_t at,
				size_t len)
{
	if (!s->data)
		return dso_bytes(s->d, at, len);
	if (at > s->size || len > s->size - at)
		return NULL;
	return s->data + at;
}

static int src_read(const struct source *s, uint64_t at, void *buf,
		    size_t len)
{
	const uint8_t *p = src_bytes(s, at, len);

	if (!p)
		return -EINVAL;
	memcpy(buf, p, len);
	return 0;
}

/* The CIE or FDE at vaddr (section offset) of the object. */
static int read_record(const struct source *s, uint64_t vaddr,
		       struct record *rec)
{
	uint32_t len32;
	uint64_t len;
	size_t hdr = 4;

	if (src_read(s, vaddr, &len32, sizeof(len32)))
		return -EINVAL;
	len = len32;
	if (len32 == 0xffffffff) {
		if (src_read(s, vaddr + 4, &len, sizeof(len)))
			return -EINVAL;
		hdr = 12;
	}
	if (!len || len > MAX_RECORD)
		return -EINVAL;
	rec->len = hdr + len;
	rec->id_at = hdr;
	rec->id_size = hdr == 4 ? 4 : 8;
	if (len < rec->id_size)
		return -EINVAL;
	rec->vaddr = vaddr;
	rec->debug = s->data != NULL;
	rec->buf = src_bytes(s, vaddr, rec->len);
	return rec->buf ? 0 : -EINVAL;
}

static struct reader record_reader(const struct record *rec, size_t at)
{
	return (struct reader){ .base = rec->buf, .p = rec->buf + at,
				.end = rec->buf + rec->len,
				.vaddr = rec->vaddr, .debug = rec->debug };
}

/* The augmentation string and data we need: the FDE pointer encoding
 * ('R') and the signal frame mark ('S'). */
static int parse_augmentation(struct reader *r, const char *aug,
			      struct cie *c)
{
	const uint8_t *data_end = NULL;

	if (aug[0] == 'z') {
		uint64_t len = rd_uleb(r);

		if (r->bad || len > (uint64_t)(r->end - r->p))
			return -EINVAL;
		data_end = r->p + len;
		c->has_aug_data = true;
		aug++;
	} else if (aug[0]) {
		return -ENOTSUP;	/* e.g. the pre-'z' "eh" */
	}
	for (; *aug; aug++) {
		if (*aug == 'R') {
			c->fde_enc = rd_u8(r);
		} else if (*aug == 'L') {
			rd_u8(r);
		} else if (*aug == 'P') {
			rd_enc_value(r, rd_u8(r) & 0x0f);
		} else if (*aug == 'S') {
			c->signal = true;
		} else if (*aug != 'B') {
			/* Unknown: its data size is unknown, the rest of the
			 * data cannot be parsed. */
			return -ENOTSUP;
		}
	}
	if (r->bad)
		return -EINVAL;
	if (data_end)
		r->p = data_end;
	return 0;
}

static int parse_cie(const struct record *rec, struct cie *c)
{
	struct reader r = record_reader(rec, rec->id_at + rec->id_size);
	const char *aug;
	uint8_t version;
	int ret;

	memset(c, 0, sizeof(*c));
	c->fde_enc = DW_EH_PE_absptr;
	version = rd_u8(&r);
	if (version != 1 && version != 3 && !(rec->debug && version == 4))
		return -ENOTSUP;
	c->version = version;
	aug = (const char *)r.p;
	if (!memchr(aug, '\0', r.end - r.p))
		return -EINVAL;
	r.p += strlen(aug) + 1;
	/* DWARF 4's address and segment selector sizes */
	if (version == 4 && (rd_u8(&r) != 8 || rd_u8(&r) != 0))
		return r.bad ? -EINVAL : -ENOTSUP;
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_u8(&r) : rd_uleb(&r);
	if (r.bad)
		return -EINVAL;
	ret = parse_augmentation(&r, aug, c);
	if (ret)
		return ret;
	c->insns = r;
	return 0;
}

static void set_rule(struct state *s, uint64_t reg, uint8_t kind,
		     int64_t off, uint64_t src)
{
	if (reg >= CFI_NREGS)
		return;		/* vector registers: not needed to unwind */
	s->r[reg].kind = kind;
	s->r[reg].off = off;
	/* A source the row cannot name makes the rule unusable. */
	if (kind == CFI_REGISTER && src >= CFI_NREGS)
		s->r[reg].kind = RULE_EXPR;
	s->r[reg].src = src < CFI_NREGS ? src : 0;
}

static void def_cfa(struct state *s, uint64_t reg, int64_t off)
{
	s->cfa_reg = reg;
	s->cfa_off = off;
	s->cfa_expr = false;
}

static void skip_block(struct reader *r)
{
	uint64_t len = rd_uleb(r);

	if (len > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		r->p = r->end;
		return;
	}
	r->p += len;
}

/* What runs the program: the row being built and what restore needs. */
struct machine {
	const struct cie *cie;
	const struct state *init;	/* the CIE's row; NULL while it runs */
	struct state s;
	struct state saved[STATE_DEPTH];
	int depth;
	uint64_t loc, target;
	bool expr;		/* a DWARF expression was met */
};

static void restore(struct machine *m, uint64_t reg)
{
	if (reg >= CFI_NREGS)
		return;
	if (m->init)
		m->s.r[reg] = m->init->r[reg];
	else
		m->s.r[reg] = (struct rule){ .kind = RULE_SAME };
}

/* Advance the location; 1 when it passes the target (the row is done). */
static int advance(struct machine *m, uint64_t delta)
{
	m->loc += delta * m->cie->code_align;
	return m->loc > m->target;
}

/* The rules about registers and the saved-state stack. */
static int exec_reg_op(struct machine *m, struct reader *r, uint8_t op)
{
	const struct cie *c = m->cie;
	uint64_t reg, src;

	switch (op) {
	case DW_CFA_offset_extended:
		reg = rd_uleb(r);
		set_rule(&m->s, reg, CFI_OFFSET,
			 scaled(rd_uleb(r), c->data_align), 0);
		return 0;
	case DW_CFA_offset_extended_sf:
		reg = rd_uleb(r);
		set_rule(&m->s, reg, CFI_OFFSET,
			 scaled(rd_sleb(r), c->data_align), 0);
		return 0;
	case DW_CFA_GNU_negative_offset_extended:
		reg = rd_uleb(r);
		set_rule(&m->s, reg, CFI_OFFSET,
			 scaled(-rd_uleb(r), c->data_align), 0);
		return 0;
	case DW_CFA_val_offset:
		reg = rd_uleb(r);
		set_rule(&m->s, reg, CFI_VAL_OFFSET,
			 scaled(rd_uleb(r), c->data_align), 0);
		return 0;
	case DW_CFA_val_offset_sf:
		reg = rd_uleb(r);
		set_rule(&m->s, reg, CFI_VAL_OFFSET,
			 scaled(rd_sleb(r), c->data_align), 0);
		return 0;
	case DW_CFA_restore_extended:
		restore(m, rd_uleb(r));
		return 0;
	case DW_CFA_undefined:
		set_rule(&m->s, rd_uleb(r), CFI_UNDEF, 0, 0);
		return 0;
	case DW_CFA_same_value:
		set_rule(&m->s, rd_uleb(r), RULE_SAME, 0, 0);
		return 0;
	case DW_CFA_register:
		reg = rd_uleb(r);
		src = rd_uleb(r);
		set_rule(&m->s, reg, CFI_REGISTER, 0, src);
		return 0;
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		m->expr = true;
		set_rule(&m->s, rd_uleb(r), RULE_EXPR, 0, 0);
		skip_block(r);
		return 0;
	case DW_CFA_remember_state:
		if (m->depth == STATE_DEPTH)
			return -ENOTSUP;
		m->saved[m->depth++] = m->s;
		return 0;
	case DW_CFA_restore_state:
		if (!m->depth)
			return -EINVAL;
		/* The whole row, CFA rule included (GCC relies on it). */
		m->s = m->saved[--m->depth];
		return 0;
	}
	return -ENOTSUP;	/* DW_CFA_GNU_window_save and unknown ops */
}

/* The rules about the CFA, and the location ops. */
static int exec_cfa_op(struct machine *m, struct reader *r, uint8_t op)
{
	const struct cie *c = m->cie;
	uint64_t reg, loc;

	switch (op) {
	case DW_CFA_nop:
	case DW_CFA_GNU_args_size:
		if (op == DW_CFA_GNU_args_size)
			rd_uleb(r);
		return 0;
	case DW_CFA_set_loc:
		loc = rd_address(r, c->fde_enc);
		if (loc > m->target)
			return 1;
		m->loc = loc;
		return 0;
	case DW_CFA_advance_loc1:
		return advance(m, rd_fixed(r, 1));
	case DW_CFA_advance_loc2:
		return advance(m, rd_fixed(r, 2));
	case DW_CFA_advance_loc4:
		return advance(m, rd_fixed(r, 4));
	case DW_CFA_def_cfa:
		reg = rd_uleb(r);
		def_cfa(&m->s, reg, rd_uleb(r));
		return 0;
	case DW_CFA_def_cfa_sf:
		reg = rd_uleb(r);
		def_cfa(&m->s, reg, scaled(rd_sleb(r), c->data_align));
		return 0;
	case DW_CFA_def_cfa_register:
		m->s.cfa_reg = rd_uleb(r);
		return 0;
	case DW_CFA_def_cfa_offset:
		m->s.cfa_off = rd_uleb(r);
		return 0;
	case DW_CFA_def_cfa_offset_sf:
		m->s.cfa_off = scaled(rd_sleb(r), c->data_align);
		return 0;
	case DW_CFA_def_cfa_expression:
		m->expr = true;
		m->s.cfa_expr = true;
		skip_block(r);
		return 0;
	}
	return exec_reg_op(m, r, op);
}

/* Run a program until its end or until the location passes the target.
 * 0, or a negative errno. */
static int run(struct machine *m, struct reader *r)
{
	while (r->p < r->end) {
		uint8_t op = rd_u8(r), low = op & 0x3f;
		int ret;

		switch (op >> 6) {
		case 1:		/* DW_CFA_advance_loc */
			ret = advance(m, low);
			break;
		case 2:		/* DW_CFA_offset */
			set_rule(&m->s, low, CFI_OFFSET,
				 scaled(rd_uleb(r), m->cie->data_align), 0);
			ret = 0;
			break;
		case 3:		/* DW_CFA_restore */
			restore(m, low);
			ret = 0;
			break;
		default:
			ret = exec_cfa_op(m, r, op);
		}
		if (r->bad)
			return -EINVAL;
		if (ret)
			return ret > 0 ? 0 : ret;
	}
	return 0;
}

/* The state a row can express, or -ENOTSUP. */
static int to_row(const struct state *s, const struct cie *c,
		  struct cfi_row *row)
{
	/* The mark first: a restorer's rules are expressions (glibc's
	 * __restore_rt: the CFA read from the sigcontext), which a row
	 * cannot hold, but its callee's return address is still named by
	 * it (unwind.c's is_restorer()). */
	memset(row, 0, sizeof(*row));
	row->signal = c->signal;
	if (s->cfa_expr || s->cfa_reg >= CFI_NREGS ||
	    s->cfa_off != (int32_t)s->cfa_off || c->ra_reg != CFI_REG_RA)
		return -ENOTSUP;
	row->cfa_reg = s->cfa_reg;
	row->cfa_off = s->cfa_off;
	for (int i = 0; i < CFI_NREGS; i++) {
		const struct rule *ru = &s->r[i];

		if (ru->kind == RULE_SAME)
			continue;
		if (ru->kind == RULE_EXPR || row->nrules == CFI_MAX_RULES ||
		    ru->off != (int16_t)ru->off)
			return -ENOTSUP;
		row->rules[row->nrules++] = (struct cfi_rule){
			.reg = i, .kind = ru->kind, .off = ru->off,
			.src = ru->src,
		};
	}
	return 0;
}

static int32_t eh_word(const uint8_t *entries, uint64_t i, int half)
{
	int32_t v;

	memcpy(&v, entries + 8 * i + 4 * half, sizeof(v));
	return v;
}

/* The FDE whose table entry is the last at or below vaddr, searched as
 * libunwind searches the table, through its index of strides (dso.h:
 * dso_eh_table). */
static int find_fde(struct dso *d, uint64_t vaddr, uint64_t *fde)
{
	struct dso_eh_table t;
	uint32_t lo = 0, hi, a = 0, b;

	if (dso_eh_table(d, &t))
		return -ENOENT;
	hi = t.count;
	if (t.top) {
		b = (t.count + DSO_EH_STRIDE - 1) / DSO_EH_STRIDE;
		while (b - a > 1) {	/* top[a] <= vaddr, or a == 0 */
			uint32_t mid = a + (b - a) / 2;

			if (t.hdr + (int64_t)t.top[mid] <= vaddr)
				a = mid;
			else
				b = mid;
		}
		lo = a * DSO_EH_STRIDE;
		if (t.count - lo > DSO_EH_STRIDE)
			hi = lo + DSO_EH_STRIDE;
	}
	while (hi - lo > 1) {	/* invariant: entry lo <= vaddr, or lo == 0 */
		uint32_t mid = lo + (hi - lo) / 2;

		if (t.hdr + (int64_t)eh_word(t.entries, mid, 0) <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	if (t.hdr + (int64_t)eh_word(t.entries, lo, 0) > vaddr)
		return -ENOENT;
	*fde = t.hdr + (int64_t)eh_word(t.entries, lo, 1);
	return 0;
}

/* The CIE an FDE points to; its id field says it is one. */
static int read_cie(const struct source *s, const struct record *fde,
		    struct record *cie_rec, struct cie *cie)
{
	struct reader r = record_reader(fde, fde->id_at);
	uint64_t ptr = rd_fixed(&r, fde->id_size), id, at;
	uint64_t cie_id = fde->debug ? ~0ull >> (64 - 8 * fde->id_size) : 0;
	struct reader cr;
	int ret;

	if (ptr == cie_id)
		return -EINVAL;	/* a CIE where an FDE should be */
	/* .eh_frame: back from the pointer; .debug_frame: a section offset */
	at = fde->debug ? ptr : fde->vaddr + fde->id_at - ptr;
	ret = read_record(s, at, cie_rec);
	if (ret)
		return ret;
	cr = record_reader(cie_rec, cie_rec->id_at);
	id = rd_fixed(&cr, cie_rec->id_size);
	return id != cie_id ? -EINVAL : parse_cie(cie_rec, cie);
}

/* The FDE's range (r is at its pc_begin, and is left at its program). */
static int fde_range(struct reader *r, const struct cie *cie,
		     uint64_t *start, uint64_t *range)
{
	*start = rd_address(r, cie->fde_enc);
	*range = rd_enc_value(r, cie->fde_enc & 0x0f);
	if (cie->has_aug_data)
		skip_block(r);
	return r->bad ? -EINVAL : 0;
}

/* Run the CIE's then the FDE's program (r is at the FDE's pc_begin) up
 * to vaddr; row may be NULL (to check the whole program: vaddr = ~0). */
static int fde_row(struct reader *r, const struct cie *cie, uint64_t vaddr,
		   struct cfi_row *row, bool *expr)
{
	struct machine *m;
	struct state init;
	struct reader ci = cie->insns;
	uint64_t start, range;
	int ret;

	ret = fde_range(r, cie, &start, &range);
	if (ret)
		return ret;
	if (row && (vaddr < start || vaddr - start >= range))
		return -ENOENT;
	/* saved[] is written before it is read: only the rest is zeroed,
	 * not 2.4 of its 2.7 KB for each row */
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	memset(m, 0, offsetof(struct machine, saved));
	m->depth = 0;
	m->loc = 0;
	m->expr = false;
	m->cie = cie;
	m->target = UINT64_MAX;
	ret = run(m, &ci);
	init = m->s;
	m->init = &init;
	m->depth = 0;
	m->loc = start;
	m->target = vaddr;
	if (!ret)
		ret = run(m, r);
	if (!ret && row)
		ret = to_row(&m->s, cie, row);
	if (expr)
		*expr = m->expr;
	free(m);
	return ret;
}

/* The FDE at fde_at of s and its CIE; *r at the FDE's pc_begin. */
static int read_fde(const struct source *s, uint64_t fde_at,
		    struct record *fde, struct record *cie_rec,
		    struct cie *cie, struct reader *r)
{
	int ret = read_record(s, fde_at, fde);

	if (ret)
		return ret;
	ret = read_cie(s, fde, cie_rec, cie);
	if (ret)
		return ret;
	*r = record_reader(fde, fde->id_at + fde->id_size);
	return 0;
}

/* The row at vaddr from the FDE at fde_at of s. */
static int source_row(const struct source *s, uint64_t fde_at,
		      uint64_t vaddr, struct cfi_row *row)
{
	struct record fde, cie_rec;
	struct reader r;
	struct cie cie;
	int ret;

	ret = read_fde(s, fde_at, &fde, &cie_rec, &cie, &r);
	if (ret)
		return ret;
	return fde_row(&r, &cie, vaddr, row, NULL);
}

/* The range of the FDE at fde_at of s. */
static int source_range(const struct source *s, uint64_t fde_at,
			uint64_t *start, uint64_t *end)
{
	struct record fde, cie_rec;
	struct reader r;
	struct cie cie;
	uint64_t range;
	int ret;

	ret = read_fde(s, fde_at, &fde, &cie_rec, &cie, &r);
	if (ret)
		return ret;
	ret = fde_range(&r, &cie, start, &range);
	*end = *start + range;
	return ret;
}

/* ---- the .debug_frame search table ---- */

/* The table entry for the FDE at at, if it is one worth keeping: 1, or
 * 0 for a CIE, an empty or unreadable FDE. */
static int df_entry(const struct source *s, uint64_t at, struct df_fde *e)
{
	struct record fde, cie_rec;
	uint64_t start, range;
	struct reader r;
	struct cie cie;
	bool expr = false;
	int ok = 0;

	if (read_record(s, at, &fde))
		return 0;
	if (read_cie(s, &fde, &cie_rec, &cie))
		return 0;
	r = record_reader(&fde, fde.id_at + fde.id_size);
	if (!fde_range(&r, &cie, &start, &range) && range &&
	    start + range > start) {
		*e = (struct df_fde){ .start = start, .end = start + range,
				      .off = at };
		/* The whole program, once: what libunwind may be given. */
		r = record_reader(&fde, fde.id_at + fde.id_size);
		e->plain = !fde_row(&r, &cie, UINT64_MAX, NULL, &expr) &&
			   !expr && cie.version != 4;
		ok = 1;
	}
	return ok;
}

static int df_cmp(const void *a, const void *b)
{
	const struct df_fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Every FDE of a .debug_frame, sorted by address; NULL if none. Records
 * are walked by their lengths: a bad length ends the walk. */
static void *df_make_index(const uint8_t *data, size_t size)
{
	const struct source s = { .data = data, .size = size };
	struct df_index *ix, *shrunk;
	uint64_t at = 0;

	/* A record takes at least 16 bytes (length, id, two addresses). */
	ix = malloc(sizeof(*ix) + (size / 16 + 1) * sizeof(ix->fde[0]));
	if (!ix)
		return NULL;
	ix->n = 0;
	while (at + 4 <= size && ix->n <= size / 16) {
		uint32_t len32;
		uint64_t len, hdr = 4;

		memcpy(&len32, data + at, 4);
		len = len32;
		if (len32 == 0xffffffff) {
			if (size - at < 12)
				break;
			memcpy(&len, data + at + 4, 8);
			hdr = 12;
		}
		if (len > size - at - hdr)
			break;
		if (len)
			ix->n += df_entry(&s, at, &ix->fde[ix->n]);
		at += hdr + len;
	}
	if (!ix->n) {
		free(ix);
		return NULL;
	}
	qsort(ix->fde, ix->n, sizeof(ix->fde[0]), df_cmp);
	shrunk = realloc(ix, sizeof(*ix) + ix->n * sizeof(ix->fde[0]));
	return shrunk ? shrunk : ix;
}

/* The entry of the last FDE starting at or below vaddr, if it covers
 * vaddr. */
static const struct df_fde *df_find(const struct df_index *ix,
				    uint64_t vaddr)
{
	size_t lo = 0, hi = ix->n;

	while (lo < hi) {	/* first entry above vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (ix->fde[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || vaddr >= ix->fde[lo - 1].end)
		return NULL;
	return &ix->fde[lo - 1];
}

int cfi_debug_frame_fde(struct dso *d, uint64_t vaddr,
			struct dso_debug_frame *df, struct cfi_fde *fde)
{
	const struct df_fde *e;

	if (dso_debug_frame(d, df_make_index, free, df))
		return -ENOENT;
	e = df_find(df->index, vaddr);
	if (!e)
		return -ENOENT;
	*fde = (struct cfi_fde){ .off = e->off, .start = e->start,
				 .end = e->end, .plain = e->plain };
	return 0;
}

int cfi_debug_frame_row(const uint8_t *data, size_t size, uint64_t vaddr,
			struct cfi_row *row)
{
	const struct source s = { .data = data, .size = size };
	struct df_index *ix = df_make_index(data, size);
	const struct df_fde *e = ix ? df_find(ix, vaddr) : NULL;
	int ret = e ? source_row(&s, e->off, vaddr, row) : -ENOENT;

	free(ix);
	return ret;
}

int cfi_row_at(struct dso *d, uint64_t vaddr, struct cfi_row *row)
{
	const struct source eh = { .d = d };
	struct dso_debug_frame df;
	struct cfi_fde fde;
	uint64_t at;
	int ret;

	ret = find_fde(d, vaddr, &at);
	if (!ret)
		ret = source_row(&eh, at, vaddr, row);
	if (ret != -ENOENT || cfi_debug_frame_fde(d, vaddr, &df, &fde))
		return ret;
	return source_row(&(struct source){ .data = df.data,
					    .size = df.size },
			  fde.off, vaddr, row);
}

int cfi_fde_range(struct dso *d, uint64_t vaddr, uint64_t *start,
		  uint64_t *end)
{
	const struct source eh = { .d = d };
	struct dso_debug_frame df;
	struct cfi_fde fde;
	uint64_t at, s, e;
	int ret;

	ret = find_fde(d, vaddr, &at);
	if (!ret)
		ret = source_range(&eh, at, &s, &e);
	if (!ret && vaddr >= s && vaddr < e) {
		*start = s;
		*end = e;
		return 0;
	}
	if (ret && ret != -ENOENT)
		return ret;
	if (cfi_debug_frame_fde(d, vaddr, &df, &fde))
		return -ENOENT;
	*start = fde.start;
	*end = fde.end;
	return 0;
}
