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
 * sessions (registry.c, run.c), the renderers (output.c), the limits
 * (check.c), the counters (status.c) and both front ends (ops.c,
 * http_serve.c) read the row; none of them switches on a kind.
 *
 * Adding a kind:
 *   1. a PROFFS_KIND_X before PROFFS_KIND__COUNT in name.h (and the word
 *      in name.h's grammar comment);
 *   2. its sampler, in a folder of its own under sampler/;
 *   3. a run function in run.c (declared in run.h) that fills the
 *      sampler's options from the run_ctx, calls it and writes its line
 *      of detail for the log;
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

#include "render/flame.h"
#include "fs/core/name.h"

struct profile;
struct run_ctx;
struct run_result;

/* A word of the grammar that names the kind ("profile", "flame"), and
 * the format of a name that gives none. */
struct kind_word {
	const char *word;
	enum proffs_format format;
};

#define KIND_WORDS_MAX 3

/* What a profile of the kind spans. */
enum kind_time {
	KIND_WINDOW,	/* samples over a window (default 30 s) */
	KIND_SNAPSHOT,	/* a moment: a window in the name is ignored */
	KIND_SO_FAR,	/* everything so far; over a window when the name
			 * gives one (heap, allocs) */
};

/* Which kernel frames the kind's stacks may show ("[k] name"): none,
 * those of threads on a CPU (perf's callchains), or those of sleeping
 * threads (their kernel stacks, which the kernel shows root alone:
 * access_kernel()'s sleeping). */
enum kind_frames {
	KIND_FRAMES_NONE,
	KIND_FRAMES_RUNNING,
	KIND_FRAMES_SLEEPING,
};

/* Query parameters that change what is measured. They split sessions;
 * the others (debug=, sample=, the format) only change the rendering,
 * and a session renders for every reader it has. The window splits by
 * the row's time, kernel= by its frames. */
#define KIND_KEY_HZ (1u << 0)	/* hz= */
#define KIND_KEY_RATE (1u << 1)	/* rate= */
#define KIND_KEY_PAST (1u << 2)	/* _lastNs and base= (the flight
				 * recorder, past.h) */

/* Take a profile for c (blocking, on the session's thread): 0 and *out,
 * or a negative errno (-ECANCELED when c->stop was set). Fills r (the
 * detail of the session's log line) on failure too. See run.h. */
typedef int (*kind_run_fn)(const struct run_ctx *c, struct profile **out,
			   struct run_result *r);

/* Render p as req asks: 0 and *buf (malloc()ed, the caller's), or a
 * negative errno. See output.h. */
typedef int (*kind_render_fn)(const struct profile *p,
			      const struct proffs_request *req,
			      uint8_t **buf, size_t *len);

struct kind_ops {
	/* The kind's label: logs, /prof/status keys, the metrics' kind="",
	 * the profile's own title. */
	const char *name;
	/* The words of the grammar that name it, the first is name; ended
	 * by a NULL word (or KIND_WORDS_MAX). */
	struct kind_word words[KIND_WORDS_MAX];
	enum kind_time time;
	unsigned key;			/* KIND_KEY_* */
	enum kind_frames frames;
	bool host;			/* served in /prof/all too */
	bool finishes;			/* runs on when its readers leave
					 * (cannot stop halfway) */
	bool uprobes;			/* may place uprobes (heap=uprobe),
					 * which needs root */
	const char *busy;		/* the sampler's -EBUSY, in words */
	kind_run_fn run;
	/* render[format]; NULL: not served (ENOENT at lookup) */
	kind_render_fn render[PROFFS_FMT__COUNT];
	/* pprof labels the .pb formats merge away (NULL-ended), so one
	 * sample stands for every thread of the same stack */
	const char *const *merge_labels;
	enum flame_palette palette;	/* of the .svg */
};

/* The row of kind; NULL for a value that is not a kind. */
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
