/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * grow.h - room in a realloc'd array for need elements, capacity doubled
 * from first: one growth rule for the sampler's tables.
 *
 * The caller owns *v and frees it; on failure *v and *cap are unchanged.
 * Returns 0, or -ENOMEM (the allocation failed, or its size overflows).
 */
#ifndef PROFFS_GROW_H
#define PROFFS_GROW_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

static inline int grow_array(void **v, size_t *cap, size_t need, size_t elem,
			     size_t first)
{
	size_t ncap = *cap ? *cap : first;
	void *nv;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

#endif
