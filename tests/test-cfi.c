// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-cfi.c - cfi_row_at() against libdw's CFI interpreter
 * (dwarf_cfi_addrframe), address by address: every byte of this test's
 * own code, which carries hand-written CFI using the rarer operations
 * (remember/restore_state, register, val_offset, undefined, an
 * expression, def_cfa_sf), and a stride through libc and libdw.
 * Also prints the cost of one row.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cfi.h"
#include "dso.h"


/* Hand-written CFI: each cfi_fx_* label starts a row worth checking. */
__asm__(
	".text\n"
	".globl cfi_fixture\n"
	".type cfi_fixture, @function\n"
	"cfi_fixture:\n"
	".cfi_startproc\n"
	"	push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset rbp, -16\n"
	"	mov %rsp, %rbp\n"
	".cfi_def_cfa_register rbp\n"
	"	push %rbx\n"
	".cfi_offset rbx, -24\n"
	".cfi_remember_state\n"
	"	nop\n"
	".cfi_register r12, r13\n"
	".cfi_val_offset r14, -40\n"
	".cfi_undefined r15\n"
	"	nop\n"
	/* DW_CFA_offset_extended_sf r3 -4 (x -8 = 32) */
	".cfi_escape 0x11, 0x03, 0x7c\n"
	"	nop\n"
	".cfi_restore_state\n"
	"	nop\n"
	".cfi_restore rbx\n"
	"	nop\n"
	/* DW_CFA_expression rbx: {DW_OP_breg6 -8} */
	".cfi_escape 0x10, 0x03, 0x02, 0x76, 0x78\n"
	"	nop\n"
	".cfi_same_value rbx\n"
	/* DW_CFA_def_cfa_sf rsp, -2 (x -8 = 16) */
	".cfi_escape 0x12, 0x07, 0x7e\n"
	"	nop\n"
	/* DW_CFA_def_cfa_expression {DW_OP_breg7 8} */
	".cfi_escape 0x0f, 0x02, 0x77, 0x08\n"
	"	nop\n"
	".cfi_def_cfa rsp, 8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size cfi_fixture, .-cfi_fixture\n"
	".globl cfi_signal_fixture\n"
	".type cfi_signal_fixture, @function\n"
	"cfi_signal_fixture:\n"
	".cfi_startproc\n"
	".cfi_signal_frame\n"
	"	nop\n"
	"	ret\n"
	".cfi_endproc\n"
	".size cfi_signal_fixture, .-cfi_signal_fixture\n");

void cfi_fixture(void);
void cfi_signal_fixture(void);

enum { K_SAME, K_UNDEF, K_OFFSET, K_VAL_OFFSET, K_REGISTER, K_EXPR };

struct oracle_rule {
	int kind;
	int64_t off;
	int src;
};

static struct oracle_rule classify(Dwarf_Op *ops, size_t nops)
{
	struct oracle_rule r = { .kind = K_EXPR };

	if (!nops) {
		r.kind = ops ? K_UNDEF : K_SAME;
		return r;
	}
	if (ops[0].atom == DW_OP_regx && nops == 1) {
		r.kind = K_REGISTER;
		r.src = ops[0].number;
		return r;
	}
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return r;
	if (nops > 1 && ops[1].atom == DW_OP_plus_uconst) {
		r.off = (int64_t)ops[1].number;
		ops++;
		nops--;
	}
	if (nops == 1)
		r.kind = K_OFFSET;
	else if (nops == 2 && ops[1].atom == DW_OP_stack_value)
		r.kind = K_VAL_OFFSET;
	return r;
}

static struct oracle_rule ours(const struct cfi_row *row, int reg)
{
	static const int kind[] = {
		[CFI_UNDEF] = K_UNDEF, [CFI_OFFSET] = K_OFFSET,
		[CFI_VAL_OFFSET] = K_VAL_OFFSET, [CFI_REGISTER] = K_REGISTER,
	};

	for (int i = 0; i < row->nrules; i++)
		if (row->rules[i].reg == reg)
			return (struct oracle_rule){
				.kind = kind[row->rules[i].kind],
				.off = row->rules[i].off, .src = row->rules[i].src,
			};
	return (struct oracle_rule){ .kind = K_SAME };
}

/* libdw starts registers the CFI leaves unsaid from its x86-64 ABI
 * defaults (undefined for most, RBX included; RSP = CFA + 0), libunwind
 * and cfi.c from "same value". Those of RBP, R12-R15 and the RA agree. */
static bool abi_default(int reg, struct oracle_rule lib)
{
	bool strict = reg == 6 || (reg >= 12 && reg <= 16);

	return !strict && (lib.kind == K_UNDEF || lib.kind == K_SAME ||
				 (reg == CFI_REG_RSP &&
				  lib.kind == K_VAL_OFFSET && !lib.off));
}

/* libdw's verdict that the row has something a cfi_row cannot hold. */
static bool lib_unsupported(Dwarf_Frame *fr)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;

	if (dwarf_frame_cfa(fr, &ops, &nops) || nops != 1 ||
	    ops[0].atom != DW_OP_bregx)
		return true;
	for (int reg = 0; reg < CFI_NREGS; reg++)
		if (!dwarf_frame_register(fr, reg, mem, &ops, &nops) &&
		    classify(ops, nops).kind == K_EXPR)
			return true;
	return false;
}

