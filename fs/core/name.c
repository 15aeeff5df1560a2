// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * name.c - the file-name grammar: the words of the kinds (their rows in
 * kinds.c), two tables (formats, query parameters) and a left-to-right
 * scan.
 *
 * Which errno (the mount and HTTP answer the same, README's table):
 *   - ENOENT: not a file proffs serves at all - the kind word or the
 *     format is not one of the grammar's (and the daemon's output table
 *     may still say no to a kind in a format: ops.c, http_parse.c).
 *   - EINVAL: the kind and format name a file proffs serves, and the rest
 *     of the name - duration or query - is wrong: no unit (cpu_5), a unit
 *     the grammar lacks (cpu_1h), an unknown parameter (cpu?foo=1), a
 *     value that is not a number (seconds=-1), zero or too big, a
 *     parameter given twice, two different windows.
 *   - The format is checked first: "cpu_0s.xyz" is ENOENT.
 * Every failure comes with one sentence for the user (name_parse_why()):
 * what is wrong and a name that would work.
 *
 * Decisions the spec leaves open:
 *   - The query may stand before or after the format: Go's URL habit gives
 *     "profile?seconds=5.pb.gz", a browser's gives "heap.svg?sample=x".
 *     Query first, the format is only a known suffix ".pb.gz", ".pb", ...
 *     (so "heap?sample=a.b" has a sample= that is not a word: EINVAL);
 *     format first, it runs from the first '.' to the '?'.
 *   - Windows compare in milliseconds: "cpu_1500ms?seconds=1" is EINVAL,
 *     "cpu_1000ms?seconds=1" is fine (window 1000 ms).
 *   - Numbers are plain decimal digits, leading zeros allowed ("cpu_030s"
 *     is "cpu_30s").
 *   - Windows above one year are EINVAL, as an overflow guard (the daemon's
 *     own limit is far lower; hz above 1000000 likewise).
 *   - kernel= takes 0 or 1 (leading zeros allowed, like every number).
 *   - A parameter given twice is EINVAL even with equal values; a duration
 *     and seconds= with equal values are fine.
 *   - sample= takes [A-Za-z0-9_]+, shorter than PROFFS_SAMPLE_MAX.
 *   - Parameters that do not apply (hz= on heap, rate= on cpu, debug= on
 *     .pb.gz) are accepted and left for the caller to ignore, as Go's
 *     net/http/pprof does.
 *   - On -EINVAL, req->kind and req->format are still filled in: the
 *     daemon uses them to decide whether the name exists at all.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "fs/core/kinds.h"
#include "fs/core/name.h"

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
	char *why;		/* the first reason, for the user */
	size_t whylen;
	const char *name;	/* the whole name, for suggestions */
	const char *kw;		/* its kind word (kwlen bytes) */
	size_t kwlen;
	const char *rest;	/* what follows kind[_duration] */
};

