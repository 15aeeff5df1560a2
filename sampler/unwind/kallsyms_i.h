/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kallsyms_i.h - the kallsyms table's insides, shared by kallsyms.c and
 * its cache of one boot's table (kallsyms_cache.c).
 *
 * Reading /proc/kallsyms costs ~40 ms of CPU, 35 of them in the kernel
 * formatting its 120,000 lines; what it says changes only at a reboot
 * (KASLR picks the addresses at boot) or when modules come and go. So a
 * daemon that read it leaves the parsed table in a file of its own,
 * DIR/kallsyms-BOOT_ID (DIR: /run/proffs for root, which a reboot
 * empties), stamped with a hash of /proc/modules; the next daemon of the
 * same boot with the same modules maps that file (4.5 MiB, read in place) and anything else reads /proc/kallsyms as before. The
 * directory and the file must be the daemon's own user's, mode 0700 and
 * 0600, not links: the addresses are the kernel's secret (kptr_restrict).
 * Errors: negative errno; a cache that cannot be used is only a slower
 * load.
 */
#ifndef PROFFS_KALLSYMS_I_H
#define PROFFS_KALLSYMS_I_H

#include <stddef.h>
#include <stdint.h>

struct ksym {
	uint64_t addr;
	uint32_t name;		/* offset in names */
	char type;		/* t, T, w or W */
};

/* A settled table: sorted, one symbol per address, names NUL-ended. */
struct kallsyms_image {
	struct ksym *syms;
	size_t n;
	char *names;
	size_t names_len;
	uint64_t sched[2], locks[2];	/* as struct kallsyms has them */
	/* Loaded from the cache: the file mapped read-only, syms and names
	 * inside it (munmap(map, map_len), not free()); else NULL. */
	void *map;
	size_t map_len;
};

/* This boot's cached table of the file from into img (syms and names in
 * img->map, the file mapped: no copy, only the pages lookups touch; the
 * caller's): 0; -ENOENT when there is none for this
 * boot, these modules and that file; -EINVAL for a file that is not one;
 * -errno. */
int kallsyms_cache_load(const char *dir, const char *from,
			struct kallsyms_image *img);
/* img, read from the file from, into this boot's file under dir (made
 * 0700 when missing). */
int kallsyms_cache_save(const char *dir, const char *from,
			const struct kallsyms_image *img);

#endif
