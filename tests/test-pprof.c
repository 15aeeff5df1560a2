// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-pprof.c - the pprof encoder and decoder: encode -> decode -> encode
 * is byte-identical (small, empty and large random profiles, raw and
 * gzipped), profiles breaking pprof's rules are refused, malformed input
 * (every truncation, random corruption, each rule broken in turn, a gzip
 * bomb) is refused without crashing, and `go tool pprof` reads a
 * realistic CPU profile with the right functions, lines and totals.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "render/pprof.h"
#include "check.h"
#include "sampler/model/profile.h"
#include "render/profile.pb-c.h"
#include "sane-profile.h"

#define SANE(p) CHECK(assert_sane_profile((p), __func__), "see above")

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Location ids of the CPU profile below, and its expected totals. */
enum { L_SPIN = 1, L_INLINED, L_MAIN, L_COMPUTE };
#define PERIOD 10000000ll	/* 100 Hz */
#define BUILD_ID "8f3a1c0de5b7a9e2f1d4c6b8a0e2f4d6c8b0a2e4"

/*
 * A CPU profile as the sampler writes one: main calls spin (5 samples,
 * thread 100) and compute, into which hash_step is inlined (3 samples,
 * thread 100), and compute itself runs on thread 101 (2 samples).
 */
static struct profile *cpu_profile(void)
{
	struct profile *p;
	struct pf_header *h;
	struct pf_mapping m = { .start = 0x400000, .limit = 0x500000,
				.offset = 0, .has_functions = true,
				.has_filenames = true, .has_line_numbers = true,
				.has_inline_frames = true };
	uint64_t f_main, f_compute, f_hash, f_spin, mid, id;
	struct pf_line l[2];
	struct pf_label t100[2], t101[2];
	int64_t v[2] = { 1, PERIOD };
	uint64_t spin[] = { L_SPIN, L_MAIN }, inl[] = { L_INLINED, L_MAIN };
	uint64_t comp[] = { L_COMPUTE, L_MAIN };

	MUST(profile_new(&p));
	MUST(profile_add_sample_type(p, "samples", "count"));
	MUST(profile_add_sample_type(p, "cpu", "nanoseconds"));
	MUST(profile_set_period(p, "cpu", "nanoseconds", PERIOD));
	h = profile_header(p);
	h->time_nanos = 1700000000123456789ll;
	h->duration_nanos = 30000000000ll;
	h->default_sample_type = profile_intern(p, "cpu");
	h->pid = 4242;
	h->command = profile_intern(p, "/usr/bin/demo --spin");
	h->kind = profile_intern(p, "cpu");
	MUST(profile_add_comment(p, "proffs test profile"));
	m.filename = profile_intern(p, "/usr/bin/demo");
	m.build_id = profile_intern(p, BUILD_ID);
	MUST(profile_add_mapping(p, &m, &mid));
	MUST(profile_add_function(p, "main", NULL, "demo.c", 10, &f_main));
	MUST(profile_add_function(p, "compute", NULL, "demo.c", 20,
				  &f_compute));
	MUST(profile_add_function(p, "hash_step", NULL, "hash.h", 5, &f_hash));
	MUST(profile_add_function(p, "spin", NULL, "demo.c", 40, &f_spin));
	l[0] = (struct pf_line){ f_spin, 42 };
	MUST(profile_add_location(p, mid, 0x401100, l, 1, &id));
	l[0] = (struct pf_line){ f_hash, 7 };
	l[1] = (struct pf_line){ f_compute, 25 };
	MUST(profile_add_location(p, mid, 0x401200, l, 2, &id));
	l[0] = (struct pf_line){ f_main, 12 };
	MUST(profile_add_location(p, mid, 0x401300, l, 1, &id));
	l[0] = (struct pf_line){ f_compute, 27 };
	MUST(profile_add_location(p, mid, 0x401250, l, 1, &id));
	t100[0] = (struct pf_label){ .key = profile_intern(p, "thread"),
				     .str = profile_intern(p, "100") };
	t100[1] = (struct pf_label){ .key = profile_intern(p, "thread_name"),
				     .str = profile_intern(p, "demo") };
	t101[0] = (struct pf_label){ .key = t100[0].key,
				     .str = profile_intern(p, "101") };
	t101[1] = (struct pf_label){ .key = t100[1].key,
				     .str = profile_intern(p, "worker") };
	for (int i = 0; i < 5; i++)
		MUST(profile_add_sample(p, spin, 2, t100, 2, v));
	for (int i = 0; i < 3; i++)
		MUST(profile_add_sample(p, inl, 2, t100, 2, v));
	for (int i = 0; i < 2; i++)
		MUST(profile_add_sample(p, comp, 2, t101, 2, v));
	return p;
}

