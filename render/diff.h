/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * diff.h - a differential profile (base=, SPEC §10) as a top table of
 * deltas.
 *
 * The profile holds the new window's samples and the base's, negated and
 * labelled pprof::base=true, as go tool pprof -diff_base builds it. The
 * table has one row per function: its flat value in the new window and
 * in the base, the delta and the delta relative to the base, and its
 * cumulative delta; rows sorted by the size of the flat delta, largest
 * first, ties by name. The header gives both totals and theirs.
 *
 * Ownership: on success *buf is malloc()ed, NUL-terminated and owned by
 * the caller. Errors: -ENOMEM, -EINVAL (sample_index out of range).
 */
#ifndef PROFFS_DIFF_H
#define PROFFS_DIFF_H

#include <stddef.h>

struct profile;

/* sample_index -1: the default type, as folded_render(). */
int diff_text_render(const struct profile *p, int sample_index, char **buf,
		     size_t *len);

#endif
