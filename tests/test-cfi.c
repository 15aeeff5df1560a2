// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-cfi.c - cfi_row_at() against libdw's CFI interpreter
 * (dwarf_cfi_addrframe), address by address: every byte of this test's
 * own code, which carries hand-written CFI using the rarer operations
 * (remember/restore_state, register, val_offset, undefined, an
 * expression, def_cfa_sf), and a stride through libc and libdw; and the
 * .debug_frame rows of the debugframe target (built without .eh_frame for
 * its code), from the binary and from its stripped copy's debug file
 * found by build-id, against libdw's dwarf_getcfi(). Also prints the cost
 * of one row.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sampler/unwind/cfi.h"
#include "sampler/unwind/dso.h"


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
	".size cfi_signal_fixture, .-cfi_signal_fixture\n"
	/* as glibc's __restore_rt: a signal frame whose CFA is read from
	 * the sigcontext (DW_CFA_def_cfa_expression {DW_OP_breg7 160;
	 * DW_OP_deref}), never called (the bytes are never run) */
	".globl cfi_restorer_fixture\n"
	".type cfi_restorer_fixture, @function\n"
	"cfi_restorer_fixture:\n"
	".cfi_startproc\n"
	".cfi_signal_frame\n"
	".cfi_escape 0x0f, 0x04, 0x77, 0xa0, 0x01, 0x06\n"
	"	mov $15, %rax\n"
	"	syscall\n"
	".cfi_endproc\n"
	".size cfi_restorer_fixture, .-cfi_restorer_fixture\n");

void cfi_fixture(void);
void cfi_signal_fixture(void);
void cfi_restorer_fixture(void);

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

/* libdw's CFI: the object's .eh_frame, then a .debug_frame. */
struct oracle {
	Dwarf_CFI *eh, *debug;
};

static int oracle_frame(const struct oracle *o, uint64_t addr,
			Dwarf_Frame **fr)
{
	int ret = dwarf_cfi_addrframe(o->eh, addr, fr);

	if (ret && o->debug)
		ret = dwarf_cfi_addrframe(o->debug, addr, fr);
	return ret;
}

static void check_addr(struct dso *d, const struct oracle *o, uint64_t addr,
		       struct tally *t)
{
	Dwarf_Frame *fr = NULL;
	struct cfi_row row;
	int ret = cfi_row_at(d, addr, &row);
	int lib = oracle_frame(o, addr, &fr);

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
 * lo/hi narrow it to one range when nonzero. libdw's .debug_frame comes
 * from debug (the file holding it) when not NULL; the dso looks for
 * debug files under roots (NULL: the default). */
static struct tally check_object_in(const char *path, uint64_t stride,
				    uint64_t lo, uint64_t hi,
				    const char *debug, const char *roots)
{
	struct dso_cache *cache;
	struct tally t = { 0 };
	struct oracle o = { 0 };
	Dwarf *dw = NULL;
	struct dso *d;
	size_t nph;
	Elf *elf;
	int fd, dfd = -1;

	fd = open(path, O_RDONLY);
	elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	o.eh = elf ? dwarf_getcfi_elf(elf) : NULL;
	CHECK(o.eh, "%s: no CFI", path);
	if (debug) {
		dfd = open(debug, O_RDONLY);
		dw = dfd < 0 ? NULL : dwarf_begin(dfd, DWARF_C_READ);
		o.debug = dw ? dwarf_getcfi(dw) : NULL;
		CHECK(o.debug, "%s: no .debug_frame", debug);
	}
	CHECK(!dso_cache_new(roots, &cache), "cache");
	CHECK(!dso_cache_get(cache, path, path, &d), "%s: no dso", path);
	if (!o.eh || !d || elf_getphdrnum(elf, &nph))
		return t;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		for (uint64_t a = ph.p_vaddr; a < ph.p_vaddr + ph.p_filesz;
		     a += stride)
			if (!lo || (a >= lo && a < hi))
				check_addr(d, &o, a, &t);
	}
	dso_put(d);
	dso_cache_free(cache);
	dwarf_cfi_end(o.eh);
	if (dw)
		dwarf_end(dw);
	if (dfd >= 0)
		close(dfd);
	elf_end(elf);
	close(fd);
	return t;
}