/*
 * Many of everything, with numeric labels, locations without mapping or
 * lines, samples without locations.
 */
static struct profile *random_profile(int nsamples)
{
	const int nmap = 4, nfn = 300, nloc = 800;
	struct profile *p;
	char buf[64];
	uint64_t id;

	MUST(profile_new(&p));
	MUST(profile_add_sample_type(p, "alloc_objects", "count"));
	MUST(profile_add_sample_type(p, "alloc_space", "bytes"));
	MUST(profile_add_sample_type(p, "inuse_objects", "count"));
	MUST(profile_set_period(p, "space", "bytes", 524288));
	profile_header(p)->default_sample_type =
		profile_intern(p, "alloc_space");
	profile_header(p)->time_nanos = -5;
	for (int i = 0; i < 3; i++) {
		snprintf(buf, sizeof(buf), "comment %d", i);
		MUST(profile_add_comment(p, buf));
	}
	for (int i = 0; i < nmap; i++) {
		struct pf_mapping m = { .start = rnd(), .limit = rnd(),
					.offset = rnd(),
					.has_functions = i & 1,
					.has_inline_frames = i & 2 };

		snprintf(buf, sizeof(buf), "/lib/lib%d.so", i);
		m.filename = profile_intern(p, buf);
		m.build_id = profile_intern(p, i ? "beef" : "");
		MUST(profile_add_mapping(p, &m, &id));
	}
	for (int i = 0; i < nfn; i++) {
		snprintf(buf, sizeof(buf), "fn_%d", i);
		MUST(profile_add_function(p, buf, i % 3 ? NULL : "_Zsys",
					  i % 5 ? "f.c" : NULL,
					  (int64_t)rnd() >> 40, &id));
	}
	for (int i = 0; i < nloc; i++) {
		struct pf_line lines[4];
		uint32_t n = rnd() % 5;

		for (uint32_t k = 0; k < n; k++)
			lines[k] = (struct pf_line){ 1 + rnd() % nfn,
						     (int64_t)rnd() >> 50 };
		MUST(profile_add_location(p, rnd() % (nmap + 1), rnd(), lines,
					  n, &id));
	}
	for (int i = 0; i < nsamples; i++) {
		uint64_t locs[64];
		struct pf_label labels[3];
		uint32_t nl = rnd() % 64, nlab = rnd() % 4;
		int64_t v[3] = { 1, (int64_t)(rnd() % 100000) - 50, 0 };

		for (uint32_t k = 0; k < nl; k++)
			locs[k] = 1 + rnd() % nloc;
		for (uint32_t k = 0; k < nlab; k++) {
			labels[k] = (struct pf_label){
				.key = profile_intern(p, k ? "bytes" : "tag"),
				.num = k ? (int64_t)rnd() : 0,
			};
			snprintf(buf, sizeof(buf), "v%d", (int)(rnd() % 50));
			if (!k)
				labels[k].str = profile_intern(p, buf);
			else if (k == 2)
				labels[k].num_unit = profile_intern(p, "bytes");
		}
		MUST(profile_add_sample(p, locs, nl, labels, nlab, v));
	}
	/* A few repeats, merged. */
	for (int i = 0; i < 10; i++) {
		const struct pf_sample *s =
			profile_sample(p, rnd() % profile_nsamples(p));
		uint64_t locs[64];
		struct pf_label labels[3];
		int64_t v[3] = { 1, 2, 3 };

		memcpy(locs, s->loc_ids, s->nlocs * sizeof(*locs));
		memcpy(labels, s->labels, s->nlabels * sizeof(*labels));
		MUST(profile_add_sample(p, locs, s->nlocs, labels, s->nlabels,
					v));
	}
	return p;
}

