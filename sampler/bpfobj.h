/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpfobj.h - loading the eBPF programs the daemon carries (compiled by
 * clang, embedded by embed.py: pybpf.bpf.c, ksym_bpf.bpf.c), with
 * libbpf's messages sent to the daemon's debug log, not its stderr: a
 * program that does not load is a reason to take the other way, which
 * its caller logs once, in its own words.
 *
 * Only with PROFFS_BPF (libbpf and clang at build time). The caller owns
 * the object (bpf_object__close()). Errors: negative errno.
 */
#ifndef PROFFS_BPFOBJ_H
#define PROFFS_BPFOBJ_H

#ifdef PROFFS_BPF
#include <stddef.h>

struct bpf_object;

/* Open the object image (len bytes) as name, and load it. */
int bpfobj_load(const void *image, size_t len, const char *name,
		struct bpf_object **out);
#endif

#endif