/* Say why the name fails, unless a reason is there already. */
__attribute__((format(printf, 2, 3)))
static void why(struct parse_state *st, const char *fmt, ...)
{
	va_list ap;

	if (!st->whylen || st->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(st->why, st->whylen, fmt, ap);
	va_end(ap);
}

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

/* A parameter's number, up to max; its reason when it is not one. */
static int param_uint(struct parse_state *st, const char *key, const char *v,
		      size_t len, uint64_t max, uint64_t *out)
{
	int ret = parse_uint(v, len, max, out);

	if (ret == -ENOENT)
		why(st, "%s=%.*s: %s= takes a whole number (digits only), "
		    "e.g. %.*s?%s=5", key, (int)len, v, key, (int)st->kwlen,
		    st->kw, key);
	else if (ret)
		why(st, "%s=%.*s: too big a number", key, (int)len, v);
	return ret;
}

static int param_seconds(struct parse_state *st, const char *v, size_t len)
{
	uint64_t s;
	int ret = param_uint(st, "seconds", v, len, WINDOW_LIMIT_MS / 1000, &s);

	if (ret)
		return ret;
	st->has_seconds = true;
	st->seconds_ms = s * 1000;
	if (!s)
		why(st, "seconds=0: a window must be longer than 0, e.g. "
		    "%.*s?seconds=5", (int)st->kwlen, st->kw);
	return s ? 0 : -EINVAL;
}

static int param_hz(struct parse_state *st, const char *v, size_t len)
{
	uint64_t hz;
	int ret = param_uint(st, "hz", v, len, UINT64_MAX, &hz);

	if (ret)
		return ret;
	if (!hz || hz > HZ_LIMIT) {
		why(st, "hz=%.*s: hz= takes 1 to %u samples a second, e.g. "
		    "hz=99", (int)len, v, HZ_LIMIT);
		return -EINVAL;
	}
	st->req->hz = hz;
	return 0;
}

static int param_rate(struct parse_state *st, const char *v, size_t len)
{
	uint64_t rate;
	int ret = param_uint(st, "rate", v, len, UINT64_MAX, &rate);

	if (ret)
		return ret;
	if (!rate || rate > UINT32_MAX) {
		why(st, "rate=%.*s: rate= takes 1 to %u bytes between samples "
		    "(1: every allocation)", (int)len, v, UINT32_MAX);
		return -EINVAL;
	}
	st->req->rate = rate;
	st->req->rate_named = true;
	return 0;
}

/* A number up to max: grammatical past it, but EINVAL. */
static int parse_at_most(struct parse_state *st, const char *key,
			 const char *v, size_t len, uint64_t max,
			 uint64_t *out)
{
	int ret = param_uint(st, key, v, len, UINT64_MAX, out);

	if (!ret && *out > max) {
		why(st, "%s=%.*s: %s= takes 0 to %llu", key, (int)len, v, key,
		    (unsigned long long)max);
		ret = -EINVAL;
	}
	return ret;
}

static int param_debug(struct parse_state *st, const char *v, size_t len)
{
	uint64_t d;
	int ret = parse_at_most(st, "debug", v, len, 2, &d);

	if (!ret)
		st->req->debug = d;
	return ret;
}

static int param_kernel(struct parse_state *st, const char *v, size_t len)
{
	uint64_t k;
	int ret = parse_at_most(st, "kernel", v, len, 1, &k);

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
	for (size_t i = 0; i < len; i++)
		if (!word_char(v[i]))
			len = 0;
	if (!len) {
		why(st, "sample= takes the name of a sample type (letters, "
		    "digits, _), e.g. heap.svg?sample=alloc_space");
		return -ENOENT;
	}
	if (len >= PROFFS_SAMPLE_MAX) {
		why(st, "sample=%.*s: no sample type is that long", (int)len,
		    v);
		return -EINVAL;
	}
	memcpy(st->req->sample, v, len);
	st->req->sample[len] = '\0';
	return 0;
}

/* base=prev | base=lastNs */
static int param_base(struct parse_state *st, const char *v, size_t len)
{
	uint64_t n = 0;
	int ret;

	if (len == 4 && !memcmp(v, "prev", 4)) {
		st->req->base = PROFFS_BASE_PREV;
		return 0;
	}
	if (len < 6 || memcmp(v, "last", 4) || v[len - 1] != 's' ||
	    (ret = parse_uint(v + 4, len - 5, WINDOW_LIMIT_MS / 1000, &n)) ==
	    -ENOENT) {
		why(st, "base=%.*s: base= is prev (the window before) or "
		    "lastNs (the recorder's last N seconds), e.g. "
		    "base=last60s", (int)len, v);
		return -ENOENT;
	}
	if (ret || !n) {
		why(st, "base=%.*s: a base window is 1 to %u s", (int)len, v,
		    (unsigned)(WINDOW_LIMIT_MS / 1000));
		return -EINVAL;
	}
	st->req->base = PROFFS_BASE_LAST;
	st->req->base_ms = n * 1000;
	return 0;
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

	if (!eq) {
		why(st, "'%.*s' in the query is not key=value: e.g. "
		    "%.*s?seconds=5", (int)len, s, (int)st->kwlen, st->kw);
		return -ENOENT;
	}
	klen = eq - s;
	for (size_t i = 0; i < NPARAMS; i++) {
		if (strlen(params[i].key) != klen ||
		    memcmp(params[i].key, s, klen))
			continue;
		if (st->seen & (1u << i)) {
			/* Still check the value is grammatical. */
			int ret = params[i].parse(st, eq + 1,
						  len - klen - 1);

			why(st, "%s= given twice: give it once", params[i].key);
			return ret == -ENOENT ? ret : -EINVAL;
		}
		st->seen |= 1u << i;
		return params[i].parse(st, eq + 1, len - klen - 1);
	}
	why(st, "unknown parameter '%.*s': the parameters are seconds, hz, "
	    "rate, debug, sample and kernel", (int)klen, s);
	return -ENOENT;
}

/* The query, from after '?' to end (exclusive). */
static int parse_query(struct parse_state *st, const char *s,
		       const char *end)
{
	int verdict = 0;

	for (;;) {
		const char *amp = memchr(s, '&', end - s);
		const char *stop = amp ? amp : end;
		int ret = parse_param(st, s, stop - s);

		if (ret && !verdict)
			verdict = ret;
		if (!amp)
			return verdict;
		s = amp + 1;
	}
}

/* A duration with a unit the grammar lacks: its seconds, or 0. */
static uint64_t other_unit_s(const char *unit, size_t len)
{
	static const struct {
		const char *word;
		uint64_t s;
	} units[] = { { "m", 60 }, { "min", 60 }, { "h", 3600 },
		      { "sec", 1 }, { "S", 1 }, { "d", 86400 } };

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i].word) == len &&
		    !memcmp(units[i].word, unit, len))
			return units[i].s;
	return 0;
}

