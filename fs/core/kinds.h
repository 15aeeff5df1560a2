/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kinds.h - every kind of profile the daemon serves, one row each.
 *
 * A row (struct kind_ops, in the spirit of libfuse's fuse_lowlevel_ops
 * and perf's unwind_libunwind_ops) says all the daemon knows of a kind:
 * the words that name it and their default format, whether it is taken
 * over a window or is a snapshot, which query parameters change what is
 * measured (its session key), which kernel frames it may show, whether a
 * whole host can give it, the function that takes it, the renderer of
 * each format it is served in, and its labels. The grammar (name.c), the
 * sessions (registry.c, dispatch.c), the renderers (output.c, given their
 * row), the limits
 * (check.c), the counters (status.c) and both front ends (ops.c,
 * http_serve.c) read the row; none of them switches on a kind.
 *
 * Adding a kind:
 *   1. a PROFFS_KIND_X before PROFFS_KIND__COUNT in name.h (and the word
 *      in name.h's grammar comment);
 *   2. its sampler, in a folder of its own under sampler/;
 *   3. a run function in run.c (declared in run.h) that fills the
 *      sampler's options from the run_ctx, calls it and writes its line
 *      of detail for the log (dispatch.c calls it through the row);
 *   4. its row in kinds.c: words, time, key, frames, run, renderers.
 *   A new format is a PROFFS_FMT_X in name.h, its word in name.c's format
 *   table, and a renderer (output.h) in the rows that serve it.
 *   A new query parameter is a field of struct proffs_request and an entry
 *   of name.c's params table; when it changes what is measured (not only
 *   how it is rendered), a KIND_KEY_X bit below, set in the rows that take
 *   it, and its field in registry.c's session key.
 *   Nothing else: a row's kind is listed in /prof/status and /metrics,
 *   parsed, served, checked and cached by the rules below.
 *
 * Rows are constant and complete: every kind from 0 to PROFFS_KIND__COUNT
 * has one. No allocation, no state; thread-safe.
 *
 * Built with -DKINDS_NO_OPS (the grammar's unit test and fuzzers, which
 * link name.c without the samplers or renderers), every run and render
 * pointer is NULL: only the grammar's columns are there.
 */
#ifndef PROFFS_KINDS_H
#define PROFFS_KINDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/core/kind_ops.h"

const struct kind_ops *kinds_row(enum proffs_kind kind);

/*
 * The word of the grammar number i, counting every row's words in order
 * ("cpu", "profile", "flame", "heap", ...): 0 and its kind and default
 * format, or -ENOENT past the last.
 */
int kinds_word(size_t i, const char **word, enum proffs_kind *kind,
	       enum proffs_format *format);

/*
 * The window req's profile spans, in ms, 0 for a snapshot: the rule that
 * a snapshot has none whatever the name says, and that heap and allocs
 * have one only when the name gives it. The sessions split by it, and
 * the log shows it.
 */
uint64_t kinds_window_ms(const struct proffs_request *req);

#endif
