/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * profile.h - the profile model: samples aggregated by stack, pprof-shaped.
 *
 * A profile is what a sampler yields and a renderer consumes. Its shape is
 * pprof's Profile message (github.com/google/pprof proto/profile.proto) so
 * that render/pprof.c is a straight copy, and the other renderers (flame
 * graph, folded, text) read the same tables.
 *
 * Invariants:
 *   - Strings are interned: every string field is an index into the
 *     profile's string table; index 0 is always "".
 *   - Mapping, location and function ids are dense and start at 1: the
 *     object with id N is element N - 1 of its table, so lookups are O(1).
 *   - Functions are deduplicated by (name, system_name, filename,
 *     start_line); locations are NOT deduplicated here (the symbolizer
 *     keeps its own pc -> location map); samples ARE merged: adding a
 *     sample whose (location ids, labels) equal an existing sample's adds
 *     the values element-wise. So memory grows with distinct stacks, not
 *     with the number of samples added.
 *   - Every sample has exactly profile_nsample_types() values.
 *   - Location ids of a sample are leaf first (pprof order); the lines of
 *     a location are innermost (inlined callee) first, the function the
 *     code was inlined into last.
 *
 * Ownership: the profile owns every table and string; pointers returned by
 * the accessors stay valid until the next profile_add_* call or
 * profile_free(). Not thread-safe: one writer, or readers only.
 *
 * Errors: functions return 0 or a negative errno (-ENOMEM, -EINVAL); a
 * failed call leaves the profile unchanged.
 */
#ifndef PROFFS_PROFILE_H
#define PROFFS_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PF_MAX_SAMPLE_TYPES 8

struct pf_value_type {
	int64_t type;		/* string index, e.g. "cpu" */
	int64_t unit;		/* string index, e.g. "nanoseconds" */
};

struct pf_mapping {
	uint64_t id;
	uint64_t start;		/* memory_start */
	uint64_t limit;		/* memory_limit */
	uint64_t offset;	/* file_offset */
	int64_t filename;	/* string index */
	int64_t build_id;	/* string index, hex */
	bool has_functions;
	bool has_filenames;
	bool has_line_numbers;
	bool has_inline_frames;
};

struct pf_line {
	uint64_t function_id;
	int64_t line;		/* 0 when unknown */
};

struct pf_location {
	uint64_t id;
	uint64_t mapping_id;	/* 0 when the address is in no mapping */
	uint64_t address;
	uint32_t nlines;
	struct pf_line *lines;	/* innermost first */
};

struct pf_function {
	uint64_t id;
	int64_t name;
	int64_t system_name;
	int64_t filename;
	int64_t start_line;
	/* A language runtime's own frame (a Python function, a Java
	 * method), as the sampler that read it from the runtime says
	 * (profile_mark_runtime()); false for native code. Flame graphs
	 * colour such frames apart; pprof's message has no place for it. */
	bool runtime;
};

struct pf_label {
	int64_t key;		/* string index */
	int64_t str;		/* string index, 0 for numeric labels */
	int64_t num;
	int64_t num_unit;	/* string index */
};

/*
 * A figure about the process that is no sample, as Go's runtime.MemStats
 * (name "HeapSys", value "1234"), or a note on such figures (value 0).
 * Text renderers print them; pprof's message has no place for them.
 */
struct pf_stat {
	int64_t name;		/* string index; the note's text */
	int64_t value;		/* string index; 0 for a note */
};

struct pf_sample {
	uint32_t nlocs;
	uint32_t nlabels;
	uint64_t *loc_ids;	/* leaf first */
	struct pf_label *labels;
	int64_t *values;	/* profile_nsample_types() of them */
};

/*
 * Profile-wide fields. Owned by the profile; the writer sets them directly
 * through profile_header(). String fields are string indices.
 */
struct pf_header {
	struct pf_value_type period_type;
	int64_t period;
	int64_t time_nanos;		/* start of the window, unix time */
	int64_t duration_nanos;
	int64_t default_sample_type;	/* string index, 0 = last type */
	/* For renderers' titles; not part of the pprof message. */
	int pid;
	int64_t command;		/* string index: target command line */
	int64_t name;			/* string index: the name the process
					 * runs as (comm, or its executable's
					 * when comm is cut short); 0: none */
	int64_t kind;			/* string index: "cpu", "heap", ... */
};

struct profile;

/* Life cycle */

/* Create an empty profile (string table holds just ""). -ENOMEM. */
int profile_new(struct profile **out);
/* Free everything; NULL is a no-op. */
void profile_free(struct profile *p);

/* Writing */

/*
 * Intern a string; returns its index (>= 0) or -ENOMEM. NULL and ""
 * both give 0.
 */
