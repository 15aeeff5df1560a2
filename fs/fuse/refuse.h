/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refuse.h - FUSE handlers for the requests that would change the tree:
 * each answers EROFS and logs one line naming the request and the caller
 * (SPEC §2). Their signatures are those of struct fuse_lowlevel_ops.
 */
#ifndef PROFFS_REFUSE_H
#define PROFFS_REFUSE_H

#include <sys/stat.h>

#include <fuse_lowlevel.h>

void refuse_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		    int to_set, struct fuse_file_info *fi);
void refuse_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode, dev_t rdev);
void refuse_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode);
void refuse_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void refuse_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void refuse_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		    const char *name);
void refuse_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		   fuse_ino_t newparent, const char *newname,
		   unsigned int flags);
void refuse_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		 const char *newname);
void refuse_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode, struct fuse_file_info *fi);
void refuse_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		     const char *value, size_t size, int flags);
void refuse_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

#endif