static bool same_bytes(const uint8_t *a, size_t na, const uint8_t *b,
		       size_t nb)
{
	return na == nb && !memcmp(a, b, na);
}

/* Field by field; indices compared as numbers, so tables must agree. */
static bool profiles_equal(const struct profile *a, const struct profile *b)
{
	const struct pf_header *ha = profile_header_const(a);
	const struct pf_header *hb = profile_header_const(b);
	size_t nt = profile_nsample_types(a);

	if (profile_nstrings(a) != profile_nstrings(b) ||
	    nt != profile_nsample_types(b) ||
	    profile_ncomments(a) != profile_ncomments(b) ||
	    profile_nsamples(a) != profile_nsamples(b) ||
	    profile_nmappings(a) != profile_nmappings(b) ||
	    profile_nlocations(a) != profile_nlocations(b) ||
	    profile_nfunctions(a) != profile_nfunctions(b))
		return false;
	for (size_t i = 0; i < profile_nstrings(a); i++)
		if (strcmp(profile_str(a, i), profile_str(b, i)))
			return false;
	if (ha->period_type.type != hb->period_type.type ||
	    ha->period_type.unit != hb->period_type.unit ||
	    ha->period != hb->period || ha->time_nanos != hb->time_nanos ||
	    ha->duration_nanos != hb->duration_nanos ||
	    ha->default_sample_type != hb->default_sample_type)
		return false;
	for (size_t i = 0; i < nt; i++)
		if (memcmp(profile_sample_type(a, i), profile_sample_type(b, i),
			   sizeof(struct pf_value_type)))
			return false;
	for (size_t i = 0; i < profile_ncomments(a); i++)
		if (profile_comment(a, i) != profile_comment(b, i))
			return false;
	for (uint64_t id = 1; id <= profile_nmappings(a); id++) {
		const struct pf_mapping *x = profile_mapping(a, id);
		const struct pf_mapping *y = profile_mapping(b, id);

		if (x->start != y->start || x->limit != y->limit ||
		    x->offset != y->offset || x->filename != y->filename ||
		    x->build_id != y->build_id ||
		    x->has_functions != y->has_functions ||
		    x->has_filenames != y->has_filenames ||
		    x->has_line_numbers != y->has_line_numbers ||
		    x->has_inline_frames != y->has_inline_frames)
			return false;
	}
	for (uint64_t id = 1; id <= profile_nfunctions(a); id++)
		if (memcmp(profile_function(a, id), profile_function(b, id),
			   sizeof(struct pf_function)))
			return false;
	for (uint64_t id = 1; id <= profile_nlocations(a); id++) {
		const struct pf_location *x = profile_location(a, id);
		const struct pf_location *y = profile_location(b, id);

		if (x->mapping_id != y->mapping_id ||
		    x->address != y->address || x->nlines != y->nlines ||
		    (x->nlines && memcmp(x->lines, y->lines,
					 x->nlines * sizeof(*x->lines))))
			return false;
	}
	for (size_t i = 0; i < profile_nsamples(a); i++) {
		const struct pf_sample *x = profile_sample(a, i);
		const struct pf_sample *y = profile_sample(b, i);

		if (x->nlocs != y->nlocs || x->nlabels != y->nlabels ||
		    memcmp(x->values, y->values, nt * sizeof(*x->values)) ||
		    (x->nlocs && memcmp(x->loc_ids, y->loc_ids,
					x->nlocs * sizeof(*x->loc_ids))) ||
		    (x->nlabels && memcmp(x->labels, y->labels,
					  x->nlabels * sizeof(*x->labels))))
			return false;
	}
	return true;
}

