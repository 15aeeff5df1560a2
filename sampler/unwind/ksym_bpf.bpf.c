// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ksym_bpf.bpf.c - the kernel names its own functions: two programs
 * (BPF_PROG_TYPE_SYSCALL) the daemon runs with BPF_PROG_TEST_RUN, one
 * to name an address ("%pS": the kernel's own symbol lookup, a binary
 * search over its compressed table) and one to find a name's address
 * (bpf_kallsyms_lookup_name()). Where /proc/kallsyms makes the kernel
 * format all of its 120,000 lines (~35 ms of CPU), a profile's few
 * hundred kernel frames cost about a microsecond each this way. They
 * read and write only their own .bss (ksym_bpf_abi.h). Built with clang
 * -target bpf; embedded in the daemon.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "sampler/unwind/ksym_bpf_abi.h"

char LICENSE[] SEC("license") = "GPL";

struct ksym_io io;

SEC("syscall")
int ksym_name(void *ctx)
{
	__u64 data[1] = { io.addr };

	return bpf_snprintf(io.text, sizeof(io.text), "%pS", data,
			    sizeof(data));
}

SEC("syscall")
int ksym_addr(void *ctx)
{
	/* the kernel checks the name ends at len (its NUL); the mask only
	 * bounds len for the verifier */
	return bpf_kallsyms_lookup_name(io.text, io.len & (KSYM_BPF_TEXT - 1),
					0, &io.res);
}
