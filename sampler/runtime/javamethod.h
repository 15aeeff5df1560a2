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

#include <stdbool.h>
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

/* As javamethod_line(), for bytecode index bci (-ENOENT when < 0). */
int javamethod_line_bci(struct javamethod *m, uint64_t addr, int bci,
			char *file, size_t fsize, int *line);

/*
 * The name of the Method at addr as HotSpot's Method::external_name()
 * writes it, which is how its perf map names compiled code:
 * "long pkg.Class.method(int, java.lang.String[])". -ENOENT (no layout
 * for it), -EFAULT.
 */
int javamethod_external_name(struct javamethod *m, uint64_t addr, char *buf,
			     size_t size);

/* The same from a method's name "pkg.Class.method" and its descriptor
 * desc[0..dlen), with '.' for '/': "(J[Lpkg.T;)V". 0 or -EINVAL (no
 * descriptor, or buf too small). */
int javamethod_external(const char *name, const char *desc, size_t dlen,
			char *buf, size_t size);

/*
 * Where a compiled method (nmethod) keeps what javascope.h reads: the
 * offsets of fields in the nmethod (its CodeBlob and CompiledMethod
 * parts) and in a PcDesc, and their sizes, from gHotSpotVMStructs and
 * gHotSpotVMTypes (the fields HotSpot 17 exports; a JVM that exports
 * others gets -ENOENT: no inlined frames).
 */
struct javamethod_nm {
	uint64_t size, header_size;	/* CodeBlob: int */
	uint64_t code_begin, code_end;	/* CodeBlob: address */
	uint64_t method;		/* CompiledMethod: Method* */
	uint64_t scopes_data_begin;	/* CompiledMethod: address */
	uint64_t metadata_offset, scopes_pcs_offset;	/* nmethod: int */
	uint64_t dependencies_offset;	/* nmethod: int */
	uint64_t pc_offset, scope_offset;	/* PcDesc: int */
	uint64_t nm_size, pc_size;	/* sizeof(nmethod), sizeof(PcDesc) */
};

/* 0 with *nm; -ENOENT. */
int javamethod_layout(struct javamethod *m, struct javamethod_nm *nm);

/*
 * Where the template interpreter's code is, [*start, *end): its
 * StubQueue (AbstractInterpreter::_code, a static field of libjvm.so,
 * and the queue's _stub_buffer and _buffer_limit), as the Serviceability
 * Agent's Interpreter.contains() finds it; and *call_ra, where Java code
 * returns into the call stub (StubRoutines::_call_stub_return_address).
 * Known without the perf map. 0; -ENOENT (not exported), -EFAULT.
 */
int javamethod_interpreter(struct javamethod *m, uint64_t *start,
			   uint64_t *end, uint64_t *call_ra);

/* An int of HotSpot's CompressedReadStream (UNSIGNED5: bytes below 192
 * end it, each further one worth 64 times more) at *i of t[0..n),
 * moving *i past it; false when t ends first. */
bool javamethod_u5(const uint8_t *t, size_t n, size_t *i, uint32_t *v);

/* For tests: the line of bytecode index bci in the compressed line
 * number table t[0..n), -1 when it names none. */
int javamethod_table_line(const uint8_t *t, size_t n, uint32_t bci);

#endif