static struct tally check_object(const char *path, uint64_t stride,
				 uint64_t lo, uint64_t hi)
{
	return check_object_in(path, stride, lo, hi, NULL, NULL);
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

/* The signal mark stays on a row that cannot be expressed: a restorer's
 * callee's return address is named by it (unwind.c's is_restorer()). */
static void test_signal_mark(void)
{
	struct dso_cache *cache;
	struct cfi_row row;
	struct dso *d;
	int ret;

	CHECK(!dso_cache_new(NULL, &cache), "cache");
	CHECK(!dso_cache_get(cache, "/proc/self/exe", "/proc/self/exe", &d),
	      "no dso");
	if (!d)
		return;
	ret = cfi_row_at(d, self_vaddr(cfi_signal_fixture), &row);
	CHECK(!ret && row.signal, "signal fixture: %d, mark %d", ret,
	      row.signal);
	memset(&row, 0, sizeof(row));	/* not the last call's mark */
	ret = cfi_row_at(d, self_vaddr(cfi_restorer_fixture) + 7, &row);
	CHECK(ret == -ENOTSUP && row.signal,
	      "restorer fixture: %d, mark %d", ret, row.signal);
	ret = cfi_row_at(d, self_vaddr(cfi_fixture), &row);
	CHECK(!ret && !row.signal, "plain fixture: %d, mark %d", ret,
	      row.signal);
	dso_put(d);
	dso_cache_free(cache);
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

/* [*lo, *hi) of function name in path's .symtab. */
static bool symbol_range(const char *path, const char *name, uint64_t *lo,
			 uint64_t *hi)
{
	Elf_Scn *scn = NULL;
	bool found = false;
	GElf_Shdr sh;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY);
	elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *data = elf_getdata(scn, NULL);

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !data)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(data, i, &sym))
				break;
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (s && !strcmp(s, name) && sym.st_size) {
				*lo = sym.st_value;
				*hi = sym.st_value + sym.st_size;
				found = true;
				break;
			}
		}
	}
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	CHECK(found, "%s: no symbol %s", path, name);
	return found;
}

/* How many addresses of [lo, hi) libdw finds a row for in path's
 * .eh_frame. */
static unsigned eh_rows_in(const char *path, uint64_t lo, uint64_t hi)
{
	int fd = open(path, O_RDONLY);
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	Dwarf_CFI *cfi = elf ? dwarf_getcfi_elf(elf) : NULL;
	unsigned n = 0;

	for (uint64_t a = lo; cfi && a < hi; a++) {
		Dwarf_Frame *fr = NULL;

		n += !dwarf_cfi_addrframe(cfi, a, &fr);
		free(fr);
	}
	if (cfi)
		dwarf_cfi_end(cfi);
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	return n;
}

/* Link debug as ROOT/.build-id/xx/yyyy.debug for path's build-id (dir is
 * ROOT/.build-id); its name in link. */
static bool link_debug_file(const char *path, const char *debug,
			    const char *dir, char *link, size_t size)
{
	const unsigned char *id;
	char hex[128];
	ssize_t n = -1;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY);
	elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	if (elf)
		n = dwelf_elf_gnu_build_id(elf, (const void **)&id);
	for (ssize_t i = 0; i < n && i < 60; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	CHECK(n > 1, "%s: no build-id", path);
	if (n <= 1)
		return false;
	snprintf(link, size, "%s/%.2s", dir, hex);
	mkdir(link, 0700);
	if (snprintf(link, size, "%s/%.2s/%s.debug", dir, hex, hex + 2) >=
	    (int)size)
		return false;
	CHECK(!symlink(debug, link), "symlink %s", link);
	return true;
}

/* The debugframe target: every address of its own functions has a row
 * from .debug_frame (none from .eh_frame), equal to libdw's; from the
 * binary, and from its stripped copy's debug file found by build-id. */
static void test_debug_frame(void)
{
	static const char *const funcs[] = {
		"df_hot", "df_sibling", "df_level2", "df_level1", "main",
	};
	const char *dir = getenv("TEST_BUILD_DIR");
	char exe[512], stripped[512], dbg[600], root[] = "/tmp/test-cfi-XXXXXX";
	char ids[600], link[700] = "";
	unsigned rows = 0, eh_rows = 0, st_rows = 0, want = 0;

	if (!dir) {
		CHECK(0, "TEST_BUILD_DIR is not set");
		return;
	}
	snprintf(exe, sizeof(exe), "%s/targets/debugframe", dir);
	snprintf(stripped, sizeof(stripped), "%s/targets/debugframe-stripped",
		 dir);
	snprintf(dbg, sizeof(dbg), "%s.debug", stripped);
	if (!mkdtemp(root)) {
		CHECK(0, "mkdtemp");
		return;
	}
	snprintf(ids, sizeof(ids), "%s/.build-id", root);
	mkdir(ids, 0700);
	link_debug_file(stripped, dbg, ids, link, sizeof(link));
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		uint64_t lo, hi;

		if (!symbol_range(exe, funcs[i], &lo, &hi))
			continue;
		want += hi - lo;
		eh_rows += eh_rows_in(exe, lo, hi);
		rows += check_object_in(exe, 1, lo, hi, exe, "").rows;
		st_rows += check_object_in(stripped, 1, lo, hi, dbg,
					   root).rows;
	}
	printf("debugframe: %u rows of %u addresses, %u in .eh_frame, %u "
	       "from the debug file\n", rows, want, eh_rows, st_rows);
	CHECK(want && rows == want && st_rows == want && !eh_rows,
	      "debugframe: %u, stripped %u of %u rows (%u from .eh_frame)",
	      rows, st_rows, want, eh_rows);
	if (link[0]) {
		unlink(link);
		*strrchr(link, '/') = '\0';
		rmdir(link);
	}
	rmdir(ids);
	rmdir(root);
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
	/* The first address without an FDE loads libc's .debug_frame, if
	 * any, with its debug file: once, not the cost of a row. */
	for (uint64_t a = 0x28000; a < 0x180000; a += 101)
		if (cfi_row_at(d, a, &row) == -ENOENT)
			break;
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
	test_signal_mark();
	test_objects();
	test_debug_frame();
	test_timing();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all cfi checks passed\n");
	return 0;
}
