// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * gostack.c - Go's stack switches as seen from a frame-pointer walk: the
 * frames it skips, found from the code's calls and Go's frame sizes
 * (gopclntab.h), and checked against the stack words read from the
 * process; and which Go functions end an unwind, and the row of Go code
 * without CFI (for unwind.c).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "sampler/unwind/dso.h"
#include "sampler/unwind/gopclntab.h"
#include "sampler/unwind/gostack.h"
#include "sampler/unwind/livestack.h"
#include "sampler/unwind/maps.h"

bool gostack_code(struct proc_maps *maps, uint64_t pc)
{
	struct map_entry *e = maps_find(maps, pc);
	struct gopcln_func fn;

	return e && e->dso && dso_gopcln(e->dso) &&
	       !gopcln_func(dso_gopcln(e->dso), pc - e->bias, &fn) &&
	       pc - e->bias > fn.entry;
}

bool gostack_return(struct proc_maps *maps, uint64_t ra)
{
	struct map_entry *e = maps_find(maps, ra);
	struct gopcln_func fn;

	if (!gostack_code(maps, ra - 1))
		return false;
	return !e || !e->dso || !dso_gopcln(e->dso) ||
	       gopcln_func(dso_gopcln(e->dso), ra - e->bias, &fn) ||
	       ra - e->bias != fn.entry;
}

/* Code bytes at addr, from the object's file. */
static bool code_at(struct proc_maps *maps, uint64_t addr, void *buf,
		    size_t n)
{
	struct map_entry *e = maps_find(maps, addr);

	return e && e->dso && !dso_read(e->dso, addr - e->bias, buf, n);
}

/* The target of the call rel32 that returns to ra, or 0. */
static uint64_t call_target(struct proc_maps *maps, uint64_t ra)
{
	uint8_t b[5];
	int32_t rel;

	if (ra < 5 || !code_at(maps, ra - 5, b, sizeof(b)) || b[0] != 0xe8)
		return 0;
	memcpy(&rel, b + 1, sizeof(rel));
	return ra + (int64_t)rel;
}

/* The entry of the Go function holding pc, or 0; its name; its frame
 * size (gopcln_frame_size()) when size is not NULL. */
static uint64_t go_entry(struct proc_maps *maps, uint64_t pc,
			 const char **name, int32_t *size)
{
	struct map_entry *e = maps_find(maps, pc);
	const struct gopcln *g = e && e->dso ? dso_gopcln(e->dso) : NULL;
	struct gopcln_func fn;

	if (!g || gopcln_func(g, pc - e->bias, &fn) ||
	    (size && gopcln_frame_size(g, pc - e->bias, size)))
		return 0;
	if (name)
		*name = fn.name;
	return fn.entry + e->bias;
}

/* Whether the call before ra calls the switching function sw, or, for
 * morestack, the stub a prologue calls (runtime.morestack_noctxt). */
static bool calls_switch(struct proc_maps *maps, uint64_t ra, uint64_t sw)
{
	uint64_t t = call_target(maps, ra);
	const char *name = NULL;

	return t && (t == sw || (go_entry(maps, t, &name, NULL) == t &&
				 !strncmp(name, "runtime.morestack", 17)));
}

/* How far below the frame pointer gap_scan() looks. */
#define GAP_SCAN 1024

/*
 * F unknown (G called it indirectly, or F is the goroutine's first
 * function, "called" by goexit): the word below bp that returns right
 * after a call of the switching function sw into a function whose frame
 * reaches from there up to bp.
 */
static int gap_scan(struct proc_maps *maps, struct livestack *live,
		    uint64_t bp, uint64_t sw, uint64_t *gap)
{
	uint64_t v, dummy;
	int32_t size;

	/* one read for the whole range (livestack_word() reads upward) */
	if (!livestack_word(live, bp - GAP_SCAN, &dummy))
		return 0;
	for (uint64_t off = 8; off <= GAP_SCAN; off += 8)
		if (livestack_word(live, bp - off, &v) && v > 5 &&
		    go_entry(maps, v - 1, NULL, &size) &&
		    size == (int32_t)off && call_target(maps, v) == sw) {
			gap[0] = v - 1;
			return 1;
		}
	return 0;
}

/*
 * The frames a frame-pointer walk skips at a stack switch, into gap,
 * outermost last; how many (0-2). systemstack and mcall save no frame
 * pointer: the walk goes from the system stack (bp: the goroutine's frame
 * pointer, kept across the switch) to the caller G of the function F
 * that called them. G's call names F; F's return address sits just
 * below F's frame, whose top bp gives: read from the process, it is kept
 * only if it returns into F right after a call of the switching
 * function. At morestack, bp is F's caller's, and below F's return
 * address is that of the function whose prologue called morestack.
 */
