/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * safepoint.h - is a stopped thread somewhere a call injected into its
 * process could deadlock or corrupt it? (SPEC §3, §9: never harm the
 * target.)
 *
 * inject.c holds every thread of a process and then calls dlopen and the
 * agent in it. That call takes the allocator's arena locks, the loader's
 * locks, the atfork list lock and the thread stack cache lock, and uses
 * the heap. A thread stopped while holding one of them, or halfway
 * through changing the heap, makes the call deadlock or corrupt the heap
 * (glibc: "malloc assertion failure in sysmalloc").
 *
 * Safety is decided by address, never by the name a symbolizer picks:
 * calloc's address is named __libc_calloc, and a list of names missed it.
 * For every object a stack passes through, the ranges of every symbol
 * whose name is on the unsafe list (aliases included, whatever the
 * symbolizer calls the address) are computed once. On top:
 *  - the dynamic loader and the heap agent are unsafe as a whole;
 *  - a shared library other than libc that defines malloc (jemalloc,
 *    tcmalloc, mimalloc) is unsafe as a whole: its internals are not
 *    named in .dynsym;
 *  - in an object that defines malloc (libc), code no symbol names is
 *    unsafe when the named code beside it is: without a debug file,
 *    _int_malloc, sysmalloc and malloc.c's other static functions are
 *    such code, between the exported malloc functions;
 *  - a stack that cannot be unwound to a frame outside libc and the
 *    loader is unsafe (the frame that would have told is missing).
 * A thread inside a system call issued by the allocator or the loader is
 * caught by the same rules: its stack shows the allocator's frame.
 * pthread_join, vfork and posix_spawn are unsafe except while they wait
 * in their system call (futex; vfork, clone): see wait_fns in
 * safepoint.c.
 *
 * One per injection; not thread-safe. The maps are borrowed. Errors are
 * negative errno values.
 */
#ifndef PROFFS_SAFEPOINT_H
#define PROFFS_SAFEPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_maps;
struct safepoint;

int safepoint_new(pid_t pid, struct proc_maps *maps, struct safepoint **out);
void safepoint_free(struct safepoint *sp);

/*
 * Judge one stack: pcs as unwind_stack() gives them (leaf first), n of
 * them, complete as unwind_last_complete() says, sysno the system call
 * the thread is in (-1: none). true when it is unsafe,
 * with a short reason ("__libc_calloc in libc.so.6", the innermost
 * unsafe frame) in why, and in *resume_at the return address that leaves
 * the outermost unsafe frame (0 when no frame above it is known): once
 * the thread gets there it holds nothing of the allocator's or the
 * loader's.
 */
bool safepoint_unsafe(struct safepoint *sp, const uint64_t *pcs, int n,
		      bool complete, long sysno, uint64_t *resume_at,
		      char *why, size_t why_len);

#endif
