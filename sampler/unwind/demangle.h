/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * demangle.h - symbol names as perf, c++filt and rustfilt print them.
 *
 * C++ (the Itanium ABI, "_Z..."): without parameter lists, as perf
 * reports them (a profile's function is the code, not an overload set:
 * the mangled name stays in pprof's system_name). Rust legacy names
 * ("_ZN...17h<16 hex digits>E"): "$LT$", "$GT$", "$u20$", ".." decoded,
 * the hash dropped. Rust v0 ("_R..."): as rustfilt prints it. The
 * demangler is libiberty's, the code of c++filt, nm -C and perf.
 *
 * No state, no lock: callable from any thread. Names longer than
 * DEMANGLE_MAX are left alone: libiberty's C++ demangler sizes its stack
 * frame by the name (64 bytes a character) and recurses as deep as it
 * nests. It refuses names over 1,024 characters itself unless told not
 * to, which is how c++filt and perf leave long template names mangled;
 * here they are demangled up to DEMANGLE_MAX, well within a thread's
 * stack.
 */
#ifndef PROFFS_DEMANGLE_H
#define PROFFS_DEMANGLE_H

#define DEMANGLE_MAX 4096

/*
 * The demangled form of name in *out (malloc'd; the caller frees it).
 * Returns 0; -EINVAL when name is not a mangled C++ or Rust name, or is
 * malformed, or longer than DEMANGLE_MAX; -ENOMEM.
 */
int demangle(const char *name, char **out);

#endif
