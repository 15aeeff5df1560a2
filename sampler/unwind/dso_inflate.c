// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dso_inflate.c - a separate debug file with its compressed DWARF
 * sections inflated ahead of libdw, and only those symbolizing reads.
 *
 * Distributions ship debug files with SHF_COMPRESSED (zlib) sections, and
 * dwarf_begin_elf() inflates every DWARF section it knows, checksums
 * included: for libc6-dbg, 10 MB, most of a cold read's CPU. Location
 * lists and macros are a fifth of that and symbolizing never reads them.
 * dso_debug_inflate() copies the file into a memfd in which the sections
 * symbolizing reads (.debug_info, _abbrev, _line, _str, _rnglists, ...)
 * are stored inflated (raw inflate, by libdeflate when the build has it,
 * else zlib: the Adler-32 is not computed; the inflated size must be the
 * one the header states) and the others are
 * marked SHT_NOBITS, which libdw skips; libdwfl opens that memfd as the
 * debug file. Every other byte is the file's own.
 *
 * Only 64-bit ELF of this machine's byte order; anything else, an
 * uncompressed file, or any error leaves the file as it is (out_fd -1):
 * a slower load, never a different one.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#ifdef HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "sampler/unwind/dso_i.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23	/* Linux 5.14; older headers lack it */
#endif

/* Inflated sections are at most this large, each and all together (a
 * sane debug file's .debug_info is tens of MB; a crafted one in a
 * container's sysroot may claim anything). */
#define MAX_INFLATED	(1ull << 30)

/* Sections symbolizing never reads: not inflated, marked SHT_NOBITS. */
static const char *const skipped[] = {
	".debug_loc", ".debug_loclists", ".debug_macro", ".debug_macinfo",
	".debug_pubnames", ".debug_pubtypes", ".debug_gnu_pubnames",
	".debug_gnu_pubtypes",
};

static bool is_skipped(const char *name)
{
	for (size_t i = 0; i < sizeof(skipped) / sizeof(skipped[0]); i++)
		if (!strcmp(name, skipped[i]))
			return true;
	return false;
}

/* The name of section sh in the file, or NULL when out of bounds. */
static const char *sec_name(const unsigned char *map, size_t size,
			    const Elf64_Shdr *strtab, const Elf64_Shdr *sh)
{
	const char *s;

	if (strtab->sh_type == SHT_NOBITS || strtab->sh_offset > size ||
	    strtab->sh_size > size - strtab->sh_offset ||
	    sh->sh_name >= strtab->sh_size)
		return NULL;
	s = (const char *)map + strtab->sh_offset + sh->sh_name;
	if (!memchr(s, '\0', strtab->sh_size - sh->sh_name))
		return NULL;
	return s;
}

/* A compressed section of the file: its zlib stream and inflated size;
 * false when it is not one we inflate. */
static bool zlib_section(const unsigned char *map, size_t size,
			 const Elf64_Shdr *sh, const Elf64_Chdr **ch)
{
	if (!(sh->sh_flags & SHF_COMPRESSED) || sh->sh_type != SHT_PROGBITS ||
	    sh->sh_offset > size || sh->sh_size > size - sh->sh_offset ||
	    sh->sh_size <= sizeof(**ch) + 2 || sh->sh_offset % 8)
		return false;
	*ch = (const Elf64_Chdr *)(map + sh->sh_offset);
	return (*ch)->ch_type == ELFCOMPRESS_ZLIB && (*ch)->ch_size &&
	       (*ch)->ch_size <= MAX_INFLATED &&
	       (*ch)->ch_addralign <= 4096 &&
	       !((*ch)->ch_addralign & ((*ch)->ch_addralign - 1));
}

/* A zlib stream's header: deflate, no preset dictionary. */
static bool zlib_header_ok(const unsigned char *in)
{
	return (in[0] & 0x0f) == Z_DEFLATED && !(in[1] & 0x20) &&
	       !(((in[0] << 8) | in[1]) % 31);
}

#ifdef HAVE_LIBDEFLATE
/* Raw inflate of a zlib stream (header skipped, checksum not computed)
 * into exactly len bytes: libdeflate, about 3 times zlib's speed. */
