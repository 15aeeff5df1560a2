// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz-cfi.c - libFuzzer harness for sampler/unwind/cfi.c, the CFI parser. Two
 * kinds of input:
 *
 *  - an ELF file (it starts with the ELF magic): loaded from a memfd as
 *    fuzz-dso does, then rows are asked for at the addresses its
 *    .eh_frame_hdr table names and next to them, through its first code
 *    pages and at addresses taken from the input's tail: .eh_frame
 *    through the table, .debug_frame through the dso where .eh_frame has
 *    no FDE;
 *  - anything else: 8 bytes of address, then the bytes of a .debug_frame
 *    section, asked for rows at and above that address.
 *
 * Not built by meson (tests/fuzz/run.sh builds it):
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *     -Isampler -Isampler/unwind tests/fuzz/fuzz-cfi.c sampler/unwind/cfi.c sampler/unwind/dso.c \
 *     sampler/log.c -ldw -lelf -o fuzz-cfi
 *   ./fuzz-cfi -max_len=65536 tests/fuzz/corpus-cfi
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sampler/unwind/cfi.h"
#include "sampler/unwind/dso.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every field of a row, so none of its computation is dead. */
static size_t use(int ret, const struct cfi_row *row)
{
	size_t sum = (size_t)-ret;

	if (ret)
		return sum;
	sum += row->cfa_reg + row->cfa_off + row->nrules + row->signal;
	for (int i = 0; i < row->nrules && i < CFI_MAX_RULES; i++)
		sum += row->rules[i].reg + row->rules[i].kind +
		       row->rules[i].off + row->rules[i].src;
	return sum;
}

static size_t probe(struct dso *d, uint64_t vaddr)
{
	struct dso_debug_frame df;
	struct cfi_fde fde;
	struct cfi_row row;
	size_t sum = use(cfi_row_at(d, vaddr, &row), &row);

	if (!cfi_debug_frame_fde(d, vaddr, &df, &fde))
		sum += fde.off + fde.start + fde.end + fde.plain +
		       df.data[fde.off];
	return sum;
}

static size_t elf_input(const uint8_t *data, size_t size)
{
	struct dso_cache *c;
	struct dso *d;
	uint64_t va, sz, first;
	uint32_t count;
	int32_t e[2];
	char path[64];
	size_t sum = 0, i;
	int fd;

	fd = memfd_create("fuzz-cfi", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size || dso_cache_new("", &c)) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!dso_cache_get(c, path, "/fuzz/input", &d)) {
		/* the table's entries, and inside and after their FDEs */
		if (!dso_eh_frame_hdr(d, &va, &sz) &&
		    !dso_read(d, va + 8, &count, sizeof(count))) {
			for (i = 0; i < count && i < 32; i++) {
				if (dso_read(d, va + 12 + 8 * i, e, sizeof(e)))
					break;
				for (uint64_t k = 0; k < 64; k += 5)
					sum += probe(d, va + e[0] + k);
			}
		}
		/* the first code pages of a small program */
		if (!dso_offset_to_vaddr(d, 0, false, &first))
			for (va = first + 0x1000; va < first + 0x1400; va += 3)
				sum += probe(d, va);
		/* addresses from the input's tail, as samples would bring */
		for (i = 0; i + 8 <= size && i < 64; i += 8) {
			memcpy(&va, data + size - 8 - i, 8);
			sum += probe(d, va & 0xffffff);
		}
		dso_put(d);
	}
	dso_cache_free(c);
	close(fd);
	return sum;
}

static size_t section_input(const uint8_t *data, size_t size)
{
	struct cfi_row row;
	uint64_t base;
	size_t sum = 0;

	if (size < 8)
		return 0;
	memcpy(&base, data, 8);
	for (uint64_t k = 0; k < 24; k++) {
		uint64_t va = base + (k < 16 ? k : 16 * (k - 15));

		sum += use(cfi_debug_frame_row(data + 8, size - 8, va, &row),
			   &row);
	}
	return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	volatile size_t sink;

	if (size >= 4 && !memcmp(data, "\177ELF", 4))
		sink = elf_input(data, size);
	else
		sink = section_input(data, size);
	(void)sink;
	return 0;
}
