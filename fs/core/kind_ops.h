/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kind_ops.h - the type of a kind's row (struct kind_ops): its words,
 * its time, its session key, its run function, its renderers and labels.
 * The table of rows is kinds.c's (kinds.h); this header holds the type
 * alone, so that the run functions and renderers a row names (run.h,
 * output.h) can be given their row without including the table.
 */
#ifndef PROFFS_KIND_OPS_H
#define PROFFS_KIND_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/core/request.h"
#include "render/flame.h"

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
struct kind_ops;

/* k: the request's own row, for what its renderer reads of it (the
 * labels merged away, the palette) */
typedef int (*kind_render_fn)(const struct profile *p,
			      const struct proffs_request *req,
			      const struct kind_ops *k, uint8_t **buf,
			      size_t *len);

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

#endif
