/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbolize.h - program counters of one process into the locations,
 * functions and mappings of a profile.
 *
 * Each distinct pc is symbolized once per session (a pc -> location id
 * table), while the process is alive and its files are open; the costly
 * part, dso_symbolize(), is cached inside the shared dsos across sessions.
 * Mappings are added to the profile as their first pc is met, the main
 * executable's first so pprof sees it as the main binary.
 *
 * Owned by one session; the profile and maps are borrowed. Errors are
 * negative errno values (-ENOMEM); an unknown pc is not an error: it gets
 * a location named after its object and offset.
 */
#ifndef PROFFS_SYMBOLIZE_H
#define PROFFS_SYMBOLIZE_H

#include <stdint.h>

struct profile;
struct proc_maps;
struct symbolizer;

int symbolizer_new(struct profile *p, struct proc_maps *maps,
		   struct symbolizer **out);
void symbolizer_free(struct symbolizer *s);

/* The location id for pc, created on first sight. */
int symbolizer_location(struct symbolizer *s, uint64_t pc, uint64_t *loc_id);

#endif