/* "_30s" / "_500ms" / "_last30s" at s (s[0] == '_'), up to end. */
static int parse_duration(struct parse_state *st, const char *s,
			  const char *end)
{
	const char *unit;
	size_t ulen, nlen;
	uint64_t v, scale, other;
	bool last = end - s > 5 && !memcmp(s + 1, "last", 4);
	int ret;

	if (last)
		s += 4;		/* s + 1 is the number */
	unit = s + 1;
	while (unit < end && *unit >= '0' && *unit <= '9')
		unit++;
	ulen = end - unit;
	nlen = unit - s - 1;
	if (ulen == 1 && unit[0] == 's') {
		scale = 1000;
	} else if (!last && ulen == 2 && !memcmp(unit, "ms", 2)) {
		scale = 1;
	} else if (last && nlen) {
		/* the recorder keeps seconds */
		why(st, "a past window counts seconds: %.*s_last%.*ss%s",
		    (int)st->kwlen, st->kw, (int)nlen, s + 1, st->rest);
		return -ENOENT;
	} else {
		if (!nlen)
			why(st, "'%.*s' is not a duration: a number and s or "
			    "ms, e.g. %.*s_5s%s", (int)(end - s), s,
			    (int)st->kwlen, st->kw, st->rest);
		else if (!ulen)
			why(st, "a duration needs a unit: %.*s_%.*ss%s or "
			    "%.*s_500ms%s", (int)st->kwlen, st->kw, (int)nlen,
			    s + 1, st->rest, (int)st->kwlen, st->kw, st->rest);
		else if ((other = other_unit_s(unit, ulen)) &&
			 !parse_uint(s + 1, nlen, WINDOW_LIMIT_MS / 1000 /
				     other, &v))
			why(st, "a duration is in s or ms, not '%.*s': "
			    "%.*s_%llus%s", (int)ulen, unit, (int)st->kwlen,
			    st->kw, (unsigned long long)(v * other), st->rest);
		else
			why(st, "'%.*s' is not a unit: a duration is a number "
			    "and s or ms, e.g. %.*s_5s%s", (int)ulen, unit,
			    (int)st->kwlen, st->kw, st->rest);
		return -ENOENT;
	}
	ret = parse_uint(s + 1, nlen, WINDOW_LIMIT_MS / scale, &v);
	if (ret == -ENOENT)
		why(st, "'%.*s' is not a duration: a number and s or ms, e.g. "
		    "%.*s_5s%s", (int)(end - s), s, (int)st->kwlen, st->kw,
		    st->rest);
	else if (ret)
		why(st, "'%.*s': too long a window", (int)(end - s - 1), s + 1);
	if (ret)
		return ret;
	st->req->last = last;
	st->has_duration = true;
	st->duration_ms = v * scale;
	if (!v)
		why(st, "'%.*s': a window must be longer than 0, e.g. %.*s_5s%s",
		    (int)(end - s - 1), s + 1, (int)st->kwlen, st->kw,
		    st->rest);
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
	    st->duration_ms != st->seconds_ms) {
		why(st, "two different windows (%llu ms in the name, "
		    "seconds=%llu): give one", (unsigned long long)
		    st->duration_ms, (unsigned long long)st->seconds_ms / 1000);
		return -EINVAL;
	}
	if (st->has_duration || st->has_seconds) {
		req->has_window = true;
		req->window_ms = st->has_duration ? st->duration_ms
						  : st->seconds_ms;
	}
	return 0;
}

