/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flame.h - the profile as a self-contained interactive SVG flame graph.
 *
 * The SVG needs nothing from the network (inline <style> and <script>;
 * the only URI is the SVG namespace) and works opened as file://. Root
 * "all" at the bottom, 1200 px wide, frames named as in folded.h
 * (inlined frames separate), siblings sorted by name. Each frame is
 * <g class="frame" data-v="VALUE"><title>NAME (VALUE, PCT%)</title>
 * <rect/><text/></g>, in depth-first order. Controls: click a frame to
 * zoom (it spans the width, ancestors stay dimmed, others hide);
 * id="reset" ("Reset Zoom"); id="search" (prompts for a regular
 * expression; the script's global search(re) does the same and returns
 * the percentage); id="matched" shows "Matched: NN.N%" (frames nested in
 * a matching frame are not counted twice); id="details" shows the frame
 * under the pointer (see flame_opts.diff for the differential
 * variant). Colours come from a hash of the name, in the
 * palette's hues: warm (CPU), green (memory), cool blue (off-CPU time);
 * a runtime's own frames (pf_function.runtime: Python functions, Java
 * methods) in purples whatever the palette.
 *
 * Size is bounded: frames narrower than min_width_px are left out (their
 * value stays in their parent), and if more than FLAME_MAX_FRAMES remain
 * the threshold is raised until they fit, so any profile renders to a
 * few MB.
 *
 * Ownership and errors as in folded.h: *buf is malloc()ed and
 * NUL-terminated, owned by the caller; -ENOMEM, -EINVAL (no sample
 * types, sample_index out of range); on failure *buf is untouched.
 */
#ifndef PROFFS_FLAME_H
#define PROFFS_FLAME_H

#include <stdbool.h>
#include <stddef.h>

#define FLAME_MAX_FRAMES 16000

struct profile;

enum flame_palette {
	FLAME_WARM,		/* red to yellow: CPU */
	FLAME_MEMORY,		/* greens: heap, allocs */
	FLAME_OFFCPU,		/* cool blues: wall, block, mutex */
};

struct flame_opts {
	int sample_index;	/* -1: default type, as folded_render() */
	const char *title;	/* NULL: "<kind> profile: pid N (command)" */
	const char *subtitle;	/* NULL: sample type, window and total */
	enum flame_palette palette;	/* 0: warm */
	double min_width_px;	/* 0: 0.1; negative: keep every frame */
	/* A differential flame graph of a profile made by base= (samples
	 * labelled pprof::base=true hold the base, negated): width is the
	 * new profile, the fill the change (red grew, blue shrank, the
	 * stronger the more), the title both values and the delta, and
	 * each frame's data-d the delta. */
	bool diff;
};

/* o may be NULL: all defaults with sample_index -1. */
int flame_render(const struct profile *p, const struct flame_opts *o,
		 char **buf, size_t *len);

#endif