/* encode -> decode -> encode, raw and gzipped, must give the same bytes. */
static void check_roundtrip(const struct profile *p, const char *what)
{
	uint8_t *raw = NULL, *gz = NULL, *again = NULL, *again_gz = NULL;
	size_t raw_len = 0, gz_len = 0, again_len = 0, again_gz_len = 0;
	struct profile *q = NULL, *r = NULL;
	int ret;

	ret = pprof_encode(p, false, &raw, &raw_len);
	CHECK(!ret, "%s: encode: %d", what, ret);
	ret = pprof_encode(p, true, &gz, &gz_len);
	CHECK(!ret, "%s: encode gzip: %d", what, ret);
	if (!raw || !gz)
		goto out;
	CHECK(gz_len > 18 && gz[0] == 0x1f && gz[1] == 0x8b && gz[2] == 8,
	      "%s: no gzip header", what);
	ret = pprof_decode(raw, raw_len, &q);
	CHECK(!ret, "%s: decode: %d", what, ret);
	ret = pprof_decode(gz, gz_len, &r);
	CHECK(!ret, "%s: decode gzip: %d", what, ret);
	if (!q || !r)
		goto out;
	CHECK(assert_sane_profile(q, what), "decoded");
	CHECK(profiles_equal(p, q), "%s: decoded profile differs", what);
	CHECK(profiles_equal(q, r), "%s: gzip decodes differently", what);
	ret = pprof_encode(q, false, &again, &again_len);
	CHECK(!ret && same_bytes(raw, raw_len, again, again_len),
	      "%s: re-encoding differs (%zu vs %zu bytes)", what, raw_len,
	      again_len);
	ret = pprof_encode(r, true, &again_gz, &again_gz_len);
	CHECK(!ret && same_bytes(gz, gz_len, again_gz, again_gz_len),
	      "%s: gzip re-encoding differs", what);
out:
	profile_free(q);
	profile_free(r);
	free(raw);
	free(gz);
	free(again);
	free(again_gz);
}

static void test_roundtrip(void)
{
	struct profile *p = cpu_profile(), *e = NULL;

	SANE(p);
	CHECK(profile_nsamples(p) == 3 && profile_total(p, 0) == 10 &&
	      profile_total(p, 1) == 10 * PERIOD, "cpu profile");
	check_roundtrip(p, "cpu");
	profile_free(p);

	MUST(profile_new(&e));
	check_roundtrip(e, "empty");
	profile_free(e);

	p = random_profile(20000);
	SANE(p);
	check_roundtrip(p, "random");
	profile_free(p);
}

/* Every field of the CPU profile survives, decoded through gzip. */
static void test_decode_fields(void)
{
	struct profile *p = cpu_profile(), *q = NULL;
	const struct pf_location *l;
	const struct pf_sample *s;
	uint8_t *buf = NULL;
	size_t len = 0;

	MUST(pprof_encode(p, true, &buf, &len));
	MUST(pprof_decode(buf, len, &q));
	l = profile_location(q, L_INLINED);
	CHECK(l && l->address == 0x401200 && l->mapping_id == 1 &&
	      l->nlines == 2 && l->lines[0].line == 7 &&
	      !strcmp(profile_str(q, profile_function(q,
			l->lines[0].function_id)->name), "hash_step") &&
	      !strcmp(profile_str(q, profile_function(q,
			l->lines[1].function_id)->name), "compute"),
	      "inlined location");
	s = profile_sample(q, 1);
	CHECK(s && s->nlocs == 2 && s->loc_ids[0] == L_INLINED &&
	      s->values[0] == 3 && s->values[1] == 3 * PERIOD &&
	      s->nlabels == 2 &&
	      !strcmp(profile_str(q, s->labels[1].key), "thread_name") &&
	      !strcmp(profile_str(q, s->labels[1].str), "demo"), "sample 1");
	CHECK(profile_header_const(q)->period == PERIOD &&
	      profile_header_const(q)->duration_nanos == 30000000000ll &&
	      !strcmp(profile_str(q, profile_comment(q, 0)),
		      "proffs test profile"), "header");
	CHECK(!strcmp(profile_str(q, profile_mapping(q, 1)->build_id),
		      BUILD_ID) &&
	      profile_mapping(q, 1)->has_inline_frames, "mapping");
	profile_free(q);
	free(buf);
	profile_free(p);
}

