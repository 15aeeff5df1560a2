// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-dso-inflate.c - a separate debug file with zlib-compressed DWARF,
 * as distributions ship them (objcopy --compress-debug-sections), made at
 * test time: dso_debug_inflate() hands libdw its sections inflated, byte
 * for byte the uncompressed file's, the location lists left out as
 * SHT_NOBITS; an uncompressed file is left alone; a corrupt stream is
 * refused (the file is then used as it is) without a crash, and so are
 * headers claiming over 1 GiB in all; and a dso
 * whose debug file is compressed symbolizes (function, inlined frame,
 * file, line) exactly as with the uncompressed one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "sampler/unwind/dso.h"
#include "sampler/unwind/dso_i.h"
#include "check.h"

static char dir[1024];

static const char *const fx_src =
	"static inline __attribute__((always_inline)) int inl(int *p, int n)\n"
	"{\n"
	"\tint s = 0;\n"
	"\tfor (int i = 0; i < n; i++) s += p[i] * i;\n"
	"\t__asm__ volatile(\".globl inl_mark\\ninl_mark: nop\" ::: "
	"\"memory\");\n"
	"\treturn s;\n"
	"}\n"
	"__attribute__((noinline)) int outer(int *p, int n)\n"
	"{\n"
	"\tint r = inl(p, n);\n"
	"\treturn r ^ n;\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tint v[4] = { argc, 2, 3, 4 };\n"
	"\t(void)argv;\n"
	"\treturn outer(v, argc + 3);\n"
	"}\n";

static char *path(const char *file)
{
	static char buf[4][1200];
	static int next;
	char *p = buf[next++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", dir, file);
	return p;
}

static void build_fixtures(void)
{
	const char *bd = getenv("TEST_BUILD_DIR");
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/dso-inflate-fixtures", bd ? bd : ".");
	run_sh("rm -rf '%s' && mkdir -p '%s'", dir, dir);
	f = fopen(path("fx.c"), "w");
	if (!f || fputs(fx_src, f) < 0 || fclose(f)) {
		perror("fx.c");
		exit(1);
	}
	/* plain and zlib debug files; a copy of the zlib one with its
	 * .debug_info stream damaged mid-way; a build-id root of each */
	run_sh("cd %s && cc -g -O2 -fPIE -pie -Wl,--build-id -o full fx.c && "
	    "objcopy --only-keep-debug full plain.debug && "
	    "objcopy --compress-debug-sections=zlib plain.debug z.debug && "
	    "readelf -SW z.debug | grep -q ' .debug_info .* [A-Z]*C' && "
	    "readelf -SW z.debug | grep -q ' .debug_loclists .* [A-Z]*C' && "
	    "strip --strip-all -o fx full && "
	    "id=$(readelf -n full | sed -n 's/.*Build ID: //p') && "
	    "for r in plain z; do mkdir -p $r/.build-id/${id%%${id#??}} && "
	    "cp $r.debug $r/.build-id/${id%%${id#??}}/${id#??}.debug; done",
	    dir);
}

/* The bytes of section name in the ELF file fd, and its header. */
static void *section(int fd, const char *name, GElf_Shdr *sh, size_t *len)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	size_t strndx;
	void *copy = NULL;

	*len = 0;
	if (!elf || elf_getshdrstrndx(elf, &strndx))
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *s;
		Elf_Data *d;

		if (!gelf_getshdr(scn, sh) ||
		    !(s = elf_strptr(elf, strndx, sh->sh_name)) ||
		    strcmp(s, name))
			continue;
		d = sh->sh_type == SHT_NOBITS ? NULL : elf_rawdata(scn, NULL);
		if (d && d->d_size && (copy = malloc(d->d_size))) {
			memcpy(copy, d->d_buf, d->d_size);
			*len = d->d_size;
		}
		break;
	}
out:
	elf_end(elf);
	return copy;
}

static void test_inflate(void)
{
	static const char *const kept[] = {
		".debug_info", ".debug_abbrev", ".debug_line", ".debug_str",
		".debug_rnglists", ".symtab",
	};
	int pfd = open(path("plain.debug"), O_RDONLY | O_CLOEXEC);
	int zfd = open(path("z.debug"), O_RDONLY | O_CLOEXEC);
	GElf_Shdr psh, zsh;
	size_t plen, zlen;
	int out, ret;

	CHECK(pfd >= 0 && zfd >= 0, "fixtures");
	ret = dso_debug_inflate(pfd, &out);
	CHECK(ret == -ENOENT && out == -1, "plain: %d %d", ret, out);
	ret = dso_debug_inflate(zfd, &out);
	CHECK(!ret && out >= 0, "zlib: %d %d", ret, out);
	for (size_t i = 0; !ret && i < sizeof(kept) / sizeof(kept[0]); i++) {
		void *p = section(pfd, kept[i], &psh, &plen);
		void *z = section(out, kept[i], &zsh, &zlen);

		CHECK(p && z && plen == zlen && !memcmp(p, z, plen) &&
		      !(zsh.sh_flags & SHF_COMPRESSED),
		      "%s: %zu bytes, inflated %zu", kept[i], plen, zlen);
		free(p);
		free(z);
	}
	if (!ret) {
		free(section(out, ".debug_loclists", &zsh, &zlen));
		CHECK(zsh.sh_type == SHT_NOBITS && !zlen,
		      "loclists: type %u, %zu bytes", zsh.sh_type, zlen);
		close(out);
	}
	close(pfd);
	close(zfd);
}

