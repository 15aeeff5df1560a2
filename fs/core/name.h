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

#include "fs/core/request.h"

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
