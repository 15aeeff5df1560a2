// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz-pprof.c - libFuzzer harness for render/pprof.c's decoder: the input
 * is a (raw or gzipped) pprof buffer. Whatever decodes must be a sane
 * profile that encodes, and decoding that encoding must give the same
 * profile back, byte for byte when encoded again. Not built by meson; see
 * tests/fuzz/run.sh, or by hand:
 *
 *   protoc-c --proto_path=render --c_out=$GEN render/profile.proto
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *     -Isampler -Irender -I$GEN tests/fuzz/fuzz-pprof.c render/pprof.c \
 *     sampler/profile.c sampler/log.c $GEN/profile.pb-c.c \
 *     -lprotobuf-c -lz -o fuzz-pprof
 *   ./fuzz-pprof -max_len=65536 tests/fuzz/corpus-pprof
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/pprof.h"
#include "sampler/model/profile.h"
#include "tests/sane-profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	fprintf(stderr, "fuzz-pprof: %s\n", what);
	abort();
}

static void same_shape(const struct profile *a, const struct profile *b)
{
	if (profile_nsamples(a) != profile_nsamples(b))
		fail("round trip changed the number of samples");
	if (profile_nlocations(a) != profile_nlocations(b))
		fail("round trip changed the number of locations");
	if (profile_nfunctions(a) != profile_nfunctions(b))
		fail("round trip changed the number of functions");
	if (profile_nmappings(a) != profile_nmappings(b))
		fail("round trip changed the number of mappings");
	if (profile_nsample_types(a) != profile_nsample_types(b))
		fail("round trip changed the number of sample types");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = NULL, *q = NULL;
	uint8_t *enc = NULL, *enc2 = NULL;
	size_t len = 0, len2 = 0;

	if (pprof_decode(data, size, &p))
		return 0;
	if (!assert_sane_profile(p, "decoded"))
		fail("decoder returned an insane profile");
	if (pprof_encode(p, false, &enc, &len))
		fail("a decoded profile does not encode");
	if (pprof_decode(enc, len, &q))
		fail("an encoded profile does not decode");
	same_shape(p, q);
	if (pprof_encode(q, false, &enc2, &len2))
		fail("a re-decoded profile does not encode");
	if (len != len2 || memcmp(enc, enc2, len))
		fail("encode(decode(encode(x))) != encode(x)");
	free(enc2);
	free(enc);
	profile_free(q);
	profile_free(p);
	return 0;
}