static void test_encode_rejects(void)
{
	struct profile *p = cpu_profile();
	struct pf_header *h = profile_header(p);
	uint8_t sentinel, *buf = &sentinel;
	size_t len = 12345, n = profile_nstrings(p);
	const struct pf_header saved = *h;
	struct {
		const char *what;
		int64_t *field;
		int64_t value;
	} bad[] = {
		{ "default_sample_type", &h->default_sample_type, n },
		{ "default_sample_type", &h->default_sample_type, -1 },
		{ "period type", &h->period_type.type, n + 100 },
		{ "period unit", &h->period_type.unit, -7 },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		*bad[i].field = bad[i].value;
		for (int gz = 0; gz < 2; gz++) {
			int ret = pprof_encode(p, gz, &buf, &len);

			CHECK(ret == -EINVAL, "%s: %d", bad[i].what, ret);
		}
		*h = saved;
	}
	CHECK(buf == &sentinel && len == 12345, "outputs touched on failure");
	CHECK(!pprof_encode(p, false, &buf, &len) && buf != &sentinel,
	      "restored profile");
	if (buf != &sentinel)
		free(buf);
	profile_free(p);
}

/*
 * Decode must refuse or produce a sane profile that encodes, and decoding
 * its encoding must give the same bytes again.
 */
static int decode_checked(const uint8_t *buf, size_t len, const char *what)
{
	struct profile *p = NULL, *q = NULL;
	uint8_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	int ret = pprof_decode(buf, len, &p);

	if (ret) {
		CHECK(ret == -EINVAL || ret == -ENOMEM, "%s: %d", what, ret);
		CHECK(!p, "%s: out parameter set on failure", what);
		return ret;
	}
	CHECK(assert_sane_profile(p, what), "decoded");
	CHECK(!pprof_encode(p, false, &a, &na), "%s: cannot re-encode", what);
	CHECK(a && !pprof_decode(a, na, &q), "%s: cannot decode own", what);
	CHECK(q && !pprof_encode(q, false, &b, &nb) &&
	      same_bytes(a, na, b, nb), "%s: not a fixed point", what);
	profile_free(p);
	profile_free(q);
	free(a);
	free(b);
	return 0;
}

static void test_truncated(void)
{
	struct profile *p = cpu_profile();
	uint8_t *raw, *gz;
	size_t raw_len, gz_len;
	int ok = 0;

	MUST(pprof_encode(p, false, &raw, &raw_len));
	MUST(pprof_encode(p, true, &gz, &gz_len));
	for (size_t n = 0; n < raw_len; n++) {
		/* A copy of exactly n bytes, so that reads past it are
		 * caught by the sanitizers. */
		uint8_t *cut = malloc(n ? n : 1);

		memcpy(cut, raw, n);
		ok += !decode_checked(cut, n, "raw prefix");
		free(cut);
	}
	/* default_sample_type is the last field: cutting into it breaks a
	 * varint, and without the string table nothing can be resolved. */
	CHECK(decode_checked(raw, raw_len - 1, "raw - 1") == -EINVAL, "-1");
	CHECK(decode_checked(raw, 0, "empty") == -EINVAL, "empty");
	printf("test_truncated: %d of %zu raw prefixes decode\n", ok, raw_len);
	for (size_t n = 0; n < gz_len; n++) {
		uint8_t *cut = malloc(n ? n : 1);

		memcpy(cut, gz, n);
		CHECK(decode_checked(cut, n, "gzip prefix") == -EINVAL,
		      "gzip prefix of %zu bytes decoded", n);
		free(cut);
	}
	free(raw);
	free(gz);
	profile_free(p);
}

