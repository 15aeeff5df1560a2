// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-unwind.c - unwind_stack() on this process's own stack, through two
 * frames whose CFI is only in .debug_frame (unwind-fixture.c): once from
 * a plain call (the cached rows unwind it) and once from a signal
 * handler (a signal frame sends the whole stack to libunwind, which must
 * find the same .debug_frame FDEs). A second unwinder (the next session)
 * of the same stack finds the rows the first computed kept with the
 * objects (dso.h: dso_row_get), computes none, and gives the same frames.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "check.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/gostack.h"
#include "sampler/unwind/maps.h"
#include "sampler/unwind/unwind.h"
#include "unwind-fixture.h"

#define STACK_COPY (64 << 10)
#define MAX_FRAMES 64

static struct dso_cache *cache;
static struct proc_maps *maps;
static struct unwinder *unwinder;
static uint64_t pcs[MAX_FRAMES];
static int npcs;
static bool again;	/* capture(): unwind once more, a new unwinder */

/* The live stack holds AddressSanitizer's poisoned redzones in an ASan
 * build, and parts valgrind holds inaccessible inside a signal frame: it
 * is copied by the kernel, as the sampler's copies are, so neither
 * checks the reads. */
static void copy_stack(uint8_t *to, uintptr_t from, size_t len)
{
	struct iovec local = { .iov_base = to, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)from, .iov_len = len };

	CHECK(process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
	      (ssize_t)len, "process_vm_readv of our own stack: %m");
}

/* The same stack, unwound by a new unwinder (the next session): every
 * row is found kept with its object, none computed again, and the frames
 * are the same. */
static void next_session(const struct unwind_regs *regs, const void *stack,
			 size_t len)
{
	uint64_t pcs2[MAX_FRAMES], h0, m0, f0, h, m, f;
	struct unwinder *u;
	int n2 = 0;

	CHECK(!unwinder_new(maps, &u), "second unwinder");
	dso_rows_counters(&h0, &m0, &f0);
	CHECK(!unwind_stack(u, regs, stack, len, pcs2, MAX_FRAMES, &n2),
	      "unwind_stack");
	dso_rows_counters(&h, &m, &f);
	unwinder_free(u);
	CHECK(n2 == npcs && !memcmp(pcs2, pcs, npcs * sizeof(*pcs)),
	      "the same frames: %d and %d", npcs, n2);
	CHECK(h - h0 >= (uint64_t)npcs - 1 && m == m0,
	      "rows found kept: %llu, computed again: %llu",
	      (unsigned long long)(h - h0), (unsigned long long)(m - m0));
	printf("next session: %d frames, %llu rows found kept\n", n2,
	       (unsigned long long)(h - h0));
}

/* Unwind from the point getcontext() returns to, over a copy of the
 * stack taken there. */
static __attribute__((noinline)) void capture(void)
{
	static uint8_t stack[STACK_COPY];
	static const int greg[UREG__COUNT] = {
		[UREG_RAX] = REG_RAX, [UREG_RDX] = REG_RDX,
		[UREG_RCX] = REG_RCX, [UREG_RBX] = REG_RBX,
		[UREG_RSI] = REG_RSI, [UREG_RDI] = REG_RDI,
		[UREG_RBP] = REG_RBP, [UREG_RSP] = REG_RSP,
		[UREG_R8] = REG_R8, [UREG_R9] = REG_R9,
		[UREG_R10] = REG_R10, [UREG_R11] = REG_R11,
		[UREG_R12] = REG_R12, [UREG_R13] = REG_R13,
		[UREG_R14] = REG_R14, [UREG_R15] = REG_R15,
		[UREG_RIP] = REG_RIP,
	};
	struct unwind_regs regs;
	struct map_entry *e;
	ucontext_t uc;
	size_t len;

	getcontext(&uc);
	for (int i = 0; i < UREG__COUNT; i++)
		regs.r[i] = uc.uc_mcontext.gregs[greg[i]];
	e = maps_find(maps, regs.r[UREG_RSP]);
	len = e ? e->end - regs.r[UREG_RSP] : 0;
	len = len < STACK_COPY ? len : STACK_COPY;
	copy_stack(stack, regs.r[UREG_RSP], len);
	CHECK(!unwind_stack(unwinder, &regs, stack, len, pcs, MAX_FRAMES,
			    &npcs), "unwind_stack");
	if (again)
		next_session(&regs, stack, len);
}

