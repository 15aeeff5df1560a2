/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ksym_bpf_abi.h - what the kernel's symbol namer (ksym_bpf.bpf.c) and
 * its user half (ksym_bpf.c) share: one exchange area, the program's
 * global data (its .bss map, mapped by the daemon). Included by both;
 * only linux/types.h types.
 */
#ifndef PROFFS_KSYM_BPF_ABI_H
#define PROFFS_KSYM_BPF_ABI_H

#include <linux/types.h>

/* A name (up to 512) and its "+0x1/0x2 [module]"; a power of 2. */
#define KSYM_BPF_TEXT 1024

struct ksym_io {
	__u64 addr;		/* in: ksym_name's address */
	__u64 len;		/* in: ksym_addr's name, its NUL counted */
	__u64 res;		/* out: ksym_addr's address */
	char text[KSYM_BPF_TEXT];	/* out: ksym_name's; in: ksym_addr's */
};

#endif
