/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pseudoloc.h - profile locations that stand for no address in the
 * target: "[syscall] futex", "[k] do_select", "[running]". Each name
 * gets one function and one location (no mapping) in the profile, made
 * on first use.
 *
 * Owned by one session; the profile is borrowed. Errors: -ENOMEM.
 */
#ifndef PROFFS_PSEUDOLOC_H
#define PROFFS_PSEUDOLOC_H

#include <stdint.h>

struct profile;
struct pseudolocs;

int pseudolocs_new(struct profile *p, struct pseudolocs **out);
void pseudolocs_free(struct pseudolocs *ps);

/* The location named prefix followed by name ("[k] " "do_select"). */
int pseudoloc(struct pseudolocs *ps, const char *prefix, const char *name,
	      uint64_t *loc);

#endif
