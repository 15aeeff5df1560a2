/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * unwind.h - DWARF CFI unwinding of a copied user stack, with libunwind's
 * remote API.
 *
 * Input is what a perf sample (or a ptrace stop) gives: the user registers
 * and a copy of the top of the stack. Memory outside the copy is read from
 * the ELF files (the unwind tables themselves, code bytes for signal-frame
 * checks) through the process's maps, so an unwind is consistent with the
 * moment the sample was taken - except, when unwinder_read_live() asked
 * for it, the stack past a full copy, read from the process and checked
 * frame by frame (livestack.h). Works for code
 * built without frame pointers: only DWARF CFI is used, from .eh_frame, and
 * from .debug_frame (the object's or its debug file's) for code .eh_frame
 * does not cover.
 *
 * Stacks are unwound from CFI rows cached per pc (cfi.h), one hash probe
 * per frame; a stack with a frame the rows cannot express (no FDE, DWARF
 * expressions: PLT stubs, signal trampolines) is unwound by libunwind
 * instead, with the same result rules. The caches are dropped whenever
 * the maps are reloaded. In a Go program a stack ends at the runtime's
 * functions that switch stacks or start them (mcall, systemstack, the
 * vDSO's callers, goexit...), as Go's own traceback ends it: their CFI
 * does not describe the switch.
 *
 * One unwinder per session (it owns a libunwind address space, its
 * cache and the row cache: memory bounded, about 7 MiB at most); not
 * thread-safe. The maps are borrowed.
 */
#ifndef PROFFS_UNWIND_H
#define PROFFS_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_maps;
struct unwinder;

/* libunwind's x86-64 register numbering */
enum unwind_reg {
	UREG_RAX, UREG_RDX, UREG_RCX, UREG_RBX, UREG_RSI, UREG_RDI,
	UREG_RBP, UREG_RSP, UREG_R8, UREG_R9, UREG_R10, UREG_R11,
	UREG_R12, UREG_R13, UREG_R14, UREG_R15, UREG_RIP, UREG__COUNT,
};

struct unwind_regs {
	uint64_t r[UREG__COUNT];
};

int unwinder_new(struct proc_maps *maps, struct unwinder **out);
/* The heap u takes, about: its cache of CFI rows and libunwind's space
 * (a livestack's buffers not included). */
size_t unwinder_mem_bytes(const struct unwinder *u);
void unwinder_free(struct unwinder *u);

/*
 * Let unwind_stack() read the stack of pid past its copies, up to
 * LIVESTACK_MAX bytes from sp, and keep the frames found there that pass
 * livestack_check(). For samplers whose copies the kernel cuts (perf's).
 * 0 or -ENOMEM.
 */
int unwinder_read_live(struct unwinder *u, pid_t pid);

/*
 * For the next unwind_stack() only: the user frames the kernel found by
 * frame pointers at the sample (perf_open_fp()), leaf first, borrowed
 * until that call returns. Where a Go stack switches (the system stack
 * to the goroutine's), the unwind goes on with them rather than with
 * words read from the process later. n = 0: none.
 */
void unwinder_set_fp_chain(struct unwinder *u, const uint64_t *ips,
			   size_t n);

/*
 * Unwind from regs over the stack copy (stack[0] is the byte at regs
 * RSP). Stores up to max program counters, leaf first, in pcs; *n is the
 * count (>= 1: the leaf is always stored). Frames other than the leaf
 * hold the return address minus one, i.e. an address inside the call
 * instruction, so symbolization lands on the calling line. Returns 0;
 * an unwind that stops early is not an error.
 */
int unwind_stack(struct unwinder *u, const struct unwind_regs *regs,
		 const void *stack, size_t stack_len, uint64_t *pcs, int max,
		 int *n);

/*
 * Of the last unwind_stack(): how many bytes of the stack copy it read
 * (from the copy's start to the end of the highest word, live words
 * included), and whether it wanted a stack word beyond what it had (the
 * copy, and the live words it could read). For callers that decide how
 * much stack to copy (the heap agent).
 */
void unwind_last_stack_use(const struct unwinder *u, size_t *used,
			   bool *short_copy);

/*
 * Whether the last unwind_stack() reached the outermost frame (the return
 * address marked undefined, as _start and a new thread's first frame
 * have it, or 0), rather than stopping where the CFI or the stack copy
 * ran out or at max frames. What a caller needs that must know no frame
 * was missed (inject.c's safety check).
 */
bool unwind_last_complete(const struct unwinder *u);

#endif
