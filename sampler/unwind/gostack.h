/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gostack.h - where a Go program's stacks switch (the system stack, g0's,
 * and a goroutine's), what a frame-pointer walk across the switch misses.
 *
 * For the unwinder (unwind.h): stateless, the maps and live reader
 * borrowed; thread-safe as they are.
 */
#ifndef PROFFS_GOSTACK_H
#define PROFFS_GOSTACK_H

#include <stdbool.h>
#include <stdint.h>

#include "sampler/unwind/cfi.h"

struct gopcln;
struct livestack;
struct proc_maps;

/* Where a Go function leaves the unwinder (its stacks, unwind.c). */
enum go_top {
	GO_NOT_TOP,
	GO_SWITCH,		/* switches stacks: the rest is elsewhere */
	GO_START,		/* the first frame of a stack */
	GO_INJECTED,		/* called by no call: the runtime made the
				 * interrupted frame look like its caller
				 * (asyncPreempt, sigpanic), or the kernel
				 * the signal restorer (sigtramp's caller,
				 * runtime.sigreturn's first byte), whose pc
				 * is exact, not a return address */
};

/*
 * Go's runtime switches stacks inside some functions and starts them in
 * others, and their CFI does not say so: which name (of a Go program's
 * function, with or without its ABI suffix) is which, or GO_NOT_TOP.
 */
enum go_top gostack_top_frame(const char *name);

/* The CFI row of Go code without CFI, from the frame size Go's table
 * gives at vaddr (see gostack.c). 0, or -ENOENT. */
int gostack_row(const struct gopcln *g, uint64_t vaddr,
		struct cfi_row *row);

/* A row of Go's own CFI (.debug_frame) completed with where the function
 * saved its caller's frame pointer, which Go's CFI never says (see
 * gostack.c). */
void gostack_fp_rule(struct cfi_row *row);

/* Whether pc is inside a function of a Go program's own table (not at
 * its first byte). */
bool gostack_code(struct proc_maps *maps, uint64_t pc);

/* Whether ra can return into Go code: the call before it is in a Go
 * function, past its entry, and ra is no function's first byte (a word
 * that is one is a stale code pointer, not a return address: a frame
 * chain read from a goroutine stack another thread runs on by now). */
bool gostack_return(struct proc_maps *maps, uint64_t ra);

/*
 * The frames a frame-pointer walk skips where the goroutine at sw_pc
 * (systemstack, mcall, morestack...) switched to the system stack: bp is
 * the frame pointer the switch kept (the goroutine's), ra_g the return
 * address the walk found next. Fills gap[0..1], leaf first, with the pcs
 * (return address - 1) of the frames between; returns how many (0-2).
 * Reads the goroutine's stack through live: a frame is only given when
 * it checks out (see gostack.c).
 */
int gostack_gap(struct proc_maps *maps, struct livestack *live, uint64_t bp,
		uint64_t sw_pc, uint64_t ra_g, uint64_t *gap);

#endif