/* The heap the profile takes, its strings and tables included, as
 * malloc() rounds it (about: an allocator's headers vary). */
size_t profile_mem_bytes(const struct profile *p);

int64_t profile_intern(struct profile *p, const char *s);

/* Append a sample type. -EINVAL if there are already PF_MAX_SAMPLE_TYPES
 * or samples have been added. */
int profile_add_sample_type(struct profile *p, const char *type,
			    const char *unit);

/* Set period type/unit and period (interns the strings). */
int profile_set_period(struct profile *p, const char *type, const char *unit,
		       int64_t period);

/* Append a comment line (pprof's comment field). */
int profile_add_comment(struct profile *p, const char *text);

/*
 * Append a figure (name = value, both non-empty), or with value NULL a
 * note whose text is name. -EINVAL for an empty string.
 */
int profile_add_stat(struct profile *p, const char *name, const char *value);

/* Mutable header; never NULL. */
struct pf_header *profile_header(struct profile *p);

/*
 * Append a mapping. m->id is ignored; the new id is stored in *id.
 * String fields of *m must already be indices of this profile.
 */
int profile_add_mapping(struct profile *p, const struct pf_mapping *m,
			uint64_t *id);

/* Find or add a function (deduplicated); strings may be NULL. */
int profile_add_function(struct profile *p, const char *name,
			 const char *system_name, const char *filename,
			 int64_t start_line, uint64_t *id);

/* Mark function id as a language runtime's frame (pf_function.runtime).
 * -EINVAL for an id out of range. */
int profile_mark_runtime(struct profile *p, uint64_t id);

/* Append a location with a copy of lines[0..nlines). */
int profile_add_location(struct profile *p, uint64_t mapping_id,
			 uint64_t address, const struct pf_line *lines,
			 uint32_t nlines, uint64_t *id);

/*
 * Add a sample: merged with an existing sample of the same location ids
 * and labels (values added), else appended with copies of the arrays.
 * values has profile_nsample_types() elements. Label string fields must
 * be indices of this profile.
 */
int profile_add_sample(struct profile *p, const uint64_t *loc_ids,
		       uint32_t nlocs, const struct pf_label *labels,
		       uint32_t nlabels, const int64_t *values);

/*
 * The end of a sampler's window: with ret 0, p gets the window (its
 * start in unix nanoseconds, its length) and goes to *out; with an
 * error, p is freed (NULL is fine) and ret returned.
 */
int profile_deliver(struct profile *p, int ret, int64_t time_nanos,
		    int64_t duration_nanos, struct profile **out);

/*
 * The values of sample i, to change in place: for a writer that weighs
 * its samples once the window is over (the off-CPU kinds scale sampled
 * times to measured totals). NULL when i is out of range.
 */
int64_t *profile_sample_values(struct profile *p, size_t i);

/*
 * A copy of src whose samples lose the labels with the keys named in drop
 * (a NULL-terminated list) and so merge where only those differed: e.g.
 * one sample per thread -> one sample per (stack, remaining labels).
 * String indices and mapping, function and location ids are the same as
 * in src. On success *out is a new profile; -ENOMEM.
 */
int profile_copy_dropping_labels(const struct profile *src,
				 const char *const *drop,
				 struct profile **out);

/* Reading (all O(1); ids out of range give NULL) */

const struct pf_header *profile_header_const(const struct profile *p);
const char *profile_str(const struct profile *p, int64_t idx);
size_t profile_nstrings(const struct profile *p);

size_t profile_nsample_types(const struct profile *p);
const struct pf_value_type *profile_sample_type(const struct profile *p,
						size_t i);
/* Index of the sample type named type (e.g. "alloc_space"), or -ENOENT. */
int profile_find_sample_type(const struct profile *p, const char *type);

size_t profile_ncomments(const struct profile *p);
int64_t profile_comment(const struct profile *p, size_t i);

size_t profile_nstats(const struct profile *p);
const struct pf_stat *profile_stat(const struct profile *p, size_t i);

size_t profile_nsamples(const struct profile *p);
const struct pf_sample *profile_sample(const struct profile *p, size_t i);

size_t profile_nmappings(const struct profile *p);
const struct pf_mapping *profile_mapping(const struct profile *p,
					 uint64_t id);
size_t profile_nlocations(const struct profile *p);
const struct pf_location *profile_location(const struct profile *p,
					   uint64_t id);
size_t profile_nfunctions(const struct profile *p);
const struct pf_function *profile_function(const struct profile *p,
					   uint64_t id);

/* Sum of value column i over all samples. */
int64_t profile_total(const struct profile *p, size_t i);

#endif
