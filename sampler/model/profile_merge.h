/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * profile_merge.h - adding the samples of one profile to another whose
 * tables differ (another process's dictionary, another window's): the
 * mappings, functions, locations and strings a sample names are copied
 * into the destination as they are first met.
 *
 * What the flight recorder's whole-host reads and the differential
 * profiles (base=) are made of. Both profiles must have the same number
 * of sample types. Errors: -ENOMEM, -EINVAL (sample types differ); on
 * failure dst may hold part of src's samples (callers free it).
 */
#ifndef PROFFS_PROFILE_MERGE_H
#define PROFFS_PROFILE_MERGE_H

#include <stdint.h>

struct profile;

/*
 * Add every sample of src to dst, each value multiplied by num / den
 * (rounded to nearest; num -1, den 1 negates), with the string labels
 * extra[0] = extra[1], extra[2] = extra[3], ... (a NULL-terminated list
 * of key, value pairs, or NULL) added to each.
 */
int profile_append(struct profile *dst, const struct profile *src,
		   int64_t num, int64_t den, const char *const *extra);

#endif
