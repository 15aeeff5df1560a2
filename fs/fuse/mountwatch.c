// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mountwatch.c - notice an unmount the kernel does not report to us while
 * another mount namespace holds a copy of the mount (see mountwatch.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/log.h"
#include "fs/fuse/mountwatch.h"

#define FUSECTL "/sys/fs/fuse/connections"
#define POLL_MS 200
#define GONE_MS 2000		/* gone this long, and nothing in flight */
#define GONE_MAX_MS 30000	/* gone this long: in flight or not */

struct mountwatch {
	pthread_t thread;
	int stop_fd;		/* eventfd: written by mountwatch_stop() */
	char dev[32];		/* "0:N" as mountinfo writes it */
	unsigned minor;		/* the fusectl connection number */
};

/*
 * Find the last proffs mount at mnt (or any proffs mount of device dev,
 * when mnt is NULL) in /proc/self/mountinfo: 0, -ENOENT, or -errno.
 * Fields: id parent major:minor root mountpoint ... - fstype source.
 */
static int mountinfo_find(const char *mnt, const char *dev, char *dev_out,
			  size_t dev_len)
{
	char line[4096], f_dev[32], f_mnt[PATH_MAX], fstype[64];
	int ret = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %31s %*s %4095s", f_dev,
				   f_mnt) != 2 ||
		    sscanf(sep + 3, "%63s", fstype) != 1 ||
		    strcmp(fstype, "fuse.proffs"))
			continue;
		if ((mnt && !strcmp(f_mnt, mnt)) || (dev && !strcmp(f_dev, dev))) {
			if (dev_out)
				snprintf(dev_out, dev_len, "%s", f_dev);
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

static int fusectl_read(unsigned minor, const char *what, long *val)
{
	char path[96], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), FUSECTL "/%u/%s", minor, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	*val = strtol(buf, NULL, 10);
	return 0;
}

/* fusectl is mounted on most systems; where it is not, mount it (root). */
static int fusectl_abort(unsigned minor)
{
	char path[96];
	int fd, ret = 0;

	snprintf(path, sizeof(path), FUSECTL "/%u/abort", minor);
	if (access(path, F_OK) &&
	    mount("fusectl", FUSECTL, "fusectl", 0, NULL) && errno != EBUSY)
		return -errno;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "1", 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

/* true when the connection should end now. */
static bool should_abort(struct mountwatch *w, uint64_t *gone_since)
{
	long waiting = 0;
	uint64_t gone;

	if (!mountinfo_find(NULL, w->dev, NULL, 0)) {
		*gone_since = 0;
		return false;
	}
	if (!*gone_since)
		*gone_since = now_ms();
	gone = now_ms() - *gone_since;
	fusectl_read(w->minor, "waiting", &waiting);
	return gone >= GONE_MAX_MS || (gone >= GONE_MS && waiting <= 0);
}

static void *watch(void *arg)
{
	struct mountwatch *w = arg;
	uint64_t gone_since = 0;
	/* The table is read again only when the kernel says it changed
	 * (POLLPRI on an open mountinfo), or while the mount is gone: read
	 * every 200 ms, it was ~7% of a cold read's CPU. Without that fd,
	 * every time. */
	struct pollfd p[2] = {
		{ .fd = w->stop_fd, .events = POLLIN },
		{ .fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC),
		  .events = POLLPRI },
	};
	bool changed = true;	/* unmounted before the fd was opened */
	int ret;

	for (;; changed = false) {
		if (!changed && poll(p, p[1].fd >= 0 ? 2 : 1, POLL_MS) > 0) {
			if (p[0].revents)
				break;	/* mountwatch_stop() */
			changed = p[1].revents & (POLLPRI | POLLERR);
		}
		if (p[1].fd < 0 || gone_since)
			changed = true;
		if (!changed || !should_abort(w, &gone_since))
			continue;
		ret = fusectl_abort(w->minor);
		if (ret) {
			pr_err("fs: the mount is gone from this namespace but "
			       "another holds it; cannot end connection %u: "
			       "%s", w->minor, strerror(-ret));
			break;
		}
		pr_info("fs: unmounted here while another mount namespace "
			"still holds the mount; connection %u ended",
			w->minor);
		break;
	}
	if (p[1].fd >= 0)
		close(p[1].fd);
	return NULL;
}

int mountwatch_start(const char *mountpoint, struct mountwatch **out)
{
	struct mountwatch *w;
	unsigned major;
	int ret;

	*out = NULL;
	/* Mounted by whoever handed us the /dev/fuse descriptor: the mount
	 * point is theirs, not known here, and so is its unmount. */
	if (!strncmp(mountpoint, "/dev/fd/", 8)) {
		pr_debug("fs: mounted through %s: the mount is not watched",
			 mountpoint);
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->stop_fd = -1;
	ret = mountinfo_find(mountpoint, NULL, w->dev, sizeof(w->dev));
	if (!ret && sscanf(w->dev, "%u:%u", &major, &w->minor) != 2)
		ret = -EINVAL;
	if (!ret) {
		w->stop_fd = eventfd(0, EFD_CLOEXEC);
		ret = w->stop_fd < 0 ? -errno : 0;
	}
	if (!ret)
		ret = -pthread_create(&w->thread, NULL, watch, w);
	if (ret) {
		pr_notice("fs: cannot watch the mount at %s: %s; the daemon will "
			  "not notice an unmount while another mount namespace "
			  "holds the mount", mountpoint, strerror(-ret));
		if (w->stop_fd >= 0)
			close(w->stop_fd);
		free(w);
		return ret;
	}
	*out = w;
	return 0;
}

void mountwatch_stop(struct mountwatch *w)
{
	uint64_t one = 1;

	if (!w)
		return;
	if (write(w->stop_fd, &one, sizeof(one)) != sizeof(one))
		pr_err("fs: mountwatch: %s", strerror(errno));
	pthread_join(w->thread, NULL);
	close(w->stop_fd);
	free(w);
}