/* A stream damaged past its header: refused, nothing left open. */
static void test_corrupt(void)
{
	GElf_Shdr sh;
	size_t len;
	void *info;
	int fd, out, ret;

	fd = open(path("z.debug"), O_RDONLY | O_CLOEXEC);
	info = section(fd, ".debug_info", &sh, &len);
	close(fd);
	CHECK(info && len > 200, "z.debug: %zu", len);
	if (!info)
		return;
	free(info);
	run_sh("cd %s && cp z.debug bad.debug && printf '\\377\\377\\377\\377"
	    "\\377\\377\\377\\377' | dd of=bad.debug bs=1 seek=%llu "
	    "conv=notrunc status=none", dir,
	    (unsigned long long)sh.sh_offset + sizeof(Elf64_Chdr) + 40);
	fd = open(path("bad.debug"), O_RDONLY | O_CLOEXEC);
	ret = dso_debug_inflate(fd, &out);
	CHECK(ret < 0 && ret != -ENOENT && out == -1, "bad: %d %d", ret, out);
	close(fd);
}

/* Headers that claim more than 1 GiB inflated in all: refused before
 * anything is allocated. */
static void test_bounds(void)
{
	static const char *const names[] = { ".debug_info", ".debug_line" };
	GElf_Shdr sh;
	size_t len;
	int fd, out, ret;

	run_sh("cp %s %s", path("z.debug"), path("big.debug"));
	for (size_t i = 0; i < 2; i++) {
		fd = open(path("z.debug"), O_RDONLY | O_CLOEXEC);
		free(section(fd, names[i], &sh, &len));
		close(fd);
		CHECK(len, "%s", names[i]);
		/* ch_size, after ch_type and ch_reserved: 0x30000000 */
		run_sh("printf '\\000\\000\\000\\060\\000\\000\\000\\000' | "
		    "dd of=%s bs=1 seek=%llu conv=notrunc status=none",
		    path("big.debug"), (unsigned long long)sh.sh_offset + 8);
	}
	fd = open(path("big.debug"), O_RDONLY | O_CLOEXEC);
	ret = dso_debug_inflate(fd, &out);
	CHECK(ret == -EFBIG && out == -1, "big: %d %d", ret, out);
	close(fd);
}

/* Frames at inl_mark: every field, as one line for comparing. */
static void frames(const char *root, uint64_t mark, char *out, size_t len)
{
	struct dso_frame f[8];
	struct dso_cache *c;
	struct dso_caps caps;
	struct dso *d = NULL;
	int n = 0, at;

	MUST(dso_cache_new(path(root), &c));
	MUST(dso_cache_get(c, path("fx"), path("fx"), &d));
	dso_caps(d, &caps);
	at = snprintf(out, len, "caps %d%d%d%d ret %d", caps.functions,
		      caps.filenames, caps.line_numbers, caps.inline_frames,
		      dso_symbolize(d, mark, f, 8, &n));
	for (int i = 0; i < n && at < (int)len; i++)
		at += snprintf(out + at, len - at, " | %s %s %s:%d (%d)",
			       f[i].function, f[i].system_name,
			       f[i].file ? f[i].file : "-", f[i].line,
			       f[i].start_line);
	dso_put(d);
	dso_cache_free(c);
}

static void test_symbolize(void)
{
	uint64_t mark = nm_addr(path("full"), "inl_mark", false);
	char plain[2048], z[2048];

	frames("plain", mark, plain, sizeof(plain));
	frames("z", mark, z, sizeof(z));
	CHECK(strstr(plain, "caps 1111 ret 0 | inl ") &&
	      strstr(plain, "fx.c:5 (1) | outer "), "plain: %s", plain);
	CHECK(!strcmp(plain, z), "\n  plain: %s\n  zlib:  %s", plain, z);
}

/* The inflated file kept in a private dir: made once, the same bytes as
 * the memfd's; a later call gets the kept file (the same inode); a debug
 * file touched since gets a new one; a dir that is not private is not
 * used (a memfd instead); an uncompressed file is never kept. */
/* within 4 times of what the test's filesystem has free (dso_debugcache.c
 * keeps nothing otherwise) */