int name_parse_why(const char *name, struct proffs_request *req, char *buf,
		   size_t buflen)
{
	struct parse_state st = { .req = req, .why = buf, .whylen = buflen,
				  .name = name };
	const char *stem_end, *q, *q_end, *fmt, *fmt_end, *us;
	int verdict = 0, ret, f;

	if (buflen)
		buf[0] = '\0';
	if (!name || strnlen(name, NAME_MAX_LEN + 1) > NAME_MAX_LEN) {
		why(&st, "not a file proffs serves: longer than %d bytes",
		    NAME_MAX_LEN);
		return -ENOENT;
	}
	set_defaults(req);
	split(name, &stem_end, &q, &q_end, &fmt, &fmt_end);
	us = memchr(name, '_', stem_end - name);
	st.kw = name;
	st.kwlen = (us ? us : stem_end) - name;
	st.rest = stem_end;
	if (match_kind(name, st.kwlen, &req->kind, &req->format)) {
		why(&st, "not a file proffs serves: '%.*s' is not a kind (cpu, "
		    "wall, heap, allocs, goroutine, block, mutex, memstats, "
		    "...), e.g. cpu_5s.pb.gz", (int)st.kwlen, name);
		return -ENOENT;
	}
	if (fmt) {
		f = match_format(fmt, fmt_end - fmt);
		if (f < 0) {
			why(&st, "not a file proffs serves: '%.*s' is not a "
			    "format (pb.gz, pb, svg, txt, folded), e.g. "
			    "%.*s.svg", (int)(fmt_end - fmt), fmt,
			    (int)(fmt - 1 - name), name);
			return -ENOENT;
		}
		req->format = f;
	}
	/* The kind and format say which file: past them, anything wrong
	 * is a bad value of that file (EINVAL), never a missing file. */
	if (us) {
		ret = parse_duration(&st, us, stem_end);
		verdict = ret ? -EINVAL : 0;
	}
	if (q) {
		ret = parse_query(&st, q, q_end);
		if (ret && !verdict)
			verdict = -EINVAL;
	}
	if (!verdict)
		verdict = resolve_window(&st);
	return verdict;
}

int name_parse(const char *name, struct proffs_request *req)
{
	return name_parse_why(name, req, NULL, 0);
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
