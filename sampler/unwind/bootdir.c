// SPDX-License-Identifier: GPL-2.0-or-later
/* bootdir.c - the private directory of what is kept for the boot. */
#include <errno.h>
#include <unistd.h>

#include "sampler/unwind/bootdir.h"

bool bootdir_private(const struct stat *st, mode_t type)
{
	return (st->st_mode & S_IFMT) == type && st->st_uid == geteuid() &&
	       !(st->st_mode & 077);
}

int bootdir_ready(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	return bootdir_private(&st, S_IFDIR) ? 0 : -EPERM;
}
