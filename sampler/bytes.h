/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bytes.h - fields of another process's structures, read from a copy in
 * our memory at any alignment (host byte order: the target runs on this
 * machine). The runtimes' readers (python.c, gort.c, javascope.c) copy a
 * structure in one process_vm_readv and take its fields from the copy;
 * memcpy is what keeps an unaligned offset defined.
 */
#ifndef PROFFS_SAMPLER_BYTES_H
#define PROFFS_SAMPLER_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint64_t ld_u64(const void *base, uint64_t off)
{
	uint64_t v;

	memcpy(&v, (const uint8_t *)base + off, sizeof(v));
	return v;
}

static inline uint32_t ld_u32(const void *base, uint64_t off)
{
	uint32_t v;

	memcpy(&v, (const uint8_t *)base + off, sizeof(v));
	return v;
}

static inline int32_t ld_i32(const void *base, uint64_t off)
{
	return (int32_t)ld_u32(base, off);
}

#endif
