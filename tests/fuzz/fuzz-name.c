// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz-name.c - libFuzzer harness for fs/core/name.c: the input is a file name.
 * Checks that name_parse returns only 0, -ENOENT or -EINVAL; that
 * name_parse_why says why exactly when it fails, in any room; that a parsed
 * request is in range; that on -EINVAL kind and format are still valid;
 * and that a parsed request, spelled out canonically, parses back to
 * itself. Not built by meson:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -I fs -I sampler \
 *     tests/fuzz/fuzz-name.c fs/core/name.c -o fuzz-name
 *   ./fuzz-name -max_len=300 -dict=tests/fuzz/fuzz-name.dict \
 *     tests/fuzz/corpus-name
 *
 * Copy the corpus first if new inputs should not land in the tree.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/core/name.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define YEAR_MS (365ull * 24 * 3600 * 1000)

static void fail(const char *name, const char *why)
{
	fprintf(stderr, "fuzz-name: '%s': %s\n", name, why);
	abort();
}

static int word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

static void check_range(const char *name, const struct proffs_request *r)
{
	size_t i;

	if ((unsigned)r->kind >= PROFFS_KIND__COUNT ||
	    (unsigned)r->format >= PROFFS_FMT__COUNT)
		fail(name, "kind or format out of range");
	if (!strcmp(name_kind_str(r->kind), "?") ||
	    !strcmp(name_format_str(r->format), "?"))
		fail(name, "no string for kind or format");
	if (!r->window_ms || r->window_ms > YEAR_MS)
		fail(name, "window out of range");
	if (!r->has_window && r->window_ms != PROFFS_DEFAULT_SECONDS * 1000)
		fail(name, "default window is not 30 s");
	if (!r->hz || r->hz > 1000000 || !r->rate)
		fail(name, "hz or rate out of range");
	if (r->debug < 0 || r->debug > 2)
		fail(name, "debug out of range");
	for (i = 0; i < sizeof(r->sample) && r->sample[i]; i++)
		if (!word_char(r->sample[i]))
			fail(name, "sample is not a WORD");
	if (i == sizeof(r->sample))
		fail(name, "sample not terminated");
}

static int same(const struct proffs_request *a, const struct proffs_request *b)
{
	return a->kind == b->kind && a->format == b->format &&
	       a->has_window == b->has_window &&
	       a->window_ms == b->window_ms && a->hz == b->hz &&
	       a->rate == b->rate && a->debug == b->debug &&
	       !strcmp(a->sample, b->sample);
}

/* Spell r out in the other query order from most inputs: query last. */
static void check_round_trip(const char *name, const struct proffs_request *r)
{
	struct proffs_request back;
	char canon[256], win[32] = "";
	int n;

	if (r->has_window)
		snprintf(win, sizeof(win), "_%" PRIu64 "ms", r->window_ms);
	n = snprintf(canon, sizeof(canon), "%s%s.%s?hz=%u&rate=%u&debug=%d%s%s",
		     name_kind_str(r->kind), win, name_format_str(r->format),
		     r->hz, r->rate, r->debug, r->sample[0] ? "&sample=" : "",
		     r->sample);
	if (n < 0 || (size_t)n >= sizeof(canon))
		fail(name, "canonical name too long");
	if (name_parse(canon, &back))
		fail(canon, "canonical name does not parse");
	if (!same(r, &back))
		fail(name, "canonical name parses differently");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proffs_request r, again;
	char *name = malloc(size + 1);
	int ret;

	if (!name)
		return 0;
	memcpy(name, data, size);
	name[size] = '\0';
	ret = name_parse(name, &r);
	if (ret != 0 && ret != -ENOENT && ret != -EINVAL)
		fail(name, "unexpected return");
	if (ret == 0 && strlen(name) > 255)
		fail(name, "name over 255 bytes accepted");
	if (ret == -EINVAL && ((unsigned)r.kind >= PROFFS_KIND__COUNT ||
			       (unsigned)r.format >= PROFFS_FMT__COUNT))
		fail(name, "EINVAL without kind and format");
	if (name_parse(name, &again) != ret)
		fail(name, "not deterministic");
	{
		char why[300], small[7];

		/* the sentence for the user: there iff it failed, and
		 * whatever the room, a string */
		if (name_parse_why(name, &again, why, sizeof(why)) != ret ||
		    (ret ? !why[0] : why[0] != '\0'))
			fail(name, "no sentence, or one on success");
		if (name_parse_why(name, &again, small, sizeof(small)) != ret ||
		    !memchr(small, '\0', sizeof(small)))
			fail(name, "the sentence overran a small buffer");
	}
	if (ret == 0) {
		check_range(name, &r);
		if (!same(&r, &again))
			fail(name, "not deterministic");
		check_round_trip(name, &r);
	}
	free(name);
	return 0;
}
