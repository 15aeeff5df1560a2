// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * refuse.c - every request that would change the tree, refused with EROFS
 * and one log line naming it (SPEC §2).
 *
 * The mount is read-write on purpose: on a read-only mount the kernel
 * answers these itself, and the daemon could not say who tried what.
 */
#include <errno.h>
#include <stdio.h>

#include "sampler/log.h"
#include "fs/fuse/nodes.h"
#include "fs/core/daemon.h"
#include "fs/fuse/refuse.h"

/* "PID/name" (or "PID", "/name" at the root) of ino, then name. */
static void describe(fuse_req_t req, fuse_ino_t ino, const char *name,
		     char *buf, size_t size)
{
	struct proffs *fs = fuse_req_userdata(req);
	struct node_info n;

	if (nodes_get(fs->nodes, ino, &n)) {
		snprintf(buf, size, "inode %llu%s%s", (unsigned long long)ino,
			 name ? "/" : "", name ? name : "");
		return;
	}
	if (n.type == NODE_ROOT)
		snprintf(buf, size, "%s", name ? name : "/");
	else if (n.type == NODE_PID_DIR)
		snprintf(buf, size, "%d%s%s", (int)n.pid, name ? "/" : "",
			 name ? name : "");
	else
		snprintf(buf, size, "%d/%s", (int)n.pid, n.name);
}

static void refuse(fuse_req_t req, const char *op, fuse_ino_t ino,
		   const char *name)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char what[600];

	describe(req, ino, name, what, sizeof(what));
	pr_notice("fs: %s %s by uid %u: EROFS: profiles are read-only", op,
		  what, (unsigned)ctx->uid);
	status_refused(&((struct proffs *)fuse_req_userdata(req))->refused,
		       EROFS);
	fuse_reply_err(req, EROFS);
}

void refuse_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		    int to_set, struct fuse_file_info *fi)
{
	(void)attr;
	(void)fi;
	refuse(req, to_set & FUSE_SET_ATTR_SIZE ? "truncate" : "setattr",
	       ino, NULL);
}

void refuse_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode, dev_t rdev)
{
	(void)mode;
	(void)rdev;
	refuse(req, "mknod", parent, name);
}

void refuse_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode)
{
	(void)mode;
	refuse(req, "mkdir", parent, name);
}

void refuse_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	refuse(req, "unlink", parent, name);
}

void refuse_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	refuse(req, "rmdir", parent, name);
}

void refuse_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		    const char *name)
{
	(void)link;
	refuse(req, "symlink", parent, name);
}

void refuse_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		   fuse_ino_t newparent, const char *newname,
		   unsigned int flags)
{
	(void)newparent;
	(void)newname;
	(void)flags;
	refuse(req, "rename", parent, name);
}

void refuse_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		 const char *newname)
{
	(void)ino;
	refuse(req, "link", newparent, newname);
}

void refuse_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode, struct fuse_file_info *fi)
{
	(void)mode;
	(void)fi;
	refuse(req, "create", parent, name);
}

void refuse_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		     const char *value, size_t size, int flags)
{
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	refuse(req, "setxattr", ino, NULL);
}

void refuse_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)name;
	refuse(req, "removexattr", ino, NULL);
}
