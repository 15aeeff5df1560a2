// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * name.c - the file-name grammar: the words of the kinds (their rows in
 * kinds.c), two tables (formats, query parameters) and a left-to-right
 * scan.
 *
 * Decisions the spec leaves open:
 *   - The query may stand before or after the format: Go's URL habit gives
 *     "profile?seconds=5.pb.gz", a browser's gives "heap.svg?sample=x".
 *     Query first, the format is only a known suffix ".pb.gz", ".pb", ...
 *     (so "heap?sample=a.b" is ENOENT, not format "b"); format first, it
 *     runs from the first '.' to the '?'.
 *   - Windows compare in milliseconds: "cpu_1500ms?seconds=1" is EINVAL,
 *     "cpu_1000ms?seconds=1" is fine (window 1000 ms).
 *   - Numbers are plain decimal digits, leading zeros allowed ("cpu_030s"
 *     is "cpu_30s"); a sign, a space or an empty number makes the name
 *     ungrammatical (ENOENT), an overflow makes it EINVAL.
 *   - Windows above one year are EINVAL, as an overflow guard (the daemon's
 *     own limit is far lower; hz above 1000000 likewise).
 *   - kernel= takes 0 or 1 (leading zeros allowed, like every number);
 *     another number is EINVAL.
 *   - A parameter given twice is EINVAL even with equal values; a duration
 *     and seconds= with equal values are fine.
 *   - sample= outside [A-Za-z0-9_]+ is ENOENT (not a WORD); a WORD longer
 *     than PROFFS_SAMPLE_MAX - 1 is EINVAL (grammatical, cannot be held).
 *   - Parameters that do not apply (hz= on heap, rate= on cpu, debug= on
 *     .pb.gz) are accepted and left for the caller to ignore, as Go's
 *     net/http/pprof does.
 *   - Grammar errors win over value errors: "cpu_0s.xyz" is ENOENT.
 *   - On -EINVAL, req->kind and req->format are still filled in: the
 *     daemon uses them to decide whether the name exists at all.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "kinds.h"
#include "name.h"

#define NAME_MAX_LEN 255
#define HZ_LIMIT 1000000u
#define WINDOW_LIMIT_MS (365ull * 24 * 3600 * 1000)

/* Longer suffixes first: "pb.gz" must win over "pb". */
static const char *const formats[PROFFS_FMT__COUNT] = {
	[PROFFS_FMT_PB_GZ] = "pb.gz",
	[PROFFS_FMT_PB] = "pb",
	[PROFFS_FMT_SVG] = "svg",
	[PROFFS_FMT_TXT] = "txt",
	[PROFFS_FMT_FOLDED] = "folded",
	[PROFFS_FMT_JSON] = "json",
};

/* What parsing has seen so far, beyond the request itself. */
struct parse_state {
	struct proffs_request *req;
	bool has_duration;	/* _Ns / _Nms */
	uint64_t duration_ms;
	bool has_seconds;
	uint64_t seconds_ms;
	unsigned seen;		/* bit per query parameter */
};

/* Decimal digits of s[0..len): 0, -ENOENT (not digits), -EINVAL (too
 * big). */
