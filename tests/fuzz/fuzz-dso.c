// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz-dso.c - libFuzzer harness for sampler/unwind/dso.c: the input is an ELF
 * file (in a memfd, opened through /proc/self/fd like map_files), loaded,
 * read and symbolized at a few addresses. Not built by meson:
 *
 * The same bytes are also read as a Go .gopclntab (gopclntab.h) and
 * looked up at the same addresses: seed gopclntab-go118 is one.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *     -Isampler -Isampler/unwind tests/fuzz/fuzz-dso.c sampler/unwind/dso.c \
 *     sampler/unwind/gopclntab.c sampler/log.c \
 *     -ldw -lelf -o fuzz-dso
 *   ./fuzz-dso -max_len=65536 CORPUS_DIR    (seed it with small ELF files)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sampler/unwind/dso.h"
#include "sampler/unwind/gopclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t len(const char *s)
{
	return s ? strlen(s) : 0;
}

/* Returns a value depending on every string so none is optimized out:
 * the sanitizer must see a dangling one. */
static size_t poke(struct dso *d, uint64_t vaddr)
{
	struct dso_frame f[8];
	unsigned char buf[64];
	size_t sum = 0;
	int n, i;

	dso_read(d, vaddr, buf, sizeof(buf));
	if (dso_symbolize(d, vaddr, f, 8, &n))
		return 0;
	for (i = 0; i < n; i++)
		sum += len(f[i].function) + len(f[i].system_name) +
		       len(f[i].file) + f[i].line;
	return sum;
}

/* The input as a Go function table, looked up at va. */
static size_t poke_go(const struct gopcln *g, uint64_t va)
{
	struct gopcln_frame f[8];
	struct gopcln_func fn;
	size_t sum = 0;
	int32_t delta;
	int n;

	if (!gopcln_func(g, va, &fn))
		sum += len(fn.name) + fn.end - fn.entry;
	if (!gopcln_sp_delta(g, va, &delta))
		sum += delta;
	if (!gopcln_frames(g, va, f, 8, &n))
		for (int i = 0; i < n; i++)
			sum += len(f[i].function) + len(f[i].file) + f[i].line;
	return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dso_cache *c;
	struct dso_caps caps;
	struct dso *d;
	uint64_t va, sz;
	char path[64];
	volatile size_t sink = 0;
	size_t i;
	int fd;

	struct gopcln *g;

	if (!gopcln_new(data, size, 0x401000, &g)) {
		for (i = 0; i + 8 <= size && i < 64; i += 8) {
			memcpy(&va, data + size - 8 - i, 8);
			sink += poke_go(g, va & 0xffffff);
		}
		gopcln_free(g);
	}
	fd = memfd_create("fuzz-dso", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size || dso_cache_new("", &c)) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!dso_cache_get(c, path, "/fuzz/input", &d)) {
		dso_caps(d, &caps);
		if (!dso_offset_to_vaddr(d, 0, false, &va))
			sink += poke(d, va);
		if (!dso_eh_frame_hdr(d, &va, &sz))
			sink += poke(d, va);
		/* addresses from the input's tail, as a profile would bring */
		for (i = 0; i + 8 <= size && i < 64; i += 8) {
			memcpy(&va, data + size - 8 - i, 8);
			sink += poke(d, va & 0xffffff);
		}
		dso_put(d);
	}
	dso_cache_free(c);
	close(fd);
	return 0;
}
