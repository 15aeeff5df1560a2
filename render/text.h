/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * text.h - the profile as the table `go tool pprof -top` prints: the
 * same header lines (File, Build ID, comments, Type, Time, Duration,
 * "Showing nodes accounting for ...", "Dropped N nodes (cum <= ...)"),
 * then one "flat flat% sum% cum cum% name" row per function, sorted by
 * flat descending then name. pprof's rules are followed so the numbers
 * match it: functions whose cum is below 0.5% of the total are dropped,
 * cum counts a function once per sample even when it recurs, one unit is
 * chosen for the whole table from the smallest value, and a function
 * only ever reached inlined is marked "(inline)" ("(partial-inline)" if
 * sometimes).
 *
 * Ownership and errors as in folded.h: *buf is malloc()ed and
 * NUL-terminated, owned by the caller; -ENOMEM or -EINVAL (no sample
 * types, sample_index out of range); on failure *buf is untouched.
 */
#ifndef PROFFS_TEXT_H
#define PROFFS_TEXT_H

#include <stddef.h>
#include <stdint.h>

struct profile;

/* sample_index -1: default_sample_type if set, else the last type. */
int text_top_render(const struct profile *p, int sample_index, char **buf,
		    size_t *len);

/*
 * Format value (in unit, e.g. "nanoseconds", "bytes", "count") scaled to
 * a readable unit as pprof labels it: "1.23s", "250ms", "1.50kB", "42".
 * Always NUL-terminates buf (truncating if len is too small).
 */
void text_format_value(int64_t value, const char *unit, char *buf,
		       size_t len);

#endif