static void on_signal(int sig)
{
	(void)sig;
	capture();
}

static void raise_signal(void)
{
	raise(SIGUSR1);
}

/* The function names of the unwound frames, leaf first, joined. */
static void names(char *buf, size_t size)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < npcs && at < size; i++) {
		struct map_entry *e = maps_find(maps, pcs[i]);
		struct dso_frame f[8];
		int n = 0;

		if (e && e->dso)
			dso_symbolize(e->dso, pcs[i] - e->bias, f, 8, &n);
		at += snprintf(buf + at, size - at, "%s ",
			       n && f[n - 1].function ? f[n - 1].function :
							"?");
	}
}

/* fixture_inner, fixture_outer and then caller, in this order. */
static void check_chain(const char *what, const char *caller)
{
	char buf[4096], want[256];

	names(buf, sizeof(buf));
	snprintf(want, sizeof(want), " fixture_inner fixture_outer %s ",
		 caller);
	CHECK(strstr(buf, want) && strstr(buf, " main "), "%s: %s", what,
	      buf);
	printf("%s: %s\n", what, buf);
}

static __attribute__((noinline)) void from_call(void)
{
	fixture_outer(capture);
	asm volatile("" ::: "memory");
}

static __attribute__((noinline)) void from_signal(void)
{
	fixture_outer(raise_signal);
	asm volatile("" ::: "memory");
}

/* Go's CFI rows, which name the CFA and the RA only, get the frame
 * pointer's rule where Go saves it; nothing else does. */
static void check_go_fp_rule(void)
{
	struct cfi_row ra = { .cfa_reg = 7, .cfa_off = 32, .nrules = 1,
			      .rules = { { .reg = 16, .off = -8,
					   .kind = CFI_OFFSET } } };
	struct cfi_row row;

	row = ra;	/* a frame: RBP saved at CFA - 16 */
	gostack_fp_rule(&row);
	CHECK(row.nrules == 2 && row.rules[1].reg == CFI_REG_RBP &&
	      row.rules[1].off == -16 && row.rules[1].kind == CFI_OFFSET,
	      "frame: %d rules", row.nrules);
	row = ra;	/* no frame (the entry, a NOFRAME function) */
	row.cfa_off = 8;
	gostack_fp_rule(&row);
	CHECK(row.nrules == 1, "no frame: %d rules", row.nrules);
	row = ra;	/* a rule of its own is kept */
	row.rules[row.nrules++] = (struct cfi_rule){ .reg = CFI_REG_RBP,
		.off = -24, .kind = CFI_OFFSET };
	gostack_fp_rule(&row);
	CHECK(row.nrules == 2 && row.rules[1].off == -24, "own: %d rules",
	      row.nrules);
	row = ra;	/* a CFA off another register: no layout known */
	row.cfa_reg = CFI_REG_RBP;
	gostack_fp_rule(&row);
	CHECK(row.nrules == 1, "cfa in rbp: %d rules", row.nrules);
	row = ra;	/* a full row takes no more */
	row.nrules = CFI_MAX_RULES;
	gostack_fp_rule(&row);
	CHECK(row.nrules == CFI_MAX_RULES, "full: %d rules", row.nrules);
}

int main(void)
{
	check_go_fp_rule();
	if (dso_cache_new(NULL, &cache) || maps_load(getpid(), cache, &maps) ||
	    unwinder_new(maps, &unwinder)) {
		fprintf(stderr, "FATAL: setup\n");
		return 1;
	}
	signal(SIGUSR1, on_signal);
	again = true;
	from_call();
	again = false;
	check_chain("cached rows", "from_call");
	from_signal();
	check_chain("libunwind", "from_signal");
	unwinder_free(unwinder);
	maps_free(maps);
	dso_cache_free(cache);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all unwind checks passed\n");
	return 0;
}
