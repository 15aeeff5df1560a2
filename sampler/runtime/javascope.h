/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * javascope.h - the Java frames of a pc in code HotSpot compiled: the
 * compiled method (nmethod) and the methods its compiler inlined into
 * it, each with its bytecode index, from the debug information the JVM
 * keeps for its own deoptimization and stack walks (what async-profiler
 * and the Serviceability Agent read).
 *
 * The nmethod is found from the perf map's entry of the code (its code
 * range): its header sits before its code, and names that range itself
 * (CodeBlob::_code_begin and _code_end). Its PcDescs (pc offset from the
 * code's start, offset of the innermost scope) lead into its scopes data,
 * a CompressedReadStream (UNSIGNED5) of records: the sender's offset,
 * the Method (an index into the nmethod's metadata section), the bci.
 * The layout is javamethod.h's (javamethod_layout()).
 *
 * Which PcDesc: the first at or after the pc (async-profiler's rule).
 * A caller's pc is its return address less one (unwind.h); HotSpot
 * records a call's debug information at its return address, which is
 * the first PcDesc after that pc: the exact scope of the call. A leaf's
 * pc is anywhere; without -XX:+DebugNonSafepoints only calls and
 * safepoint polls have PcDescs, and the next one is the nearest point the
 * JVM itself could describe: the method and inlining are right, the line
 * is that of the next call or poll.
 *
 * Everything is read with process_vm_readv and checked against the
 * nmethod's size; what does not check out is an error, for the caller
 * to fall back to the code's perf map name. A bounded cache keeps the
 * sections of the last nmethods read (a cache of nmethods that failed,
 * too). Never stops the JVM.
 *
 * One per symbolizer, not thread-safe; the javamethod is borrowed.
 */
#ifndef PROFFS_JAVASCOPE_H
#define PROFFS_JAVASCOPE_H

#include <stdint.h>
#include <sys/types.h>

struct javamethod;
struct javamethod_nm;
struct javascope;

struct javascope_frame {
	uint64_t method;	/* a Method's address */
	int bci;		/* -1 when not known */
};

/* 0 with *out; -ENOMEM. */
int javascope_new(struct javamethod *m, pid_t pid, struct javascope **out);
void javascope_free(struct javascope *s);

/*
 * The frames of pc, in the nmethod whose code is [start, start + size),
 * innermost first into f[0..max), *n of them; the last is the nmethod's
 * own Method. 0; -ENOENT (no layout for it in this JVM), -EINVAL (what
 * was read is no nmethod of that code, or its debug information does not
 * check out), -E2BIG (more than max), -EFAULT, -ENOMEM.
 */
int javascope_find(struct javascope *s, uint64_t pc, uint64_t start,
		   uint64_t size, struct javascope_frame *f, int max, int *n);

/* For tests: use layout l instead of the JVM's. */
void javascope_set_layout(struct javascope *s, const struct javamethod_nm *l);

/* How many javascope_find() calls failed with -EINVAL or -E2BIG. */
unsigned long javascope_failures(const struct javascope *s);

#endif
