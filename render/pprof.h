/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pprof.h - the profile model as pprof's Profile protobuf, optionally
 * gzipped (what `go tool pprof` reads).
 *
 * Encoding goes through protobuf-c, with C generated at build time from
 * render/profile.proto (pprof's field numbers and types). The output obeys
 * pprof's rules: string_table[0] = "", ids unique and non-zero, one value
 * per sample type.
 *
 * Ownership: on success *buf is malloc()ed and owned by the caller
 * (free(3)); on failure *buf and *len are untouched. Errors: -ENOMEM,
 * -EINVAL (a profile breaking the model's invariants), -EIO (zlib).
 */
#ifndef PROFFS_PPROF_H
#define PROFFS_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct profile;

/* Encode p; gzip the result when gzip is true. */
int pprof_encode(const struct profile *p, bool gzip, uint8_t **buf,
		 size_t *len);

/*
 * Decode a (possibly gzipped: detected by magic) pprof buffer back into a
 * new profile model. For tests and fuzzing: encode(decode(x)) == x.
 * -EINVAL on malformed input.
 */
int pprof_decode(const uint8_t *buf, size_t len, struct profile **out);

#endif