int gostack_gap(struct proc_maps *maps, struct livestack *live, uint64_t bp,
		uint64_t sw_pc, uint64_t ra_g, uint64_t *gap)
{
	uint64_t sw = go_entry(maps, sw_pc, NULL, NULL), fn, x, v, w;
	int32_t size;

	if (!sw || bp < GAP_SCAN + 4096)
		return 0;
	fn = call_target(maps, ra_g);
	if (!fn || go_entry(maps, fn, NULL, &size) != fn || size < 8 ||
	    !livestack_word(live, bp - size, &v) || !v ||
	    go_entry(maps, v - 1, NULL, NULL) != fn)
		return gap_scan(maps, live, bp, sw, gap);
	if (calls_switch(maps, v, sw)) {
		gap[0] = v - 1;
		return 1;
	}
	x = call_target(maps, v);
	if (!x || !livestack_word(live, bp - size - 8, &w) || !w ||
	    go_entry(maps, w - 1, NULL, NULL) != x ||
	    !calls_switch(maps, w, sw))
		return 0;
	gap[0] = w - 1;
	gap[1] = v - 1;
	return 2;
}

/*
 * Go's runtime switches stacks inside some functions (to g0's, in mcall
 * and systemstack, and to call the vDSO in nanotime1, walltime and
 * time.now; back from a signal handler, in sigreturn) and starts them in
 * others (goexit, mstart, rt0_go), and their CFI does not say so: what
 * lies above their frame is whatever another stack left there. Go's own
 * traceback stops at them too (its "top frame" function IDs, and the
 * vDSO caller it records in m); perf stops or goes astray. The signal
 * handler, sigtramp, is entered by no call: the kernel made the restorer,
 * sigreturn's first byte, its return address, so the caller's pc is that
 * byte (GO_INJECTED), not the padding before it. The names are matched
 * with or without their ABI suffix (".abi0").
 */
enum go_top gostack_top_frame(const char *name)
{
	static const struct {
		const char *name;
		enum go_top top;
	} tops[] = {
		{ "runtime.mcall", GO_SWITCH },
		{ "runtime.morestack", GO_SWITCH },
		{ "runtime.systemstack", GO_SWITCH },
		{ "runtime.systemstack_switch", GO_SWITCH },
		{ "runtime.asmcgocall", GO_SWITCH },
		{ "runtime.sigreturn", GO_SWITCH },
		{ "runtime.sigreturn__sigaction", GO_SWITCH },
		{ "runtime.nanotime1", GO_SWITCH },
		{ "runtime.walltime", GO_SWITCH },
		{ "runtime.walltime1", GO_SWITCH },
		{ "runtime.vgetrandom1", GO_SWITCH },
		{ "time.now", GO_SWITCH },
		{ "runtime.asyncPreempt", GO_INJECTED },
		{ "runtime.sigpanic", GO_INJECTED },
		{ "runtime.sigtramp", GO_INJECTED },
		{ "runtime.cgoSigtramp", GO_INJECTED },
		{ "runtime.goexit", GO_START },
		{ "runtime.mstart", GO_START },
		{ "runtime.rt0_go", GO_START },
	};

	if (!name || (strncmp(name, "runtime.", 8) && strncmp(name, "time.", 5)))
		return GO_NOT_TOP;
	for (size_t i = 0; i < sizeof(tops) / sizeof(*tops); i++) {
		size_t n = strlen(tops[i].name);

		if (!strncmp(name, tops[i].name, n) &&
		    (!name[n] || !strcmp(name + n, ".abi0")))
			return tops[i].top;
	}
	return GO_NOT_TOP;
}

/*
 * Go's linker writes CFI for the CFA and the return address only: the
 * caller's frame pointer, which every Go function with a frame saves just
 * below its return address, has no rule, and "same value" would hand the
 * callee's RBP up the stack. A switch found past such frames (a signal's
 * restorer, then mcall above the scheduler's frames) then read a frame
 * chain from a stale RBP: in a Go program taking signals, nearly half the
 * handler's samples repeated scheduler frames, stopm ... mcall twice or
 * three times. The rule is the one gostack_row() gives Go code without
 * CFI. For Go's own functions only (the caller checks): cgo's C code has
 * its compiler's CFI, where no RBP rule does mean "same value".
 */
void gostack_fp_rule(struct cfi_row *row)
{
	for (int i = 0; i < row->nrules; i++)
		if (row->rules[i].reg == CFI_REG_RBP)
			return;
	if (row->cfa_reg != CFI_REG_RSP || row->cfa_off < 16 ||
	    row->nrules >= CFI_MAX_RULES)
		return;
	row->rules[row->nrules++] = (struct cfi_rule){
		.reg = CFI_REG_RBP, .off = -16, .kind = CFI_OFFSET };
}

/*
 * The row of Go code without CFI (a Go program built -s -w has none, nor
 * has its assembly), from the frame size Go's table gives at the pc: the
 * return address just above the frame, and the caller's frame pointer
 * below it once the function has a frame (Go on amd64 saves it there).
 */
int gostack_row(const struct gopcln *g, uint64_t vaddr,
		struct cfi_row *row)
{
	int32_t delta;

	if (gopcln_sp_delta(g, vaddr, &delta) || delta > (1 << 24))
		return -ENOENT;
	*row = (struct cfi_row){ .cfa_reg = CFI_REG_RSP, .cfa_off = delta + 8,
				 .nrules = 1 };
	row->rules[0] = (struct cfi_rule){ .reg = CFI_REG_RA, .off = -8,
					   .kind = CFI_OFFSET };
	if (delta >= 8)
		row->rules[row->nrules++] = (struct cfi_rule){
			.reg = CFI_REG_RBP, .off = -16, .kind = CFI_OFFSET };
	return 0;
}