static int parse_uint(const char *s, size_t len, uint64_t max,
		      uint64_t *out)
{
	uint64_t v = 0;

	if (!len)
		return -ENOENT;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -ENOENT;
		if (v > (max - (s[i] - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

typedef int (*param_fn)(struct parse_state *st, const char *v, size_t len);

static int param_seconds(struct parse_state *st, const char *v, size_t len)
{
	uint64_t s;
	int ret = parse_uint(v, len, WINDOW_LIMIT_MS / 1000, &s);

	if (ret)
		return ret;
	st->has_seconds = true;
	st->seconds_ms = s * 1000;
	return s ? 0 : -EINVAL;
}

static int param_hz(struct parse_state *st, const char *v, size_t len)
{
	uint64_t hz;
	int ret = parse_uint(v, len, UINT64_MAX, &hz);

	if (ret)
		return ret;
	if (!hz || hz > HZ_LIMIT)
		return -EINVAL;
	st->req->hz = hz;
	return 0;
}

static int param_rate(struct parse_state *st, const char *v, size_t len)
{
	uint64_t rate;
	int ret = parse_uint(v, len, UINT64_MAX, &rate);

	if (ret)
		return ret;
	if (!rate || rate > UINT32_MAX)
		return -EINVAL;
	st->req->rate = rate;
	return 0;
}

/* A number up to max: grammatical past it, but EINVAL. */
static int parse_at_most(const char *v, size_t len, uint64_t max,
			 uint64_t *out)
{
	int ret = parse_uint(v, len, UINT64_MAX, out);

	return ret ? ret : *out > max ? -EINVAL : 0;
}

static int param_debug(struct parse_state *st, const char *v, size_t len)
{
	uint64_t d;
	int ret = parse_at_most(v, len, 2, &d);

	if (!ret)
		st->req->debug = d;
	return ret;
}

static int param_kernel(struct parse_state *st, const char *v, size_t len)
{
	uint64_t k;
	int ret = parse_at_most(v, len, 1, &k);

	if (!ret)
		st->req->kernel = k;
	return ret;
}

static bool word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

static int param_sample(struct parse_state *st, const char *v, size_t len)
{
	if (!len)
		return -ENOENT;
	for (size_t i = 0; i < len; i++)
		if (!word_char(v[i]))
			return -ENOENT;
	if (len >= PROFFS_SAMPLE_MAX)
		return -EINVAL;
	memcpy(st->req->sample, v, len);
	st->req->sample[len] = '\0';
	return 0;
}

/* base=prev | base=lastNs */
static int param_base(struct parse_state *st, const char *v, size_t len)
{
	uint64_t n;
	int ret;

	if (len == 4 && !memcmp(v, "prev", 4)) {
		st->req->base = PROFFS_BASE_PREV;
		return 0;
	}
	if (len < 6 || memcmp(v, "last", 4) || v[len - 1] != 's')
		return -ENOENT;
	ret = parse_uint(v + 4, len - 5, WINDOW_LIMIT_MS / 1000, &n);
	if (ret)
		return ret;
	st->req->base = PROFFS_BASE_LAST;
	st->req->base_ms = n * 1000;
	return n ? 0 : -EINVAL;
}

static const struct {
	const char *key;
	param_fn parse;
} params[] = {
	{ "seconds", param_seconds },
	{ "hz", param_hz },
	{ "rate", param_rate },
	{ "debug", param_debug },
	{ "sample", param_sample },
	{ "kernel", param_kernel },
	{ "base", param_base },
};

#define NPARAMS (sizeof(params) / sizeof(params[0]))

/* One "key=value" of length len. */
static int parse_param(struct parse_state *st, const char *s, size_t len)
{
	const char *eq = memchr(s, '=', len);
	size_t klen;

	if (!eq)
		return -ENOENT;
	klen = eq - s;
	for (size_t i = 0; i < NPARAMS; i++) {
		if (strlen(params[i].key) != klen ||
		    memcmp(params[i].key, s, klen))
			continue;
		if (st->seen & (1u << i)) {
			/* Still check the value is grammatical. */
			int ret = params[i].parse(st, eq + 1,
						  len - klen - 1);

			return ret == -ENOENT ? ret : -EINVAL;
		}
		st->seen |= 1u << i;
		return params[i].parse(st, eq + 1, len - klen - 1);
	}
	return -ENOENT;
}

/*
 * The query, from after '?' to end (exclusive). Grammar errors win over
 * value errors: a name is ENOENT if any part is ungrammatical.
 */
static int parse_query(struct parse_state *st, const char *s,
		       const char *end)
{
	int verdict = 0;

	for (;;) {
		const char *amp = memchr(s, '&', end - s);
		const char *stop = amp ? amp : end;
		int ret = parse_param(st, s, stop - s);

		if (ret == -ENOENT)
			return ret;
		if (ret && !verdict)
			verdict = ret;
		if (!amp)
			return verdict;
		s = amp + 1;
	}
}

/* "_30s" / "_500ms" / "_last30s" at s (s[0] == '_'), up to end. */
static int parse_duration(struct parse_state *st, const char *s,
			  const char *end)
{
	const char *unit;
	uint64_t v, scale;
	bool last = end - s > 5 && !memcmp(s + 1, "last", 4);
	int ret;

	if (last)
		s += 4;		/* s + 1 is the number */
	unit = s + 1;
	while (unit < end && *unit >= '0' && *unit <= '9')
		unit++;
	if ((size_t)(end - unit) == 1 && unit[0] == 's')
		scale = 1000;
	else if (!last && (size_t)(end - unit) == 2 && !memcmp(unit, "ms", 2))
		scale = 1;
	else
		return -ENOENT;	/* "last" counts seconds, the recorder's unit */
	ret = parse_uint(s + 1, unit - s - 1, WINDOW_LIMIT_MS / scale, &v);
	if (ret)
		return ret;
	st->req->last = last;
	st->has_duration = true;
	st->duration_ms = v * scale;
	return v ? 0 : -EINVAL;
}

/* The format word of s[0..len), or -ENOENT. */
static int match_format(const char *s, size_t len)
{
	for (int f = 0; f < PROFFS_FMT__COUNT; f++)
		if (strlen(formats[f]) == len && !memcmp(formats[f], s, len))
			return f;
	return -ENOENT;
}

/* The kind a word names, and the format of a name that gives none. */
static int match_kind(const char *s, size_t len, enum proffs_kind *kind,
		      enum proffs_format *format)
{
	const char *w;

	for (size_t i = 0; !kinds_word(i, &w, kind, format); i++)
		if (strlen(w) == len && !memcmp(w, s, len))
			return 0;
	return -ENOENT;
}

static void set_defaults(struct proffs_request *req)
{
	memset(req, 0, sizeof(*req));
	req->window_ms = PROFFS_DEFAULT_SECONDS * 1000ull;
	req->hz = PROFFS_DEFAULT_HZ;
	req->rate = PROFFS_DEFAULT_RATE;
	req->kernel = true;
}

/*
 * Split name into stem ("kind[_duration]"), query and format. The format
 * is the text after the first '.' outside the query; the query runs from
 * '?' to the format (query first) or to the end (format first).
 */
static void split(const char *name, const char **stem_end, const char **q,
		  const char **q_end, const char **fmt, const char **fmt_end)
{
	const char *end = name + strlen(name);
	const char *qm = strchr(name, '?');
	const char *dot = strchr(name, '.');

	*q = *q_end = *fmt = *fmt_end = NULL;
	if (qm && (!dot || qm < dot)) {
		/* kind[_d]?query[.format]: the format is a known suffix */
		*stem_end = qm;
		*q = qm + 1;
		*q_end = end;
		for (int f = 0; f < PROFFS_FMT__COUNT; f++) {
			size_t fl = strlen(formats[f]);

			if ((size_t)(end - *q) > fl + 1 &&
			    end[-(long)fl - 1] == '.' &&
			    !memcmp(end - fl, formats[f], fl)) {
				*q_end = end - fl - 1;
				*fmt = end - fl;
				*fmt_end = end;
				break;
			}
		}
		return;
	}
	*stem_end = dot ? dot : (qm ? qm : end);
	if (dot) {
		*fmt = dot + 1;
		*fmt_end = qm ? qm : end;
	}
	if (qm) {
		*q = qm + 1;
		*q_end = end;
	}
}

static int resolve_window(struct parse_state *st)
{
	struct proffs_request *req = st->req;

	if (st->has_duration && st->has_seconds &&
	    st->duration_ms != st->seconds_ms)
		return -EINVAL;
	if (st->has_duration || st->has_seconds) {
		req->has_window = true;
		req->window_ms = st->has_duration ? st->duration_ms
						  : st->seconds_ms;
	}
	return 0;
}

int name_parse(const char *name, struct proffs_request *req)
{
	struct parse_state st = { .req = req };
	const char *stem_end, *q, *q_end, *fmt, *fmt_end, *us;
	int verdict = 0, ret, f;

	if (!name || strnlen(name, NAME_MAX_LEN + 1) > NAME_MAX_LEN)
		return -ENOENT;
	set_defaults(req);
	split(name, &stem_end, &q, &q_end, &fmt, &fmt_end);
	us = memchr(name, '_', stem_end - name);
	if (match_kind(name, (us ? us : stem_end) - name, &req->kind,
		       &req->format))
		return -ENOENT;
	if (us) {
		ret = parse_duration(&st, us, stem_end);
		if (ret == -ENOENT)
			return ret;
		verdict = ret;
	}
	if (fmt) {
		f = match_format(fmt, fmt_end - fmt);
		if (f < 0)
			return -ENOENT;
		req->format = f;
	}
	if (q) {
		ret = parse_query(&st, q, q_end);
		if (ret == -ENOENT)
			return ret;
		if (!verdict)
			verdict = ret;
	}
	if (!verdict)
		verdict = resolve_window(&st);
	return verdict;
}

const char *name_kind_word(size_t i)
{
	enum proffs_format format;
	enum proffs_kind kind;
	const char *w;

	return kinds_word(i, &w, &kind, &format) ? NULL : w;
}

bool name_param_known(const char *key, size_t len)
{
	for (size_t i = 0; i < NPARAMS; i++)
		if (strlen(params[i].key) == len &&
		    !memcmp(params[i].key, key, len))
			return true;
	return false;
}

const char *name_kind_str(enum proffs_kind kind)
{
	const struct kind_ops *k = kinds_row(kind);

	return k ? k->name : "?";
}

const char *name_format_str(enum proffs_format fmt)
{
	return (unsigned)fmt < PROFFS_FMT__COUNT ? formats[fmt] : "?";
}

bool name_kind_kernel(enum proffs_kind kind)
{
	const struct kind_ops *k = kinds_row(kind);

	return k && k->frames != KIND_FRAMES_NONE;
}

bool name_kind_sleeping(enum proffs_kind kind)
{
	const struct kind_ops *k = kinds_row(kind);

	return k && k->frames == KIND_FRAMES_SLEEPING;
}
