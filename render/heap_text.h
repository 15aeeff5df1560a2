/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_text.h - a heap profile (heap_model.h's, or any with Go's four
 * heap sample types) as Go's legacy text heap profile, what
 * /debug/pprof/heap?debug=1 serves:
 *
 *   heap profile: 3: 144 [5: 240] @ heap/1048576
 *   1: 48 [2: 96] @ 0x55d0...a 0x55d0...3 0x7f12...c
 *   #	0x55d0...a	site_small	/src/allocs.c:61
 *   #	0x55d0...3	main	/src/allocs.c:140
 *   (blank line)
 *
 *   MAPPED_LIBRARIES:
 *   000055d0...000-000055d0...000 r-xp 00001000 00:00 0 /src/allocs
 *   (blank line)
 *   # runtime.MemStats
 *   # Alloc = 1234
 *   ...
 *   # proffs: Mallocs and Frees count every call since ...
 *
 * The first line totals in-use objects and bytes, [allocated objects and
 * bytes], and names twice the sampling rate, as Go does; then a record
 * per sample, largest in-use bytes first. As in Go's text, the counts are
 * the sampled ones, not scaled: a reader scales them back with Go's
 * formula (go tool pprof reads this format). The profile holds scaled
 * values, so each record is unscaled with the same formula, from its
 * allocation size (the "bytes" label, else the average) and the
 * profile's period (the rate). The
 * memory map at the end, as gperftools writes it, lets pprof symbolize
 * the addresses from the files on this machine. The profile's figures
 * (profile_add_stat: MemStats from the heap agent and /proc) end it, as
 * Go's ends with runtime.MemStats: "# Name = value" lines, which pprof's
 * parser skips, then the notes on them as "# proffs: " lines.
 * heap_text_memstats() prints that block alone (memstats.txt).
 *
 * Ownership and errors as in folded.h: *buf is malloc()ed and
 * NUL-terminated, owned by the caller; -ENOMEM, or -EINVAL when the
 * profile lacks one of the four types; on failure *buf is untouched.
 */
#ifndef PROFFS_HEAP_TEXT_H
#define PROFFS_HEAP_TEXT_H

#include <stddef.h>

struct profile;

int heap_text_render(const struct profile *p, char **buf, size_t *len);
/* The figures alone; -EINVAL when the profile has none. */
int heap_text_memstats(const struct profile *p, char **buf, size_t *len);

#endif