static int inflate_exact(const unsigned char *in, size_t inlen,
			 unsigned char *out, size_t len)
{
	struct libdeflate_decompressor *z;
	enum libdeflate_result r;

	if (!zlib_header_ok(in))
		return -EINVAL;
	z = libdeflate_alloc_decompressor();
	if (!z)
		return -ENOMEM;
	r = libdeflate_deflate_decompress(z, in + 2, inlen - 2, out, len,
					  NULL);
	libdeflate_free_decompressor(z);
	return r == LIBDEFLATE_SUCCESS ? 0 : -EINVAL;
}
#else
/* The same with zlib. */
static int inflate_exact(const unsigned char *in, size_t inlen,
			 unsigned char *out, size_t len)
{
	z_stream z = { 0 };
	int ret;

	if (!zlib_header_ok(in))
		return -EINVAL;
	if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
		return -ENOMEM;
	z.next_in = (unsigned char *)in + 2;
	z.avail_in = inlen - 2 > UINT_MAX ? UINT_MAX : inlen - 2;
	z.next_out = out;
	z.avail_out = len > UINT_MAX ? UINT_MAX : len;
	ret = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	return ret == Z_STREAM_END && z.total_out == len ? 0 : -EINVAL;
}
#endif

static size_t align_up(size_t v, size_t a)
{
	return a > 1 ? (v + a - 1) & ~(a - 1) : v;
}