/* Random corruption: flipped bytes, raw and (recompressed) gzip. */
static void test_corrupt(void)
{
	struct profile *p = cpu_profile();
	uint8_t *raw, *copy;
	size_t raw_len;
	int ok = 0, iters = 30000;

	MUST(pprof_encode(p, false, &raw, &raw_len));
	copy = malloc(raw_len);
	for (int i = 0; i < iters; i++) {
		int nflips = 1 + rnd() % 4;

		memcpy(copy, raw, raw_len);
		for (int k = 0; k < nflips; k++) {
			size_t at = rnd() % raw_len;

			copy[at] = rnd() % 3 ? (uint8_t)rnd() : copy[at] ^ 1;
		}
		ok += !decode_checked(copy, raw_len, "corrupt");
	}
	printf("test_corrupt: %d of %d corrupted buffers decode\n", ok, iters);
	free(copy);
	free(raw);
	profile_free(p);
}

/* Unpack a valid encoding, break one rule, repack, expect -EINVAL. */
typedef Perftools__Profiles__Profile PbProfile;

static void expect(PbProfile *pb, int expected, const char *what)
{
	size_t len = perftools__profiles__profile__get_packed_size(pb);
	uint8_t *buf = malloc(len + 1);
	struct profile *q = NULL;
	int ret;

	perftools__profiles__profile__pack(pb, buf);
	ret = pprof_decode(buf, len, &q);
	CHECK(ret == expected, "%s: %d", what, ret);
	profile_free(q);
	free(buf);
}

#define BREAK(field, value, what) do {					\
		__typeof__(field) saved_ = (field);			\
		(field) = (value);					\
		expect(pb, -EINVAL, what);				\
		(field) = saved_;					\
	} while (0)

static void test_rules(void)
{
	struct profile *p = cpu_profile(), *q = NULL;
	int64_t big = 1 << 20;
	char x[] = "x";
	PbProfile *pb;
	uint8_t *raw;
	size_t raw_len;

	MUST(pprof_encode(p, false, &raw, &raw_len));
	pb = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	if (!pb)
		die("unpack", -EINVAL);
	/* Unbroken it decodes: each failure below is its rule's. */
	expect(pb, 0, "unbroken");
	BREAK(pb->string_table[0], x, "string_table[0] != \"\"");
	BREAK(pb->n_string_table, 0, "no string table");
	BREAK(pb->n_string_table, 10, "strings cut short");
	BREAK(pb->sample_type[1]->unit, big, "sample type unit");
	BREAK(pb->sample_type[0]->type, -1, "sample type negative");
	BREAK(pb->n_sample_type, 1, "value count != sample types");
	BREAK(pb->sample[0]->n_value, 1, "one value short");
	BREAK(pb->sample[0]->location_id[0], 0, "sample location 0");
	BREAK(pb->sample[2]->location_id[1], 5, "sample location 5");
	BREAK(pb->sample[1]->label[0]->key, big, "label key");
	BREAK(pb->sample[1]->label[1]->str, -3, "label str");
	BREAK(pb->sample[1]->label[1]->num_unit, big, "label unit");
	BREAK(pb->mapping[0]->id, 0, "mapping id 0");
	BREAK(pb->mapping[0]->id, 2, "mapping id out of 1..n");
	BREAK(pb->mapping[0]->filename, big, "mapping filename");
	BREAK(pb->mapping[0]->build_id, -1, "mapping build id");
	BREAK(pb->location[0]->id, 0, "location id 0");
	BREAK(pb->location[0]->id, 2, "location id duplicate");
	BREAK(pb->location[3]->id, 77, "location id huge");
	BREAK(pb->location[1]->mapping_id, 2, "location mapping");
	BREAK(pb->location[1]->line[1]->function_id, 0, "line function 0");
	BREAK(pb->location[1]->line[0]->function_id, 5, "line function 5");
	BREAK(pb->function[0]->id, 0, "function id 0");
	BREAK(pb->function[2]->id, 1, "function id duplicate");
	BREAK(pb->function[1]->name, big, "function name");
	BREAK(pb->function[1]->system_name, -2, "function system name");
	BREAK(pb->function[3]->filename, big, "function filename");
	BREAK(pb->period_type->type, big, "period type");
	BREAK(pb->comment[0], big, "comment");
	BREAK(pb->default_sample_type, big, "default sample type");
	perftools__profiles__profile__free_unpacked(pb, NULL);

	/* Not protobuf at all, and gzip of garbage. */
	CHECK(pprof_decode((const uint8_t *)"hello, world", 12, &q) == -EINVAL,
	      "text");
	CHECK(pprof_decode((const uint8_t *)"\x1f\x8b\x08\0\0\0\0\0\0\xff"
			   "garbage", 17, &q) == -EINVAL, "gzip garbage");
	CHECK(!q, "out parameter set");
	free(raw);
	profile_free(p);
}

