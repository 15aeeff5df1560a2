/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * name.h - the file-name grammar of /prof/<pid>/ (SPEC §1), parsed into a
 * request.
 *
 *   name     := kind [ "_" duration ] [ "?" query ] [ "." format ]
 *   kind     := cpu | profile | flame | heap | allocs | goroutine | threads
 *             | wall | block | mutex | memstats | trace
 *   duration := INT ( "s" | "ms" ) | "last" INT "s"
 *   query    := param ( "&" param )*
 *   param    := seconds=INT | hz=INT | rate=INT | debug=INT | sample=WORD
 *             | kernel=INT | base=prev | base=last INT s
 *   format   := pb.gz | pb | svg | txt | folded | json
 *
 * Two kinds of failure, because the filesystem answers them at different
 * times: a name that is no file of proffs at all (its kind word or its
 * format is not the grammar's) is -ENOENT (at lookup); a name whose kind
 * and format are proffs's but whose duration or query is wrong (no unit,
 * an unknown parameter, seconds=0, a number that is not one or
 * overflows, a parameter given twice, two different windows) is -EINVAL
 * (lookup succeeds, open fails). Limits that are options of the daemon
 * (maximum window, maximum hz) are checked by the caller, not here.
 *
 * Pure functions, no allocation, no global state.
 */
#ifndef PROFFS_NAME_H
#define PROFFS_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/heap/agent/heap_ring.h"

enum proffs_kind {
	PROFFS_KIND_CPU,	/* cpu, profile, flame */
	PROFFS_KIND_HEAP,
	PROFFS_KIND_ALLOCS,
	PROFFS_KIND_GOROUTINE,	/* goroutine, threads */
	PROFFS_KIND_WALL,	/* every thread, on and off the CPU */
	PROFFS_KIND_BLOCK,	/* off the CPU, waiting to synchronize */
	PROFFS_KIND_MUTEX,	/* the part of block spent on locks */
	PROFFS_KIND_MEMSTATS,	/* Go's runtime.MemStats, txt only */
	PROFFS_KIND_TRACE,	/* on-CPU stacks over time, json only */
	PROFFS_KIND__COUNT,
};

enum proffs_format {
	PROFFS_FMT_PB_GZ,
	PROFFS_FMT_PB,
	PROFFS_FMT_SVG,
	PROFFS_FMT_TXT,
	PROFFS_FMT_FOLDED,
	PROFFS_FMT_JSON,	/* Chrome trace events (trace) */
	PROFFS_FMT__COUNT,
};

/* base=: what a differential profile compares with (SPEC §10) */
enum proffs_base {
	PROFFS_BASE_NONE,
	PROFFS_BASE_PREV,	/* the window of the same length before */
	PROFFS_BASE_LAST,	/* the recorder's last base_ms, per second */
};

#define PROFFS_SAMPLE_MAX 32
#define PROFFS_DEFAULT_SECONDS 30
#define PROFFS_DEFAULT_HZ 99
/* The heap's: what the agent samples at unless told (Go's MemProfileRate),
 * defined once, with the agent. */
#define PROFFS_DEFAULT_RATE PH_DEFAULT_RATE

struct proffs_request {
	enum proffs_kind kind;
	enum proffs_format format;
	bool has_window;	/* a duration was given (_Ns, _Nms, seconds=) */
	uint64_t window_ms;	/* the window; default 30 s when !has_window */
	uint32_t hz;		/* default 99 */
	uint32_t rate;		/* default 524288 */
	int debug;		/* default 0 (absent); 1 or 2 when given */
	char sample[PROFFS_SAMPLE_MAX];	/* "" when absent */
	bool kernel;		/* kernel frames where the daemon may see
				 * them: kernel=1 (default), kernel=0 */
	bool last;		/* _lastNs: the past, from the recorder */
	enum proffs_base base;	/* base=: a differential profile */
	uint64_t base_ms;	/* base=lastNs */
};

/*
 * Parse name (a single path component, NUL-terminated) into *req, filling
 * defaults for what the name does not say. Returns 0, -ENOENT (not in the
 * grammar) or -EINVAL (in the grammar, bad value). On -EINVAL req->kind
 * and req->format are filled in (the daemon decides by them whether the
 * name exists); otherwise, on failure, *req is unspecified.
 */
int name_parse(const char *name, struct proffs_request *req);

/*
 * name_parse(), and on failure one sentence for the user in buf (buflen
 * bytes, NUL-terminated, "" on success; buflen 0: none): what is wrong
 * and a name that would work, e.g. "a duration needs a unit:
 * cpu_5s.pb.gz or cpu_500ms.pb.gz".
 */
int name_parse_why(const char *name, struct proffs_request *req, char *buf,
		   size_t buflen);

/* The kind words of the grammar ("cpu", "profile", "flame", ...), by
 * index from 0; NULL past the last. For indexes and other front ends. */
const char *name_kind_word(size_t i);

/* Whether key (len bytes) is a parameter of the grammar's query. */
bool name_param_known(const char *key, size_t len);

/* Canonical strings, for logs and titles: "cpu", "pb.gz", ... */
const char *name_kind_str(enum proffs_kind kind);
const char *name_format_str(enum proffs_format fmt);

/* Whether profiles of kind may show kernel frames ("[k] name"), and
 * whether those are the kernel stacks of sleeping threads (which the
 * kernel shows root alone: access_kernel()'s sleeping). */
bool name_kind_kernel(enum proffs_kind kind);
bool name_kind_sleeping(enum proffs_kind kind);

#endif