struct span {
	size_t off, end;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* What is done to each range of the image that build() writes. */
enum prep { PREP_RESERVE, PREP_POPULATE };

/* One range of the image that will be written: its disk space reserved
 * in fd, or its pages mapped writable in img ahead of the stores. */
static int prep_range(enum prep op, int fd, unsigned char *img, size_t off,
		      size_t len)
{
	if (op == PREP_RESERVE)
		return -posix_fallocate(fd, off, len);
	/* One call instead of a write fault per page: in a VM a fault is
	 * dear, and the stores through the shared mapping took a fifth of
	 * the inflate's CPU in them. From the range's first whole page
	 * (madvise wants it aligned; a page before it may be a hole's);
	 * the last page is written in part, so it may be taken whole.
	 * Best effort: a kernel before 5.14 says EINVAL, and the stores
	 * then fault as before. */
	size_t from = align_up(off, 4096);

	if (from < off + len)
		madvise(img + from, off + len - from, MADV_POPULATE_WRITE);
	return 0;
}

/* Each range build() writes: the file's bytes but for the spans (sorted,
 * maybe overlapping), which are left as holes, and the inflated sections
 * from inflated on. 0, or -errno (ENOSPC). */
static int prep_but(enum prep op, int fd, unsigned char *img, size_t size,
		    const struct span *sp, size_t nsp, size_t inflated,
		    size_t total)
{
	size_t at = 0;
	int ret = 0;

	for (size_t i = 0; !ret && i < nsp; i++) {
		if (sp[i].off > at)
			ret = prep_range(op, fd, img, at, sp[i].off - at);
		if (sp[i].end > at)
			at = sp[i].end;
	}
	if (!ret && at < size)
		ret = prep_range(op, fd, img, at, size - at);
	if (!ret && inflated < total)
		ret = prep_range(op, fd, img, inflated, total - inflated);
	return ret;
}

/* The file into img but for the spans (sorted, maybe overlapping): the
 * compressed streams, left as holes of the memfd. */
static void copy_but(unsigned char *img, const unsigned char *map,
		     size_t size, const struct span *sp, size_t nsp)
{
	size_t at = 0;

	for (size_t i = 0; i < nsp; i++) {
		if (sp[i].off > at)
			memcpy(img + at, map + at, sp[i].off - at);
		if (sp[i].end > at)
			at = sp[i].end;
	}
	if (at < size)
		memcpy(img + at, map + at, size - at);
}

/* Into dst (an empty file of ours, kept within keep_max bytes) when
 * dst >= 0, else a new memfd. */
static int build(const unsigned char *map, size_t size, int dst,
		 uint64_t keep_max, int *out_fd)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
	const Elf64_Shdr *sh, *strtab;
	const Elf64_Chdr *ch;
	unsigned char *img = MAP_FAILED;
	struct span *sp = NULL;
	Elf64_Shdr *nsh;
	size_t total, at, n, i, nsp = 0;
	int fd = -1, ret = -EINVAL, todo = 0;
	const char *name;

	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != (__BYTE_ORDER__ ==
				     __ORDER_LITTLE_ENDIAN__ ?
				     ELFDATA2LSB : ELFDATA2MSB) ||
	    eh->e_shentsize != sizeof(*sh) || eh->e_shoff % 8 ||
	    !eh->e_shnum || eh->e_shstrndx >= eh->e_shnum ||
	    eh->e_shoff > size || eh->e_shnum > (size - eh->e_shoff) /
	    sizeof(*sh))
		return -EINVAL;
	sh = (const Elf64_Shdr *)(map + eh->e_shoff);
	strtab = &sh[eh->e_shstrndx];
	/* the file, then each inflated section at its alignment */
	total = align_up(size, 4096);
	n = eh->e_shnum;
	for (i = 0; i < n; i++) {
		if (!zlib_section(map, size, &sh[i], &ch) ||
		    !(name = sec_name(map, size, strtab, &sh[i])) ||
		    strncmp(name, ".debug_", 7))
			continue;
		/* the headers must not sit in a stream left out */
		if (sh[i].sh_offset < eh->e_shoff + n * sizeof(*sh) &&
		    eh->e_shoff < sh[i].sh_offset + sh[i].sh_size)
			return -EINVAL;
		todo = 1;
		if (!is_skipped(name))
			total = align_up(total, ch->ch_addralign ?: 1) +
				ch->ch_size;
		if (total > MAX_INFLATED)
			return -EFBIG;
	}
	if (!todo)
		return -ENOENT;
	if (dst >= 0 && total > keep_max / 2)
		return -E2BIG;	/* not worth keeping: a memfd instead */
	sp = malloc(n * sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	fd = dst >= 0 ? dst : memfd_create("proffs-debug", MFD_CLOEXEC);
	if (fd < 0) {
		free(sp);
		return -errno;
	}
	if (ftruncate(fd, total)) {
		ret = -errno;
		goto out;
	}
	img = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (img == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	/* The file's bytes, less the compressed streams no one will read. */
	for (i = 0; i < n; i++)
		if (zlib_section(map, size, &sh[i], &ch) &&
		    (name = sec_name(map, size, strtab, &sh[i])) &&
		    !strncmp(name, ".debug_", 7))
			sp[nsp++] = (struct span){ sh[i].sh_offset,
						   sh[i].sh_offset +
						   sh[i].sh_size };
	qsort(sp, nsp, sizeof(*sp), span_cmp);
	/* A kept file's space reserved: a full /run fails here, not as a
	 * SIGBUS at a store below. */
	if (fd == dst &&
	    (ret = prep_but(PREP_RESERVE, fd, img, size, sp, nsp,
			    align_up(size, 4096), total)))
		goto out;
	prep_but(PREP_POPULATE, fd, img, size, sp, nsp, align_up(size, 4096),
		 total);
	copy_but(img, map, size, sp, nsp);
	nsh = (Elf64_Shdr *)(img + eh->e_shoff);
	at = align_up(size, 4096);
	for (i = 0; i < n; i++) {
		if (!zlib_section(map, size, &sh[i], &ch) ||
		    !(name = sec_name(map, size, strtab, &sh[i])) ||
		    strncmp(name, ".debug_", 7))
			continue;
		if (is_skipped(name)) {
			nsh[i].sh_type = SHT_NOBITS;
			nsh[i].sh_flags &= ~(uint64_t)SHF_COMPRESSED;
			nsh[i].sh_size = ch->ch_size;
			continue;
		}
		at = align_up(at, ch->ch_addralign ?: 1);
		ret = inflate_exact(map + sh[i].sh_offset + sizeof(*ch),
				    sh[i].sh_size - sizeof(*ch), img + at,
				    ch->ch_size);
		if (ret)
			goto out;
		nsh[i].sh_flags &= ~(uint64_t)SHF_COMPRESSED;
		nsh[i].sh_offset = at;
		nsh[i].sh_size = ch->ch_size;
		nsh[i].sh_addralign = ch->ch_addralign;
		at += ch->ch_size;
	}
	ret = 0;
out:
	free(sp);
	if (img != MAP_FAILED)
		munmap(img, total);
	if (ret) {
		if (fd != dst)
			close(fd);
		return ret;
	}
	*out_fd = fd;
	return 0;
}

int dso_debug_inflate_into(int fd, int dst, uint64_t keep_max,
			   int *out_fd)
{
	struct stat st;
	void *map;
	int ret;

	*out_fd = -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0)
		return -EINVAL;
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	ret = build(map, st.st_size, dst, keep_max, out_fd);
	munmap(map, st.st_size);
	return ret;
}

int dso_debug_inflate(int fd, int *out_fd)
{
	return dso_debug_inflate_into(fd, -1, 0, out_fd);
}
