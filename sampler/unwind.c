// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * unwind.c - libunwind remote unwinding over stack copies.
 *
 * find_proc_info hands libunwind the .eh_frame_hdr binary search table of
 * the object holding the ip (UNW_INFO_FORMAT_REMOTE_TABLE), as perf does;
 * libunwind then reads the table and the FDEs through access_mem, which
 * serves them from the dso's mmapped file.
 */
#include <errno.h>
#include <libunwind.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dso.h"
#include "log.h"
#include "maps.h"
#include "unwind.h"

/* Not in libunwind's public headers, but exported (perf uses it too). */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as,
					      unw_word_t ip,
					      unw_dyn_info_t *di,
					      unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)

#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_datarel 0x30

struct unwinder {
	struct proc_maps *maps;
	unw_addr_space_t as;
	unsigned maps_generation;
};

/* What one unwind_stack() call lends the accessors. */
struct unwind_ctx {
	struct unwinder *u;
	const struct unwind_regs *regs;
	const uint8_t *stack;
	size_t stack_len;
	uint64_t sp;
};

static int find_proc_info(unw_addr_space_t as, unw_word_t ip,
			  unw_proc_info_t *pi, int need_unwind_info,
			  void *arg)
{
	struct unwind_ctx *ctx = arg;
	struct map_entry *e = maps_find(ctx->u->maps, ip);
	uint64_t hdr, hdr_size;
	uint8_t head[4];
	uint32_t fde_count;
	unw_dyn_info_t di;

	if (!e || !e->dso || dso_eh_frame_hdr(e->dso, &hdr, &hdr_size))
		return -UNW_ENOINFO;
	if (dso_read(e->dso, hdr, head, sizeof(head)) ||
	    dso_read(e->dso, hdr + 8, &fde_count, sizeof(fde_count)))
		return -UNW_ENOINFO;
	/* The binary search table libunwind can use: version 1, a 4-byte
	 * eh_frame_ptr, a udata4 count, datarel|sdata4 entries. */
	if (head[0] != 1 || (head[1] & 0x0f) != DW_EH_PE_sdata4 ||
	    head[2] != DW_EH_PE_udata4 ||
	    head[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = e->start;
	di.end_ip = e->end;
	di.u.rti.segbase = e->bias + hdr;
	di.u.rti.table_data = e->bias + hdr + 12;
	di.u.rti.table_len = fde_count * 8 / sizeof(unw_word_t);
	return dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info,
					 arg);
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
	if (addr >= ctx->sp && addr + sizeof(*valp) > addr &&
	    addr + sizeof(*valp) <= ctx->sp + ctx->stack_len) {
		memcpy(valp, ctx->stack + (addr - ctx->sp), sizeof(*valp));
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
	u->maps_generation = maps_generation(maps);
	*out = u;
	return 0;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	unw_destroy_addr_space(u->as);
	free(u);
}

int unwind_stack(struct unwinder *u, const struct unwind_regs *regs,
		 const void *stack, size_t stack_len, uint64_t *pcs, int max,
		 int *n)
{
	struct unwind_ctx ctx = {
		.u = u, .regs = regs, .stack = stack, .stack_len = stack_len,
		.sp = regs->r[UREG_RSP],
	};
	bool prev_signal = true;	/* the leaf ip is exact */
	unw_cursor_t c;
	int cnt = 0;

	if (u->maps_generation != maps_generation(u->maps)) {
		unw_flush_cache(u->as, 0, 0);
		u->maps_generation = maps_generation(u->maps);
	}
	pcs[cnt++] = regs->r[UREG_RIP];
	if (max <= 1 || unw_init_remote(&c, u->as, &ctx) < 0)
		goto out;
	while (cnt < max) {
		unw_word_t ip;

		prev_signal = unw_is_signal_frame(&c) > 0;
		if (unw_step(&c) <= 0)
			break;
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || !ip)
			break;
		/* A return address points after the call; the call itself is
		 * one byte earlier. A frame interrupted by a signal was not
		 * calling anything. */
		pcs[cnt++] = prev_signal ? ip : ip - 1;
	}
out:
	*n = cnt;
	return 0;
}
