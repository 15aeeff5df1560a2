/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * javamethod.h - the name of a HotSpot Method, read from outside with
 * process_vm_readv, by the layout the JVM itself exports for debuggers
 * (gHotSpotVMStructs and gHotSpotVMTypes of libjvm.so, what the
 * Serviceability Agent and async-profiler read): Method -> ConstMethod ->
 * its ConstantPool's name Symbol, and the pool's holder Klass's name.
 * Names an interpreted frame, whose Method the interpreter keeps in the
 * frame (javastack.h).
 *
 * One per symbolizer, not thread-safe; the maps are borrowed. Errors are
 * negative errno values: -ENOENT (no libjvm.so, or a field missing from
 * its tables), -EFAULT (memory that cannot be read, or is not a Method).
 */
#ifndef PROFFS_JAVAMETHOD_H
#define PROFFS_JAVAMETHOD_H

#include <stddef.h>
#include <stdint.h>

struct javamethod;
struct proc_maps;

/* 0 with *out set (the tables are read at the first name), -ENOMEM. */
int javamethod_new(struct proc_maps *maps, struct javamethod **out);
void javamethod_free(struct javamethod *m);

/* "pkg.Class.method" of the Method at addr into buf. */
int javamethod_name(struct javamethod *m, uint64_t addr, char *buf,
		    size_t size);

#endif
