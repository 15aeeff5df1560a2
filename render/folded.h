/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * folded.h - the profile as collapsed stacks ("root;caller;callee value"
 * per line, as flamegraph.pl, inferno and speedscope read them), plus the
 * stack walk and output buffer the other text renderers (flame.c,
 * text.c) share.
 *
 * Frames are named as pprof names them at function granularity: the
 * function name; for a location without lines "[dso]" (base name of its
 * mapping's file) or "<unknown>". Inlined frames are separate frames,
 * outer first. Labels are ignored, so samples differing only in labels
 * merge.
 *
 * Ownership: on success *buf is malloc()ed, NUL-terminated (not counted
 * in *len) and owned by the caller (free(3)); on failure *buf and *len
 * are untouched. Errors: -ENOMEM, -EINVAL (no sample types, or
 * sample_index out of range).
 */
#ifndef PROFFS_FOLDED_H
#define PROFFS_FOLDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct profile;
struct pf_sample;

/*
 * Render value column sample_index (-1: the header's default_sample_type
 * if set, else the last type). Lines are sorted bytewise; samples whose
 * value is zero are skipped, so the values sum to profile_total().
 */
int folded_render(const struct profile *p, int sample_index, char **buf,
		  size_t *len);

/* Shared with flame.c and text.c. */

/* Resolve sample_index as above into *out; -EINVAL if out of range. */
int folded_sample_index(const struct profile *p, int sample_index,
			size_t *out);

/*
 * A frame key: > 0 a string index (function name), < 0 minus a mapping
 * id (unsymbolized code in that mapping), 0 "<unknown>". Equal keys are
 * equal names, except that two mappings of one file have two keys.
 */
struct folded_walk {
	const struct profile *p;
	size_t nkeys;		/* range of folded_key_slot() */
	int64_t *keys;		/* current stack, root first */
	bool *inlined;		/* frame i was inlined into frame i - 1 */
	size_t n, cap;
	char **dso_names;	/* "[base]" per mapping id - 1 */
};

int folded_walk_init(struct folded_walk *w, const struct profile *p);
/* Fill w->keys/w->inlined/w->n with sample s's frames, root first. */
int folded_walk_stack(struct folded_walk *w, const struct pf_sample *s);
/* Printable name of a key; never NULL. */
const char *folded_walk_name(const struct folded_walk *w, int64_t key);
/* A dense index in [0, w->nkeys) for key, for per-frame arrays. */
size_t folded_key_slot(const struct folded_walk *w, int64_t key);
void folded_walk_fini(struct folded_walk *w);

/* A growing output buffer; the first failure sticks in err. */
struct folded_buf {
	char *s;
	size_t len, cap;
	int err;
};

void folded_buf_put(struct folded_buf *b, const char *s, size_t n);
void folded_buf_puts(struct folded_buf *b, const char *s);
void folded_buf_printf(struct folded_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Hand the text to *buf and *len (0), or free it; b->err. */
int folded_buf_finish(struct folded_buf *b, char **buf, size_t *len);

struct pf_location;

/* The file of the mapping holding loc, "?" when unknown. */
const char *folded_mapping_file(const struct profile *p,
				const struct pf_location *loc);

/*
 * The "#\t0xPC\tfunction\tfile:line" lines Go's legacy text profiles
 * (goroutine?debug=1, heap?debug=1) print under a record: one per line of
 * the location, inlined functions first; the object's file when the
 * location has no lines. Go adds "+0xOFF" to the function; the model
 * knows no function entry address, so there is none.
 */
void folded_put_hash_frames(struct folded_buf *b, const struct profile *p,
			    const struct pf_location *loc);

#endif