static void compare_row(uint64_t addr, const struct cfi_row *row,
			Dwarf_Frame *fr)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	bool signal;

	CHECK(!dwarf_frame_cfa(fr, &ops, &nops) && nops == 1 &&
	      ops[0].atom == DW_OP_bregx && ops[0].number == row->cfa_reg &&
	      (int64_t)ops[0].number2 == row->cfa_off,
	      "0x%lx: CFA r%u%+d", addr, row->cfa_reg, row->cfa_off);
	dwarf_frame_info(fr, NULL, NULL, &signal);
	CHECK(signal == row->signal, "0x%lx: signal %d", addr, row->signal);
	for (int reg = 0; reg < CFI_NREGS; reg++) {
		struct oracle_rule a = ours(row, reg), b;

		if (dwarf_frame_register(fr, reg, mem, &ops, &nops)) {
			CHECK(0, "0x%lx: libdw: %s", addr, dwarf_errmsg(-1));
			continue;
		}
		b = classify(ops, nops);
		if (a.kind == K_SAME && abi_default(reg, b))
			continue;
		CHECK(a.kind == b.kind && a.off == b.off && a.src == b.src,
		      "0x%lx r%d: ours %d%+ld r%d, libdw %d%+ld r%d", addr, reg,
		      a.kind, (long)a.off, a.src, b.kind, (long)b.off, b.src);
	}
}

struct tally {
	unsigned rows, none, unsupported;
};

static void check_addr(struct dso *d, Dwarf_CFI *cfi, uint64_t addr,
		       struct tally *t)
{
	Dwarf_Frame *fr = NULL;
	struct cfi_row row;
	int ret = cfi_row_at(d, addr, &row);
	int lib = dwarf_cfi_addrframe(cfi, addr, &fr);

	if (ret == -ENOENT) {
		CHECK(lib != 0, "0x%lx: no FDE, libdw has one", addr);
		t->none++;
	} else if (ret == -ENOTSUP) {
		CHECK(!lib && lib_unsupported(fr),
		      "0x%lx: -ENOTSUP, libdw has a plain row", addr);
		t->unsupported++;
	} else {
		CHECK(!ret, "0x%lx: %s", addr, strerror(-ret));
		CHECK(!lib, "0x%lx: a row, libdw has none", addr);
		if (!ret && !lib)
			compare_row(addr, &row, fr);
		t->rows++;
	}
	free(fr);
}

/* The loaded executable segments of path, each address stride apart.
 * lo/hi narrow it to one range when nonzero. */
static struct tally check_object(const char *path, uint64_t stride,
				 uint64_t lo, uint64_t hi)
{
	struct dso_cache *cache;
	struct tally t = { 0 };
	struct dso *d;
	Dwarf_CFI *cfi;
	size_t nph;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY);
	elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	cfi = elf ? dwarf_getcfi_elf(elf) : NULL;
	CHECK(cfi, "%s: no CFI", path);
	CHECK(!dso_cache_new(NULL, &cache), "cache");
	CHECK(!dso_cache_get(cache, path, path, &d), "%s: no dso", path);
	if (!cfi || !d || elf_getphdrnum(elf, &nph))
		return t;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		for (uint64_t a = ph.p_vaddr; a < ph.p_vaddr + ph.p_filesz;
		     a += stride)
			if (!lo || (a >= lo && a < hi))
				check_addr(d, cfi, a, &t);
	}
	dso_put(d);
	dso_cache_free(cache);
	dwarf_cfi_end(cfi);
	elf_end(elf);
	close(fd);
	return t;
}

static int first_bias(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uint64_t *)arg = info->dlpi_addr;
	return 1;	/* the executable comes first */
}

/* Link-time address of a function of this executable. */
static uint64_t self_vaddr(void (*fn)(void))
{
	uint64_t bias = 0;

	dl_iterate_phdr(first_bias, &bias);
	return (uint64_t)(uintptr_t)fn - bias;
}

static void test_fixture(void)
{
	uint64_t lo = self_vaddr(cfi_fixture);
	uint64_t hi = self_vaddr(cfi_signal_fixture) + 2;
	struct tally t = check_object("/proc/self/exe", 1, lo, hi);

	/* Every row kind was met, the expression rows refused. */
	CHECK(t.rows >= 10 && t.unsupported == 2 && !t.none,
	      "fixture: %u rows, %u unsupported, %u without FDE", t.rows,
	      t.unsupported, t.none);
}

static void test_objects(void)
{
	static const char *const libs[] = {
		"/proc/self/exe",
		"/usr/lib/x86_64-linux-gnu/libc.so.6",
		"/usr/lib/x86_64-linux-gnu/libdw.so.1",
	};

	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		struct tally t = check_object(libs[i], i ? 37 : 1, 0, 0);

		printf("%s: %u rows, %u unsupported, %u without FDE\n",
		       libs[i], t.rows, t.unsupported, t.none);
		CHECK(t.rows > t.none, "%s: too few rows", libs[i]);
	}
}

static void test_timing(void)
{
	const char *path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	struct dso_cache *cache;
	struct timespec t0, t1;
	struct cfi_row row;
	struct dso *d;
	uint64_t hdr, size;
	int n = 0;

	if (dso_cache_new(NULL, &cache) ||
	    dso_cache_get(cache, path, path, &d)) {
		CHECK(0, "no libc dso");
		return;
	}
	CHECK(!dso_eh_frame_hdr(d, &hdr, &size), "libc: no .eh_frame_hdr");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t a = 0x28000; a < 0x180000; a += 101)
		n += !cfi_row_at(d, a, &row);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("cfi_row_at: %d rows, %.2f us each\n", n,
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) /
		       1e3 / (0x158000 / 101));
	dso_put(d);
	dso_cache_free(cache);
}

int main(void)
{
	elf_version(EV_CURRENT);
	test_fixture();
	test_objects();
	test_timing();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all cfi checks passed\n");
	return 0;
}
