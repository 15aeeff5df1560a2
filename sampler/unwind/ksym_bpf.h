/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ksym_bpf.h - kernel symbols asked of the kernel one at a time, through
 * two small eBPF programs (ksym_bpf.bpf.c), instead of reading all of
 * /proc/kallsyms: naming an address costs ~1 us, where the kernel takes
 * ~35 ms of CPU to format the whole file, and nothing is kept but the
 * programs and one page (kallsyms.c keeps the last 512 answers). The
 * kallsyms table (kallsyms.h) uses it when it can: a root daemon
 * (CAP_BPF and CAP_PERFMON), a kernel of 5.16 or later
 * (BPF_PROG_TYPE_SYSCALL, bpf_kallsyms_lookup_name()), a build with
 * libbpf.
 *
 * The kernel names an address with its own choice among aliases (one in
 * ~3,000 differs from perf's, e.g. __do_sys_vhangup for perf's
 * __ia32_sys_vhangup), and modules' functions without their module.
 *
 * One namer, owned by its caller; not thread-safe (one exchange area):
 * the caller serializes. Errors: negative errno; ksym_bpf_open()'s are
 * reasons to read /proc/kallsyms instead (-ENOTSUP: built without
 * libbpf; -EPERM: not allowed; -EINVAL: a kernel without these
 * programs).
 */
#ifndef PROFFS_KSYM_BPF_H
#define PROFFS_KSYM_BPF_H

#include <stddef.h>
#include <stdint.h>

struct ksym_bpf;

int ksym_bpf_open(struct ksym_bpf **out);
void ksym_bpf_close(struct ksym_bpf *b);

/*
 * The function holding addr: its name into buf (len bytes, NUL-ended,
 * cut to fit), its start into *start. -ENOENT when the kernel has no
 * symbol there (it prints the bare address).
 */
int ksym_bpf_name(struct ksym_bpf *b, uint64_t addr, char *buf, size_t len,
		  uint64_t *start);

/* The address of the symbol called name (len bytes, not NUL-ended), any
 * alias or marker the kernel lists. -ENOENT when it has none. */
int ksym_bpf_addr(struct ksym_bpf *b, const char *name, size_t len,
		  uint64_t *addr);

/* The bytes a namer takes in the daemon (its mapped exchange page). */
size_t ksym_bpf_bytes(const struct ksym_bpf *b);

#endif
