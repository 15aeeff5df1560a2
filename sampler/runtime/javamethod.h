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

/*
 * The source file of the Method at addr's class into file (its
 * SourceFile attribute, "Known.java"; "" when it has none), and into
 * *line the line of the bytecode whose pointer's low 16 bits are bcp16
 * (javastack.h), from the ConstMethod's compressed line number table,
 * through the fields, sizes and flag gHotSpotVMStructs, gHotSpotVMTypes
 * and gHotSpotVMIntConstants export. 0 with both; -ENOENT (no layout for
 * lines, no table, a bytecode outside the method: *line 0, file may be
 * set), -EFAULT, -ENOMEM.
 */
int javamethod_line(struct javamethod *m, uint64_t addr, uint16_t bcp16,
		    char *file, size_t fsize, int *line);

/* For tests: the line of bytecode index bci in the compressed line
 * number table t[0..n), -1 when it names none. */
int javamethod_table_line(const uint8_t *t, size_t n, uint32_t bci);

#endif
