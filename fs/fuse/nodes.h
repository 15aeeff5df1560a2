/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nodes.h - the inode table of the mount.
 *
 * The root is inode 1. Every other inode names (target, file name): a
 * target directory (/prof/<pid>, /prof/unit/<unit>, /prof/all...) has the
 * name "", a file its name within the directory, and the group
 * directories /prof/unit and /prof/name a target of their kind with no
 * id. Inodes
 * are created by lookup and live while the kernel holds a lookup count on
 * them (FUSE's lookup/forget protocol); the same (pid, name) gets the same
 * inode while it lives. A profile file's parsed request is kept with it.
 *
 * Thread-safe (one mutex). Lookups return copies, so callers never hold
 * pointers into the table.
 */
#ifndef PROFFS_NODES_H
#define PROFFS_NODES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/core/request.h"
#include "fs/core/target.h"

#define NODES_ROOT 1

enum node_type {
	NODE_ROOT,
	NODE_PID_DIR,
	NODE_CMDLINE,
	NODE_INDEX,
	NODE_PROFILE,
	NODE_STATUS,
	NODE_GROUP_DIR,		/* /prof/unit, /prof/name */
	NODE_ERRORS,		/* errors.txt (errors.h), root or target */
};

struct node_info {
	uint64_t ino;
	enum node_type type;
	pid_t pid;			/* a pid directory's and its files' */
	struct target tgt;		/* which process: by pid, name, ... */
	char name[256];
	int parse_ret;			/* 0 or -EINVAL for NODE_PROFILE */
	struct proffs_request req;	/* NODE_PROFILE */
};

struct nodes;

/* count: where the table keeps its size for others to read (status). */
int nodes_new(_Atomic size_t *count, struct nodes **out);
void nodes_free(struct nodes *t);

/*
 * Find or create the node for *info's (target, name), take one lookup
 * reference, and store its inode number in info->ino. -ENOMEM.
 */
int nodes_lookup(struct nodes *t, struct node_info *info);

/* Drop n lookup references (FUSE forget). */
void nodes_forget(struct nodes *t, uint64_t ino, uint64_t n);

/* Copy of the node; -ENOENT for an unknown inode. Root included. */
int nodes_get(struct nodes *t, uint64_t ino, struct node_info *info);

/* A /prof/<pid> directory in the table: its inode and its process. */
struct node_dir {
	uint64_t ino;
	pid_t pid;
};

/* A file or directory of inode ino was opened (delta 1) or released
 * (-1): what is open is never listed by nodes_pid_dirs(). */
void nodes_opened(struct nodes *t, uint64_t ino, int delta);

/*
 * Up to max of the table's /prof/<pid> directories into out, starting
 * after the first skip of them (a caller walks a large table in turns),
 * but none with a file open under it or open itself: returns how many it
 * wrote.
 */
size_t nodes_pid_dirs(struct nodes *t, size_t skip, struct node_dir *out,
		      size_t max);

#endif