/* 300 MiB of zeros in ~300 KiB of gzip: refused, not inflated. */
static void test_bomb(void)
{
	static uint8_t zeros[1 << 16];
	z_stream z = { 0 };
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	struct profile *q = NULL;

	MUST(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY));
	z.next_out = out;
	z.avail_out = cap;
	for (int i = 0; i < 300 * 16; i++) {
		z.next_in = zeros;
		z.avail_in = sizeof(zeros);
		MUST(deflate(&z, Z_NO_FLUSH));
	}
	MUST(deflate(&z, Z_FINISH) != Z_STREAM_END);
	CHECK(pprof_decode(out, z.total_out, &q) == -EINVAL,
	      "bomb of %lu bytes accepted", z.total_out);
	deflateEnd(&z);
	free(out);
}

/* Run cmd, return its stdout (malloc'ed) or NULL; *status its status. */
static char *run(const char *cmd, int *status)
{
	size_t cap = 1 << 16, n = 0;
	char *out = malloc(cap);
	FILE *f = popen(cmd, "r");

	if (!f) {
		free(out);
		return NULL;
	}
	while (!feof(f) && !ferror(f)) {
		if (n + 4096 > cap)
			out = realloc(out, cap *= 2);
		n += fread(out + n, 1, cap - n - 1, f);
	}
	out[n] = '\0';
	*status = pclose(f);
	return out;
}

/* Does out have a line containing every one of the words? */
static bool has_line(const char *out, const char *const *words)
{
	while (*out) {
		const char *end = strchr(out, '\n');
		size_t len = end ? (size_t)(end - out) : strlen(out);
		char line[512];
		bool all = true;

		snprintf(line, sizeof(line), "%.*s", (int)len, out);
		for (int i = 0; words[i]; i++)
			all &= strstr(line, words[i]) != NULL;
		if (all)
			return true;
		out += len + (end != NULL);
	}
	return false;
}

#define HAS_LINE(out, ...) \
	has_line((out), (const char *const[]){ __VA_ARGS__, NULL })

