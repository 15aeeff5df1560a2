// SPDX-License-Identifier: GPL-2.0-or-later
/* gone.c - tell the kernel to forget directories of processes gone. */
#include <errno.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fs/core/daemon.h"
#include "fs/fuse/gone.h"
#include "fs/fuse/nodes.h"
#include "fs/fuse/ops.h"
#include "sampler/log.h"

#define GONE_PERIOD_MS	5000
#define GONE_BATCH	512

struct gone {
	struct fuse_session *se;
	struct proffs *fs;
	int stop_fd;		/* eventfd: written by gone_stop() */
	pthread_t thread;
};

/* One pass over the table; returns how many directories it deleted. */
static size_t sweep(struct gone *g)
{
	struct node_dir dirs[GONE_BATCH];
	size_t skip = 0, n, deleted = 0;
	char name[16];

	do {
		n = nodes_pid_dirs(g->fs->nodes, skip, dirs, GONE_BATCH);
		skip += n;
		for (size_t i = 0; i < n; i++) {
			uid_t owner;

			if (ops_pid_known(g->fs, dirs[i].pid, &owner))
				continue;
			snprintf(name, sizeof(name), "%d", (int)dirs[i].pid);
			/* The kernel drops the files' dentries under it,
			 * then its own; it says -ENOENT where it held no
			 * dentry by that name (nothing open is listed:
			 * nodes_pid_dirs()). */
			if (!fuse_lowlevel_notify_delete(g->se, NODES_ROOT,
							 dirs[i].ino, name,
							 strlen(name))) {
				deleted++;
				skip--;	/* it may leave the table now */
			}
		}
	} while (n == GONE_BATCH);
	return deleted;
}

static void *gone_main(void *arg)
{
	struct gone *g = arg;
	struct pollfd pfd = { .fd = g->stop_fd, .events = POLLIN };
	size_t n;

	while (poll(&pfd, 1, GONE_PERIOD_MS) <= 0) {
		n = sweep(g);
		if (n)
			pr_debug("gone: %zu directories of ended processes "
				 "deleted, %zu inodes", n,
				 atomic_load(&g->fs->inodes));
	}
	return NULL;
}

int gone_start(struct fuse_session *se, struct proffs *fs,
	       struct gone **out)
{
	struct gone *g;
	int ret;

	*out = NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->se = se;
	g->fs = fs;
	g->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (g->stop_fd < 0) {
		ret = -errno;
		free(g);
		pr_err("gone: cannot start: %s", strerror(-ret));
		return ret;
	}
	ret = -pthread_create(&g->thread, NULL, gone_main, g);
	if (ret) {
		close(g->stop_fd);
		free(g);
		pr_err("gone: cannot start: %s", strerror(-ret));
		return ret;
	}
	*out = g;
	return 0;
}

void gone_stop(struct gone *g)
{
	uint64_t one = 1;

	if (!g)
		return;
	if (write(g->stop_fd, &one, sizeof(one)) != sizeof(one))
		pr_err("gone: cannot stop: %m");
	pthread_join(g->thread, NULL);
	close(g->stop_fd);
	free(g);
}
