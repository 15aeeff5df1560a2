/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * javastack.h - stepping through a HotSpot JVM's own frames, where
 * unwinding by CFI ends: code in its code cache (compiled methods, the
 * interpreter, stubs such as the call stub that JavaCalls enters Java
 * by), which is in no ELF file and has no CFI.
 *
 * Every such frame on x86-64 begins as the JVM's code builds it: the
 * caller's call pushes the return address, the callee's prologue pushes
 * RBP (compiled methods, the interpreter's "enter", the call stub's).
 * A frame's size is not read from the JVM (its CodeBlob's frame size,
 * which async-profiler reads through gHotSpotVMStructs, is not used yet):
 * the frame's words are scanned upward from its sp for the first that
 * returns into code the JVM runs (its code cache or libjvm.so) right
 * after a call instruction; the word below it is the caller's RBP. The
 * words of a Java frame (spilled values, oops, Method pointers, bytecode
 * pointers, entry points) are not return addresses after a call, so the
 * first one found is the frame's own. Once the walk is back in libjvm.so
 * (JavaCalls::call_helper), CFI goes on to the thread's start.
 *
 * What code is: the interpreter's range and the call stub's return
 * address from the JVM's own tables (javamethod_interpreter()), so that
 * they are known before the JVM has written its perf map, or when it
 * cannot; the rest (other stubs' names) from the perf map.
 *
 * For the unwinder (unwind.h): one per unwinder, not thread-safe; the
 * maps are borrowed. Code bytes are read from the process, a small
 * table remembers which return addresses checked out.
 */
#ifndef PROFFS_JAVASTACK_H
#define PROFFS_JAVASTACK_H

#include <stdbool.h>
#include <stdint.h>

/* How far above a frame's sp its return address is looked for. */
#define JAVASTACK_SCAN_BYTES 8192

/*
 * An interpreted frame stands in a stack for its Method and where it is
 * in the Method's bytecodes: the Method's address (a user address, below
 * 2^47 on x86-64), bit 47 set, and in bits 48..63 the low 16 bits of
 * the frame's bytecode pointer, from which and the Method's code base
 * the bytecode index follows (a method's code is under 64 KiB).
 */
#define JAVASTACK_INTERP_BIT (1ull << 47)

static inline uint64_t javastack_interp_pc(uint64_t method, uint64_t bcp)
{
	if (method >= JAVASTACK_INTERP_BIT)
		return method;	/* no room: no bytecode index */
	return method | JAVASTACK_INTERP_BIT | (bcp & 0xffff) << 48;
}

/* Whether pc is an interpreted frame's (javastack_interp_pc()), with its
 * Method and the low 16 bits of its bytecode pointer. */
static inline bool javastack_interp_split(uint64_t pc, uint64_t *method,
					  uint16_t *bcp16)
{
	if (!(pc & JAVASTACK_INTERP_BIT))
		return false;
	*method = pc & (JAVASTACK_INTERP_BIT - 1);
	*bcp16 = (uint16_t)(pc >> 48);
	return true;
}

struct javastack;
struct proc_maps;

/* 0 with *out NULL when the process maps no libjvm.so; -ENOMEM. */
int javastack_new(struct proc_maps *maps, struct javastack **out);
void javastack_free(struct javastack *js);

/* Whether pc is in the JVM's code cache (executable, in no file). */
bool javastack_code(struct javastack *js, uint64_t pc);

/* Reads the stack word at addr into *v: false when it cannot. */
typedef bool (*javastack_word_fn)(void *arg, uint64_t addr, uint64_t *v);

/*
 * The caller of the frame at pc whose sp is sp and whose RBP is bp: its
 * return address *ra, its sp *caller_sp and its RBP *caller_bp
 * (*bp_known false when it could not be read). *method is the Method
 * an interpreted frame runs and where in it, javastack_interp_pc()
 * (javamethod.h names it; it lives in memory that is not executable, so
 * it cannot be taken for a pc), else 0.
 * false when no return address is found.
 */
bool javastack_step(struct javastack *js, javastack_word_fn word, void *arg,
		    uint64_t pc, uint64_t sp, uint64_t bp, uint64_t *ra,
		    uint64_t *caller_sp, uint64_t *caller_bp, bool *bp_known,
		    uint64_t *method);

#endif
