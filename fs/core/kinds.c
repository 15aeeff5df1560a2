// SPDX-License-Identifier: GPL-2.0-or-later
/* kinds.c - the rows of kinds.h: one per kind of profile. */
#include <errno.h>

#include "fs/core/kinds.h"

#ifdef KINDS_NO_OPS	/* the grammar alone: see kinds.h */
#define OP(fn) NULL
#else
#include "fs/core/output.h"
#include "fs/core/run.h"
#define OP(fn) fn
#endif

/* cpu and the off-CPU kinds: samples over a window, in every format. */
#define TIMED_RENDERERS { \
		[PROFFS_FMT_PB_GZ] = OP(output_pb_gz), \
		[PROFFS_FMT_PB] = OP(output_pb), \
		[PROFFS_FMT_SVG] = OP(output_svg), \
		[PROFFS_FMT_TXT] = OP(output_txt), \
		[PROFFS_FMT_FOLDED] = OP(output_folded), \
	}

/* heap and allocs: .txt is the top table, ?debug=1 Go's legacy text. */
#define HEAP_RENDERERS { \
		[PROFFS_FMT_PB_GZ] = OP(output_pb_gz), \
		[PROFFS_FMT_PB] = OP(output_pb), \
		[PROFFS_FMT_SVG] = OP(output_svg), \
		[PROFFS_FMT_TXT] = OP(output_heap_txt), \
		[PROFFS_FMT_FOLDED] = OP(output_folded), \
	}

#define HEAP_BUSY "the target is traced by another process, or its heap " \
		  "agent serves as many sessions as it can"
#define TRACED_BUSY "the target (or one of its threads) is traced by " \
		    "another process"

/* A thread dump's samples are one per thread; its pprof is one per
 * distinct stack (and thread state), as Go's goroutine profile. */
static const char *const per_thread[] = { "thread", "syscall", NULL };

/* A timeline's pprof is its cpu profile: the samples' times (and the
 * off-CPU intervals' lengths, trace.h) merged away. */
static const char *const timeline[] = { "ts", "dur", NULL };

/* wall, block and mutex: one sampler (offcpu.h), told apart by the kind */
#define OFFCPU_KIND(n) { \
	.name = n, \
	.words = { { n, PROFFS_FMT_PB_GZ } }, \
	.time = KIND_WINDOW, \
	.key = KIND_KEY_HZ, \
	.frames = KIND_FRAMES_SLEEPING, \
	.busy = TRACED_BUSY, \
	.run = OP(run_offcpu), \
	.render = TIMED_RENDERERS, \
	.palette = FLAME_OFFCPU, \
}

static const struct kind_ops rows[PROFFS_KIND__COUNT] = {
	[PROFFS_KIND_CPU] = {
		.name = "cpu",
		.words = { { "cpu", PROFFS_FMT_PB_GZ },
			   { "profile", PROFFS_FMT_PB_GZ },
			   { "flame", PROFFS_FMT_SVG } },
		.time = KIND_WINDOW,
		.key = KIND_KEY_HZ | KIND_KEY_PAST,
		.frames = KIND_FRAMES_RUNNING,
		.host = true,
		.busy = TRACED_BUSY,
		.run = OP(run_cpu),
		.render = TIMED_RENDERERS,
	},
	[PROFFS_KIND_HEAP] = {
		.name = "heap",
		.words = { { "heap", PROFFS_FMT_PB_GZ } },
		.time = KIND_SO_FAR,
		.key = KIND_KEY_RATE,
		.uprobes = true,
		.busy = HEAP_BUSY,
		.run = OP(run_heap),
		.render = HEAP_RENDERERS,
		.palette = FLAME_MEMORY,
	},
	[PROFFS_KIND_ALLOCS] = {
		.name = "allocs",
		.words = { { "allocs", PROFFS_FMT_PB_GZ } },
		.time = KIND_SO_FAR,
		.key = KIND_KEY_RATE,
		.uprobes = true,
		.busy = HEAP_BUSY,
		.run = OP(run_heap),
		.render = HEAP_RENDERERS,
		.palette = FLAME_MEMORY,
	},
	[PROFFS_KIND_GOROUTINE] = {
		.name = "goroutine",
		.words = { { "goroutine", PROFFS_FMT_PB_GZ },
			   { "threads", PROFFS_FMT_PB_GZ } },
		.time = KIND_SNAPSHOT,
		.frames = KIND_FRAMES_SLEEPING,
		/* Its threads are held while it runs, well under a second:
		 * a new reader joins it rather than start a second dump
		 * that would find the first one tracing the process. */
		.finishes = true,
		.busy = TRACED_BUSY,
		.run = OP(run_threads),
		.render = {
			[PROFFS_FMT_PB_GZ] = OP(output_pb_gz),
			[PROFFS_FMT_PB] = OP(output_pb),
			[PROFFS_FMT_SVG] = OP(output_svg),
			[PROFFS_FMT_TXT] = OP(output_threads_txt),
			[PROFFS_FMT_FOLDED] = OP(output_folded),
		},
		.merge_labels = per_thread,
	},
	[PROFFS_KIND_WALL] = OFFCPU_KIND("wall"),
	[PROFFS_KIND_BLOCK] = OFFCPU_KIND("block"),
	[PROFFS_KIND_MUTEX] = OFFCPU_KIND("mutex"),
	[PROFFS_KIND_MEMSTATS] = {
		.name = "memstats",
		.words = { { "memstats", PROFFS_FMT_TXT } },
		.time = KIND_SNAPSHOT,
		.busy = HEAP_BUSY,
		.run = OP(run_memstats),
		.render = { [PROFFS_FMT_TXT] = OP(output_memstats_txt) },
	},
	/* cpu's samples, each with its time: a timeline (trace.h) */
	[PROFFS_KIND_TRACE] = {
		.name = "trace",
		.words = { { "trace", PROFFS_FMT_JSON } },
		.time = KIND_WINDOW,
		.key = KIND_KEY_HZ | KIND_KEY_PAST,	/* last windows, no base= */
		.frames = KIND_FRAMES_RUNNING,
		.host = true,	/* one track group per process (trace.h) */
		.busy = TRACED_BUSY,
		.run = OP(run_cpu),
		.render = {
			[PROFFS_FMT_JSON] = OP(output_trace_json),
			[PROFFS_FMT_PB_GZ] = OP(output_pb_gz),
			[PROFFS_FMT_PB] = OP(output_pb),
		},
		.merge_labels = timeline,
	},
};

const struct kind_ops *kinds_row(enum proffs_kind kind)
{
	return (unsigned)kind < PROFFS_KIND__COUNT ? &rows[kind] : NULL;
}

int kinds_word(size_t i, const char **word, enum proffs_kind *kind,
	       enum proffs_format *format)
{
	for (int k = 0; k < PROFFS_KIND__COUNT; k++)
		for (size_t w = 0; w < KIND_WORDS_MAX && rows[k].words[w].word;
		     w++)
			if (!i--) {
				*word = rows[k].words[w].word;
				*kind = k;
				*format = rows[k].words[w].format;
				return 0;
			}
	return -ENOENT;
}

uint64_t kinds_window_ms(const struct proffs_request *req)
{
	const struct kind_ops *k = kinds_row(req->kind);

	if (!k || k->time == KIND_SNAPSHOT ||
	    (k->time == KIND_SO_FAR && !req->has_window))
		return 0;
	return req->window_ms;
}
