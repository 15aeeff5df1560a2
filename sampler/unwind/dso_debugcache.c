// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dso_debugcache.c - the inflated forms of compressed separate debug
 * files (dso_inflate.c), kept in a directory private to the daemon's
 * user (/var/cache/proffs for root), so that only the first daemon after
 * a debug file is installed pays for inflating, say, libc6-dbg's 10 MB of
 * DWARF (most of a fresh daemon's first read once the kernel names its
 * own functions), and later ones, after a reboot too, map the kept file,
 * as perf keeps its ~/.debug.
 *
 * A kept file is named after the identity of the debug file it was made
 * from (device, inode, size, modification and change times), so a file
 * replaced or touched makes a new one; it is written under a temporary
 * name, its space reserved first (a full filesystem fails the
 * reservation, not a store through the mapping), and renamed when
 * complete. The files together stay within the bound the caller gives
 * (DSO_DEBUG_CACHE_MAX): after each new one, the least recently used
 * (mtime, set at each use) go. The filesystem is shared with the rest of
 * the system (a full /var or /run breaks services), so a file is kept
 * only while it has at least ROOM_FACTOR times the bound free: the kept
 * files can never take more than a quarter of what was free. Any error
 * here falls back to an unkept memfd (dso_debug_inflate), never to a
 * different result.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "sampler/unwind/bootdir.h"
#include "sampler/unwind/dso_i.h"
#include "sampler/log.h"

/* The format of a kept file: bump when dso_inflate.c's output changes. */
#define PREFIX "debug1-"
#define MAX_FILES 4096
#define ROOM_FACTOR 4

struct kept {
	struct timespec used;
	off_t bytes;
	char name[NAME_MAX + 1];
};

static int kept_cmp(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return (x->used.tv_nsec > y->used.tv_nsec) -
	       (x->used.tv_nsec < y->used.tv_nsec);
}

/* The kept files of dir (of any format: an older daemon's count too):
 * their bytes into *total, and the first cap of them into k (may be
 * NULL); the count, or 0 when dir cannot be read. */
static size_t scan(DIR *dp, struct kept *k, size_t cap,
		   unsigned long long *total)
{
	struct dirent *e;
	struct stat st;
	size_t n = 0;

	*total = 0;
	rewinddir(dp);
	while ((e = readdir(dp))) {
		if (strncmp(e->d_name, "debug", 5) ||
		    fstatat(dirfd(dp), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		*total += st.st_blocks * 512;
		if (n < cap) {
			k[n].used = st.st_mtim;
			k[n].bytes = st.st_blocks * 512;
			snprintf(k[n].name, sizeof(k[n].name), "%s",
				 e->d_name);
		}
		n++;
	}
	return n;
}

uint64_t dso_debug_kept_bytes(const char *dir)
{
	unsigned long long total = 0;
	DIR *dp = opendir(dir);

	if (dp) {
		scan(dp, NULL, 0, &total);
		closedir(dp);
	}
	return total;
}

/* The kept files of dir within max bytes, the least recently used
 * removed first. */
static void evict(const char *dir, unsigned long long max)
{
	unsigned long long total;
	struct kept *k = NULL;
	size_t n, i, cap = 0;
	DIR *dp = opendir(dir);

	if (!dp)
		return;
	n = scan(dp, NULL, 0, &total);
	if (total > max && n) {
		cap = n < MAX_FILES ? n : MAX_FILES;
		k = malloc(cap * sizeof(*k));
		if (k)
			n = scan(dp, k, cap, &total);
	}
	if (k && total > max) {
		n = n < cap ? n : cap;
		qsort(k, n, sizeof(*k), kept_cmp);
		for (i = 0; i < n && total > max; i++)
			if (!unlinkat(dirfd(dp), k[i].name, 0)) {
				total -= k[i].bytes;
				pr_debug("dso: %s/%s let go (debug files kept "
					 "over %llu MiB)", dir, k[i].name,
					 max >> 20);
			}
	}
	free(k);
	closedir(dp);
}

/* Whether dir's filesystem has room for kept files within max. */
static bool room_for(const char *dir, unsigned long long max)
{
	struct statvfs vfs;

	if (statvfs(dir, &vfs))
		return false;
	if ((unsigned long long)vfs.f_bavail * vfs.f_frsize >=
	    ROOM_FACTOR * max)
		return true;
	pr_debug("dso: no new kept debug file in %s: %llu MiB free, "
		 "under %d times the %llu MiB bound", dir,
		 (unsigned long long)vfs.f_bavail * vfs.f_frsize >> 20,
		 ROOM_FACTOR, max >> 20);
	return false;
}

/* A new kept file for fd into *out_fd: 0, or -errno; -EAGAIN when the
 * directory cannot keep one (then a memfd will do). */
static int make(int fd, const char *dir, unsigned long long max,
		const char *path, int *out_fd)
{
	char tmp[PATH_MAX + 8];
	int tfd, ret;

	ret = bootdir_ready(dir);
	if (ret) {
		pr_debug("dso: no kept debug files in %s: %s", dir,
			 strerror(-ret));
		return -EAGAIN;
	}
	if (!room_for(dir, max))
		return -EAGAIN;
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -EAGAIN;
	tfd = mkostemp(tmp, O_CLOEXEC);		/* mode 0600 */
	if (tfd < 0)
		return -EAGAIN;
	ret = dso_debug_inflate_into(fd, tfd, max, out_fd);
	if (!ret && rename(tmp, path))
		pr_debug("dso: cannot keep %s: %s", path, strerror(errno));
	if (ret) {
		unlink(tmp);
		close(tfd);
		*out_fd = -1;
		return ret;
	}
	evict(dir, max);
	return 0;
}

int dso_debug_inflate_cached(int fd, const char *dir, uint64_t max,
			     int *out_fd)
{
	char path[PATH_MAX];
	struct stat st, kst;
	int kfd, ret;

	*out_fd = -1;
	if (!dir || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return dso_debug_inflate(fd, out_fd);
	if (snprintf(path, sizeof(path),
		     "%s/" PREFIX "%llx-%llx-%llx-%llx.%lx-%llx.%lx", dir,
		     (unsigned long long)st.st_dev,
		     (unsigned long long)st.st_ino,
		     (unsigned long long)st.st_size,
		     (unsigned long long)st.st_mtim.tv_sec,
		     (long)st.st_mtim.tv_nsec,
		     (unsigned long long)st.st_ctim.tv_sec,
		     (long)st.st_ctim.tv_nsec) >= (int)sizeof(path))
		return dso_debug_inflate(fd, out_fd);
	kfd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (kfd >= 0) {
		if (!fstat(kfd, &kst) && bootdir_private(&kst, S_IFREG) &&
		    kst.st_size > 0) {
			futimens(kfd, NULL);	/* used: evicted last */
			*out_fd = kfd;
			return 0;
		}
		close(kfd);
	}
	ret = make(fd, dir, max, path, out_fd);
	/* the file's own verdicts: nothing to inflate, a bad stream or
	 * header, claims past 1 GiB (then libdw gets the file as it is) */
	if (!ret || ret == -ENOENT || ret == -EINVAL || ret == -EFBIG)
		return ret;
	if (ret != -EAGAIN)
		pr_debug("dso: cannot keep an inflated debug file in %s: %s",
			 dir, strerror(-ret));
	return dso_debug_inflate(fd, out_fd);
}
