/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bootdir.h - the directories where root's daemons keep what is dear to
 * make and the same for every daemon: for the boot, the parsed kernel
 * symbol table (kallsyms_cache.c, /run/proffs); for good, inflated debug
 * files (dso_debugcache.c, /var/cache/proffs).
 * What is kept there may be secret (kernel addresses), so the directory
 * and every file in it must be the daemon's user's alone: nothing another
 * user made or can write is ever read back.
 */
#ifndef PROFFS_SAMPLER_UNWIND_BOOTDIR_H
#define PROFFS_SAMPLER_UNWIND_BOOTDIR_H

#include <stdbool.h>
#include <sys/stat.h>

/* Whether st is of the given type (S_IFDIR, S_IFREG), ours, and closed to
 * group and others. */
bool bootdir_private(const struct stat *st, mode_t type);

/* dir made (mode 0700) if missing: 0; -EPERM when it is not private to
 * us (someone else's, or open to others); -errno otherwise. */
int bootdir_ready(const char *dir);

#endif