#define KEEP_MAX (16ull << 20)

static void test_kept(void)
{
	uint64_t small;
	char kdir[1200], odir[1200];
	struct stat st1, st2, st3;
	int zfd, pfd, out1, out2, out3, mfd, ret;
	void *a, *b;
	size_t alen, blen;
	GElf_Shdr sh;

	snprintf(kdir, sizeof(kdir), "%s", path("kept"));
	snprintf(odir, sizeof(odir), "%s", path("open"));
	zfd = open(path("z.debug"), O_RDONLY | O_CLOEXEC);
	pfd = open(path("plain.debug"), O_RDONLY | O_CLOEXEC);
	CHECK(zfd >= 0 && pfd >= 0, "fixtures");
	ret = dso_debug_inflate_cached(zfd, kdir, KEEP_MAX, &out1);
	CHECK(!ret && out1 >= 0 && !fstat(out1, &st1) && st1.st_nlink == 1,
	      "first: %d", ret);
	run_sh("test $(ls %s | grep -c '^debug1-') = 1 && "
	       "test $(stat -c %%a %s) = 700", kdir, kdir);
	MUST(dso_debug_inflate(zfd, &mfd));
	a = section(out1, ".debug_info", &sh, &alen);
	b = section(mfd, ".debug_info", &sh, &blen);
	CHECK(a && b && alen == blen && !memcmp(a, b, alen),
	      "kept .debug_info: %zu bytes, memfd's %zu", alen, blen);
	free(a);
	free(b);
	close(mfd);
	ret = dso_debug_inflate_cached(zfd, kdir, KEEP_MAX, &out2);
	CHECK(!ret && out2 >= 0 && !fstat(out2, &st2) &&
	      st2.st_ino == st1.st_ino && st2.st_dev == st1.st_dev,
	      "second: %d, inode %lu and %lu", ret, (unsigned long)st2.st_ino,
	      (unsigned long)st1.st_ino);
	/* a new modification time: another key, another file */
	run_sh("touch -d '2001-01-01' %s", path("z.debug"));
	ret = dso_debug_inflate_cached(zfd, kdir, KEEP_MAX, &out3);
	CHECK(!ret && out3 >= 0 && !fstat(out3, &st3) &&
	      st3.st_ino != st1.st_ino, "touched: %d", ret);
	run_sh("test $(ls %s | grep -c '^debug1-') = 2", kdir);
	CHECK(dso_debug_kept_bytes(kdir) == (uint64_t)(st1.st_blocks +
						       st3.st_blocks) * 512,
	      "kept bytes %llu", (unsigned long long)dso_debug_kept_bytes(kdir));
	/* over the bound: the least recently used goes, the new one stays */
	small = st3.st_blocks * 512 * 3 / 2;
	run_sh("touch -d '2002-02-02' %s", path("z.debug"));
	ret = dso_debug_inflate_cached(zfd, kdir, small, &mfd);
	CHECK(!ret && mfd >= 0, "third: %d", ret);
	run_sh("test $(ls %s | grep -c '^debug1-') = 1", kdir);
	CHECK(dso_debug_kept_bytes(kdir) <= small, "bound");
	if (mfd >= 0)
		close(mfd);
	run_sh("rm %s/debug1-*", kdir);
	/* a bound the filesystem has not four times free: a memfd, the
	 * same bytes, nothing kept (a full /run breaks the system) */
	ret = dso_debug_inflate_cached(zfd, kdir, UINT64_MAX / 8, &mfd);
	CHECK(!ret && mfd >= 0, "no room: %d", ret);
	run_sh("test -z \"$(ls %s)\"", kdir);
	if (mfd >= 0)
		close(mfd);
	/* nothing compressed: -ENOENT, nothing kept */
	ret = dso_debug_inflate_cached(pfd, kdir, KEEP_MAX, &mfd);
	CHECK(ret == -ENOENT && mfd == -1, "plain: %d %d", ret, mfd);
	run_sh("test -z \"$(ls %s)\"", kdir);
	/* a dir others may write: a memfd, nothing written there */
	run_sh("mkdir -m 755 %s", odir);
	ret = dso_debug_inflate_cached(zfd, odir, KEEP_MAX, &mfd);
	CHECK(!ret && mfd >= 0, "open dir: %d", ret);
	run_sh("test -z \"$(ls %s)\"", odir);
	if (mfd >= 0)
		close(mfd);
	for (int *f = (int[]){ out1, out2, out3, -1 }; *f != -1; f++)
		if (*f >= 0)
			close(*f);
	close(zfd);
	close(pfd);
}

int main(void)
{
	elf_version(EV_CURRENT);
	build_fixtures();
	test_inflate();
	test_corrupt();
	test_bounds();
	test_symbolize();
	test_kept();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all dso_inflate checks passed\n");
	return 0;
}