static void test_go_pprof(void)
{
	const char *dir = getenv("TEST_BUILD_DIR");
	struct profile *p = cpu_profile();
	char path[1024], cmd[2048];
	char gocache[] = "/tmp/test-pprof-gocache.XXXXXX";
	uint8_t *gz;
	size_t gz_len;
	char *out;
	int status = -1;
	FILE *f;

	MUST(pprof_encode(p, true, &gz, &gz_len));
	snprintf(path, sizeof(path), "%s/test-pprof.pb.gz", dir ? dir : ".");
	f = fopen(path, "wb");
	CHECK(f && fwrite(gz, 1, gz_len, f) == gz_len && !fclose(f),
	      "writing %s", path);
	free(gz);
	profile_free(p);
	if (access("/usr/bin/go", X_OK)) {
		const char *ci = getenv("CI");

		CHECK(!(ci && !strcmp(ci, "true")), "no /usr/bin/go in CI");
		printf("test_go_pprof: SKIP: no /usr/bin/go\n");
		return;
	}
	/*
	 * go wants a writable HOME and build cache: give it fresh ones, so
	 * a read-only or shared HOME (CI, parallel runs) cannot fail us.
	 */
	CHECK(mkdtemp(gocache), "mkdtemp %s", gocache);
	setenv("HOME", "/tmp", 1);
	setenv("GOCACHE", gocache, 1);

	snprintf(cmd, sizeof(cmd), "/usr/bin/go tool pprof -raw %s 2>&1",
		 path);
	out = run(cmd, &status);
	CHECK(out && status == 0, "%s: status %d: %s", cmd, status,
	      out ? out : "(no output)");
	if (out) {
		CHECK(HAS_LINE(out, "PeriodType: cpu nanoseconds"), "%s", out);
		CHECK(HAS_LINE(out, "Period: 10000000"), "%s", out);
		CHECK(HAS_LINE(out, "samples/count cpu/nanoseconds"), "%s",
		      out);
		/* pprof renumbers locations: match samples by value. */
		CHECK(HAS_LINE(out, " 5   50000000: "), "%s", out);
		CHECK(HAS_LINE(out, " 3   30000000: "), "%s", out);
		CHECK(HAS_LINE(out, " 2   20000000: "), "%s", out);
		CHECK(HAS_LINE(out, "thread:[100]"), "%s", out);
		CHECK(HAS_LINE(out, "thread_name:[worker]"), "%s", out);
		CHECK(HAS_LINE(out, "0x401100", "M=1", "spin", "demo.c:42"),
		      "%s", out);
		CHECK(HAS_LINE(out, "0x401200", "M=1", "hash_step",
			       "hash.h:7"), "%s", out);
		CHECK(HAS_LINE(out, "compute demo.c:25 s=20"), "%s", out);
		CHECK(HAS_LINE(out, "0x401300 M=1 main demo.c:12 s=10"), "%s",
		      out);
		CHECK(HAS_LINE(out, "/usr/bin/demo",
			       BUILD_ID),
		      "%s", out);
		CHECK(HAS_LINE(out, "proffs test profile"), "%s", out);
	}
	free(out);

	snprintf(cmd, sizeof(cmd), "/usr/bin/go tool pprof -top %s 2>&1",
		 path);
	out = run(cmd, &status);
	CHECK(out && status == 0, "%s: status %d: %s", cmd, status,
	      out ? out : "(no output)");
	if (out) {
		CHECK(HAS_LINE(out, "Type: cpu"), "%s", out);
		CHECK(HAS_LINE(out, "Duration: 30s", "Total samples = 100ms"),
		      "%s", out);
		CHECK(HAS_LINE(out, "accounting for 100ms, 100% of 100ms"),
		      "%s", out);
		CHECK(HAS_LINE(out, "50ms", "50.00%", "spin"), "%s", out);
		CHECK(HAS_LINE(out, "30ms", "30.00%", "hash_step (inline)"),
		      "%s", out);
		CHECK(HAS_LINE(out, "20ms 20.00%", "50ms 50.00%  compute"),
		      "%s", out);
		CHECK(HAS_LINE(out, "0     0%", "100%", "100ms", "main"),
		      "%s", out);
	}
	free(out);
	/* -tagfocus selects by thread label. */
	snprintf(cmd, sizeof(cmd), "/usr/bin/go tool pprof -top "
		 "-tagfocus=thread_name=worker %s 2>&1", path);
	out = run(cmd, &status);
	CHECK(out && status == 0, "%s: status %d: %s", cmd, status,
	      out ? out : "(no output)");
	if (out)
		CHECK(HAS_LINE(out, "accounting for 20ms, 20.00% of 100ms"),
		      "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", gocache);
	free(run(cmd, &status));
	CHECK(status == 0 && access(gocache, F_OK), "removing %s", gocache);
}

int main(void)
{
	test_roundtrip();
	test_decode_fields();
	test_encode_rejects();
	test_truncated();
	test_corrupt();
	test_rules();
	test_bomb();
	test_go_pprof();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-pprof: all checks passed\n");
	return 0;
}
