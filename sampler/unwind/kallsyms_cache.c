// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * kallsyms_cache.c - one boot's parsed /proc/kallsyms in a file, so that
 * a later daemon of the same boot skips the kernel's formatting (see
 * kallsyms_i.h). The file: a header, the symbols, the names.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampler/unwind/bootdir.h"
#include "sampler/unwind/kallsyms_i.h"
#include "sampler/log.h"

#define MAGIC "PRFKSYM1"
#define BOOT_ID "/proc/sys/kernel/random/boot_id"
#define MODULES "/proc/modules"
#define MAX_SYMS (16u << 20)
#define MAX_NAMES (1u << 30)

struct header {
	char magic[8];
	uint64_t modules;	/* hash of /proc/modules */
	uint64_t n, names_len;
	uint64_t sched[2], locks[2];
};

static int read_full(int fd, void *buf, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t r = read(fd, (char *)buf + got, len - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EINVAL;
		got += r;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	for (size_t put = 0; put < len;) {
		ssize_t w = write(fd, (const char *)buf + put, len - put);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		put += w;
	}
	return 0;
}

/* FNV-1a of a whole small file; 0 on error. */
static uint64_t hash_file(const char *path)
{
	uint64_t h = 14695981039346656037ull;
	char buf[16384];
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < r; i++)
			h = (h ^ (unsigned char)buf[i]) * 1099511628211ull;
	close(fd);
	return r < 0 ? 0 : h | 1;
}

/* DIR/kallsyms-BOOT_ID, and the hash of the modules and of the file the
 * table is read from (tests read tables of their own). */
static int cache_key(const char *dir, const char *from, char *path,
		     size_t len, uint64_t *modules)
{
	char id[64];
	ssize_t r;
	int fd = open(BOOT_ID, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	r = read(fd, id, sizeof(id) - 1);
	close(fd);
	if (r < 8)
		return -ENOENT;
	id[strcspn(id, "\n")] = '\0';
	if (id[strspn(id, "0123456789abcdef-")])
		return -EINVAL;
	*modules = hash_file(MODULES);	/* no modules: 0, still a key */
	for (; *from; from++)
		*modules = (*modules ^ (unsigned char)*from) * 1099511628211ull;
	if (snprintf(path, len, "%s/kallsyms-%s", dir, id) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* Ours and private: a secret lives there. */
/* The symbols must be sorted and name inside names: what lookups rely
 * on. */
static bool image_sane(const struct kallsyms_image *img)
{
	if (!img->names_len || img->names[img->names_len - 1])
		return false;
	for (size_t i = 0; i < img->n; i++)
		if (img->syms[i].name >= img->names_len ||
		    (i && img->syms[i].addr <= img->syms[i - 1].addr))
			return false;
	return img->n > 1;
}

int kallsyms_cache_load(const char *dir, const char *from,
			struct kallsyms_image *img)
{
	char path[PATH_MAX];
	char *map = MAP_FAILED;
	struct header h;
	struct stat st;
	uint64_t modules;
	int fd, ret;

	ret = cache_key(dir, from, path, sizeof(path), &modules);
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	ret = fstat(fd, &st) ? -errno : 0;
	if (!ret && !bootdir_private(&st, S_IFREG))
		ret = -EPERM;
	if (!ret)
		ret = read_full(fd, &h, sizeof(h));
	if (!ret && (memcmp(h.magic, MAGIC, sizeof(h.magic)) ||
		     h.modules != modules))
		ret = -ENOENT;	/* another format, or modules changed */
	if (!ret && (h.n > MAX_SYMS || h.names_len > MAX_NAMES ||
		     (uint64_t)st.st_size != sizeof(h) +
		     h.n * sizeof(struct ksym) + h.names_len))
		ret = -EINVAL;
	if (!ret) {
		map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		ret = map == MAP_FAILED ? -errno : 0;
	}
	if (!ret) {
		*img = (struct kallsyms_image){
			.n = h.n, .names_len = h.names_len,
			.syms = (struct ksym *)(map + sizeof(h)),
			.names = map + sizeof(h) + h.n * sizeof(struct ksym),
			.map = map, .map_len = st.st_size,
		};
		memcpy(img->sched, h.sched, sizeof(h.sched));
		memcpy(img->locks, h.locks, sizeof(h.locks));
		if (!image_sane(img))
			ret = -EINVAL;
	}
	close(fd);
	if (ret == -EINVAL)
		pr_notice("kallsyms: %s is not a table of this kernel's "
			  "symbols: read %s instead", path, from);
	if (ret && map != MAP_FAILED)
		munmap(map, st.st_size);
	if (ret)
		*img = (struct kallsyms_image){ 0 };
	return ret;
}

int kallsyms_cache_save(const char *dir, const char *from,
			const struct kallsyms_image *img)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	struct header h = { .magic = MAGIC, .n = img->n,
			    .names_len = img->names_len };
	int fd, ret;

	memcpy(h.sched, img->sched, sizeof(h.sched));
	memcpy(h.locks, img->locks, sizeof(h.locks));
	ret = cache_key(dir, from, path, sizeof(path), &h.modules);
	if (!ret)
		ret = bootdir_ready(dir);
	if (ret) {
		pr_debug("kallsyms: no cache in %s: %s", dir, strerror(-ret));
		return ret;
	}
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkostemp(tmp, O_CLOEXEC);	/* mode 0600 */
	if (fd < 0)
		return -errno;
	ret = write_full(fd, &h, sizeof(h));
	if (!ret)
		ret = write_full(fd, img->syms, img->n * sizeof(*img->syms));
	if (!ret)
		ret = write_full(fd, img->names, img->names_len);
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		pr_debug("kallsyms: cannot write %s: %s", path,
			 strerror(-ret));
	}
	return ret;
}
