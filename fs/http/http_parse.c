// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * http_parse.c - an HTTP/1.x request head, and its target as a name of
 * the mount.
 *
 * Decisions:
 *   - Only what proffs needs is read from the head: the method, the
 *     target, the version, Connection, Authorization; a body (by
 *     Content-Length or Transfer-Encoding) is refused rather than
 *     skipped. Header lines folded onto several lines (obsolete) are
 *     refused.
 *   - Path segments are percent-decoded one by one, so "%2F" never
 *     splits a path; a decoded NUL is refused.
 *   - On Go's paths, query parameters the grammar does not know (Go's
 *     gc=1, a scraper's own) are ignored, as net/http/pprof ignores
 *     them; the ones it knows are passed on only when their value is a
 *     WORD ([A-Za-z0-9_]+), so no value can add a parameter of its own.
 *   - On a name of the mount (/<pid>/<name>), the query is part of the
 *     name, as in the mount: /1234/heap.svg?sample=alloc_space.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fs/http/http_parse.h"
#include "fs/core/kinds.h"

#define SEGS_MAX 8
#define PARAMS_MAX 32
#define SEG_MAX 256

size_t http_head_len(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return i + 2;
		if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* The next line of [*p, end), without its "\r\n"; NULL at the end. */
static char *next_line(char **p, char *end, size_t *len)
{
	char *s = *p, *nl;

	if (s >= end)
		return NULL;
	nl = memchr(s, '\n', end - s);
	if (!nl)
		nl = end;
	*len = nl - s;
	if (*len && s[*len - 1] == '\r')
		(*len)--;
	*p = nl + 1;
	return s;
}

static bool token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool has_token(const char *v, size_t len, const char *tok)
{
	size_t tl = strlen(tok);

	for (size_t i = 0; i + tl <= len; i++)
		if (!strncasecmp(v + i, tok, tl) &&
		    (i == 0 || !token_char(v[i - 1])) &&
		    (i + tl == len || !token_char(v[i + tl])))
			return true;
	return false;
}

static void take_auth(const char *v, size_t len, struct http_request *r)
{
	r->has_auth = true;
	r->auth[0] = '\0';
	if (len < 7 || strncasecmp(v, "Bearer ", 7))
		return;		/* another scheme: never valid here */
	v += 7;
	len -= 7;
	while (len && (*v == ' ' || *v == '\t')) {
		v++;
		len--;
	}
	while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	if (len < sizeof(r->auth)) {
		memcpy(r->auth, v, len);
		r->auth[len] = '\0';
	}
}

static int header(const char *line, size_t len, struct http_request *r,
		  const char **why)
{
	const char *colon = memchr(line, ':', len), *v;
	size_t nlen, vlen;

	*why = "malformed header line";
	if (!colon || colon == line)
		return -EINVAL;
	nlen = colon - line;
	for (size_t i = 0; i < nlen; i++)
		if (!token_char(line[i]))
			return -EINVAL;
	v = colon + 1;
	vlen = len - nlen - 1;
	while (vlen && (*v == ' ' || *v == '\t')) {
		v++;
		vlen--;
	}
#define IS(name) (nlen == strlen(name) && !strncasecmp(line, name, nlen))
	if (IS("Connection")) {
		if (has_token(v, vlen, "close"))
			r->keep_alive = false;
		else if (has_token(v, vlen, "keep-alive"))
			r->keep_alive = true;
	} else if (IS("Authorization")) {
		take_auth(v, vlen, r);
	} else if (IS("Transfer-Encoding") ||
		   (IS("Content-Length") && !(vlen == 1 && v[0] == '0'))) {
		*why = "a request with a body";
		return -EINVAL;
	}
#undef IS
	return 0;
}

static int request_line(char *line, size_t len, struct http_request *r,
			const char **why)
{
	char *sp1 = memchr(line, ' ', len), *sp2;
	size_t vlen;

	*why = "malformed request line";
	if (!sp1)
		return -EINVAL;
	sp2 = memchr(sp1 + 1, ' ', line + len - sp1 - 1);
	if (!sp2 || sp2 == sp1 + 1)
		return -EINVAL;
	vlen = line + len - sp2 - 1;
	if (vlen != 8 || memcmp(sp2 + 1, "HTTP/1.", 7)) {
		*why = "not HTTP/1.0 or HTTP/1.1";
		return vlen >= 5 && !memcmp(sp2 + 1, "HTTP/", 5) ? -EPROTO
								 : -EINVAL;
	}
	if (sp2[8] != '0' && sp2[8] != '1') {
		*why = "not HTTP/1.0 or HTTP/1.1";
		return -EPROTO;
	}
	r->keep_alive = sp2[8] == '1';
	if (sp1 - line == 3 && !memcmp(line, "GET", 3)) {
		r->method = HTTP_GET;
	} else if (sp1 - line == 4 && !memcmp(line, "HEAD", 4)) {
		r->method = HTTP_HEAD;
	} else {
		*why = "only GET and HEAD are served";
		return -EOPNOTSUPP;
	}
	*sp2 = '\0';
	r->target = sp1 + 1;
	for (const char *c = r->target; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return -EINVAL;
	return 0;
}

int http_parse_head(char *buf, size_t len, struct http_request *r,
		    const char **why)
{
	char *p = buf, *end = buf + len, *line;
	size_t ll;
	int ret;

	memset(r, 0, sizeof(*r));
	*why = "head too long";
	if (len > HTTP_HEAD_MAX)
		return -EMSGSIZE;
	if (memchr(buf, '\0', len)) {
		*why = "a NUL in the head";
		return -EINVAL;
	}
	line = next_line(&p, end, &ll);
	*why = "no request line";
	if (!line || !ll)
		return -EINVAL;
	ret = request_line(line, ll, r, why);
	while (!ret && (line = next_line(&p, end, &ll)) && ll) {
		if (*line == ' ' || *line == '\t') {
			*why = "a folded header line";
			return -EINVAL;
		}
		ret = header(line, ll, r, why);
	}
	return ret;
}

/* ---- the request-target ---- */

struct parsed_target {
	char segs[SEGS_MAX][SEG_MAX];
	int nsegs;
	const char *query;		/* raw, after '?', or NULL */
	struct {
		char key[SEG_MAX], value[SEG_MAX];
	} params[PARAMS_MAX];
	int nparams;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode s[0..len) into out (SEG_MAX); plus: '+' is a space. */
static int decode(const char *s, size_t len, bool plus, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '%') {
			int hi = i + 2 < len ? hexval(s[i + 1]) : -1;
			int lo = i + 2 < len ? hexval(s[i + 2]) : -1;

			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = hi << 4 | lo;
			i += 2;
		} else if (plus && c == '+') {
			c = ' ';
		}
		if (!c || o + 1 >= SEG_MAX)
			return -EINVAL;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

static int split_query(struct parsed_target *t, const char *q)
{
	while (*q) {
		const char *amp = strchr(q, '&'), *eq;
		size_t len = amp ? (size_t)(amp - q) : strlen(q);

		if (len) {
			if (t->nparams == PARAMS_MAX)
				return -EINVAL;
			eq = memchr(q, '=', len);
			if (decode(q, eq ? (size_t)(eq - q) : len, true,
				   t->params[t->nparams].key) ||
			    decode(eq ? eq + 1 : q + len,
				   eq ? len - (eq - q) - 1 : 0, true,
				   t->params[t->nparams].value))
				return -EINVAL;
			t->nparams++;
		}
		q += len + (amp != NULL);
	}
	return 0;
}

static int split_target(const char *target, struct parsed_target *t,
			const char **why)
{
	const char *p = target + 1, *qm = strchr(target, '?');
	const char *end = qm ? qm : target + strlen(target);

	*why = "the target must be a path";
	if (target[0] != '/')
		return -EINVAL;
	*why = "malformed or too long a path";
	while (p < end) {
		const char *slash = memchr(p, '/', end - p);
		size_t len = (slash ? slash : end) - p;

		if (t->nsegs == SEGS_MAX || decode(p, len, false,
						   t->segs[t->nsegs]))
			return -EINVAL;
		t->nsegs++;
		p += len + 1;
		if (slash && p == end) {	/* a trailing slash */
			if (t->nsegs == SEGS_MAX)
				return -EINVAL;
			t->segs[t->nsegs++][0] = '\0';
		}
	}
	t->query = qm ? qm + 1 : NULL;
	*why = "malformed query";
	return qm ? split_query(t, qm + 1) : 0;
}

static bool word(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static int set_pid(struct target *tg, const char *s)
{
	long v = 0;

	if (!*s || strlen(s) > 9)
		return -ENOENT;
	for (const char *c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return -ENOENT;
		v = v * 10 + (*c - '0');
	}
	if (v <= 0)
		return -ENOENT;
	memset(tg, 0, sizeof(*tg));
	tg->kind = TARGET_PID;
	tg->pid = v;
	return 0;
}

/* A target by query: pid=, unit=, name=; -EINVAL for two. */
static int query_target(const struct parsed_target *t, struct http_route *rt,
			const char **why)
{
	static const char *const keys[] = { "pid", "unit", "name" };
	static const enum target_kind kinds[] = {
		TARGET_PID, TARGET_UNIT, TARGET_NAME,
	};
	int ret;

	for (int i = 0; i < t->nparams; i++)
		for (int k = 0; k < 3; k++) {
			if (strcmp(t->params[i].key, keys[k]))
				continue;
			*why = "more than one target (pid=, unit=, name=, or "
			       "a path prefix)";
			if (rt->has_target)
				return -EINVAL;
			*why = "not a process id, unit or command name";
			ret = kinds[k] == TARGET_PID ?
			      set_pid(&rt->tgt, t->params[i].value) :
			      target_set(&rt->tgt, kinds[k],
					 t->params[i].value,
					 strlen(t->params[i].value));
			if (ret)
				return -EINVAL;
			rt->has_target = true;
		}
	return 0;
}

/* Go's spelling of a kind on /debug/pprof/, where it is not ours. */
static const struct {
	const char *go, *ours;
} go_aliases[] = {
	{ "fgprof", "wall" },	/* Alloy's profile.fgprof, /debug/fgprof */
};

/* Kinds Go answers at once, with counts since the program started: no
 * such count exists for a program proffs attaches to, so these take a
 * short window, as the delta_ paths do, and not the mount's default 30 s,
 * which a scraper's timeout (Parca's is 10 s) would cut off. */
static const char *const go_at_once[] = { "block", "mutex" };

static bool short_window(const char *kw)
{
	for (size_t i = 0; i < sizeof(go_at_once) / sizeof(go_at_once[0]);
	     i++)
		if (!strcmp(kw, go_at_once[i]))
			return true;
	return false;
}

static int profile_name(const struct parsed_target *t, const char *kw,
			char *name, size_t size, const char **why)
{
	bool delta = !strncmp(kw, "delta_", 6), seconds = false, txt = false;
	size_t n;

	if (delta)
		kw += 6;
	delta |= short_window(kw);
	for (size_t i = 0; i < sizeof(go_aliases) / sizeof(go_aliases[0]);
	     i++)
		if (!strcmp(kw, go_aliases[i].go))
			kw = go_aliases[i].ours;
	n = snprintf(name, size, "%s", kw);
	/* last=30: the recorder's last 30 s, as _last30s in the mount */
	for (int i = 0; i < t->nparams && n < size; i++)
		if (!strcmp(t->params[i].key, "last")) {
			*why = "last= takes a number of seconds";
			if (!*t->params[i].value ||
			    strspn(t->params[i].value, "0123456789") !=
			    strlen(t->params[i].value))
				return -EINVAL;
			n += snprintf(name + n, size - n, "_last%ss",
				      t->params[i].value);
			break;
		}
	for (int i = 0; i < t->nparams && n < size; i++) {
		const char *k = t->params[i].key, *v = t->params[i].value;

		if (!name_param_known(k, strlen(k)))
			continue;
		*why = "a parameter's value must be a whole number or a word, "
		       "e.g. seconds=5 or sample=alloc_space";
		if (!word(v))
			return -EINVAL;
		seconds |= !strcmp(k, "seconds");
		if (!strcmp(k, "debug"))
			txt = strspn(v, "0") != strlen(v);
		n += snprintf(name + n, size - n, "%s%s=%s",
			      strchr(name, '?') ? "&" : "?", k, v);
	}
	if (delta && !seconds && n < size)
		n += snprintf(name + n, size - n, "%sseconds=%d",
			      strchr(name, '?') ? "&" : "?",
			      HTTP_DELTA_SECONDS);
	if (txt && n < size)
		n += snprintf(name + n, size - n, ".txt");
	*why = "too long a profile name";
	return n < size ? 0 : -EINVAL;
}

static int route_profile(const char *name, struct http_route *rt,
			 const char **why)
{
	int ret;

	if (strlen(name) >= sizeof(rt->name)) {
		*why = "too long a profile name";
		return -EINVAL;
	}
	strcpy(rt->name, name);
	ret = name_parse_why(name, &rt->req, rt->why, sizeof(rt->why));
	*why = rt->why;
	if (ret == -ENOENT) {
		char sentence[sizeof(rt->why)];

		memcpy(sentence, rt->why, sizeof(sentence));
		snprintf(rt->why, sizeof(rt->why), "no such profile: %.*s",
			 (int)sizeof(rt->why) - 20, sentence);
		return ret;
	}

	rt->parse_ret = ret;
	rt->type = HTTP_ROUTE_PROFILE;
	return 0;
}

/* A file name of the mount, as in /prof/<pid>/: the query is its own. */
static int route_file(const struct parsed_target *t, const char *file,
		      struct http_route *rt, const char **why)
{
	char name[512];

	if (!strcmp(file, "") || !strcmp(file, "index.html")) {
		rt->type = HTTP_ROUTE_INDEX;
		return 0;
	}
	if (!strcmp(file, "cmdline")) {
		rt->type = HTTP_ROUTE_CMDLINE;
		return 0;
	}
	if (!strcmp(file, "errors.txt")) {
		rt->type = HTTP_ROUTE_ERRORS;
		return 0;
	}
	if (snprintf(name, sizeof(name), "%s%s%s", file, t->query ? "?" : "",
		     t->query ? t->query : "") >= 256) {
		*why = "too long a profile name";
		return -EINVAL;
	}
	return route_profile(name, rt, why);
}

/* /debug/pprof/..., /debug/fgprof, /metrics, /status: rest of segs. */
static int route_rest(const struct parsed_target *t, int first,
		      struct http_route *rt, const char **why)
{
	const char (*s)[SEG_MAX] = &t->segs[first];
	int n = t->nsegs - first;
	char name[256];
	int ret;

	*why = "no such page";
	if (n == 2 && !strcmp(s[0], "debug") && !strcmp(s[1], "fgprof"))
		return (ret = profile_name(t, "fgprof", name, sizeof(name),
					   why)) ? ret :
		       route_profile(name, rt, why);
	if (n < 2 || n > 3 || strcmp(s[0], "debug") || strcmp(s[1], "pprof"))
		return -ENOENT;
	if (n == 2 || !s[2][0]) {
		rt->type = HTTP_ROUTE_PPROF_INDEX;
		return 0;
	}
	if (!strcmp(s[2], "cmdline")) {
		rt->type = HTTP_ROUTE_CMDLINE;
		return 0;
	}
	ret = profile_name(t, s[2], name, sizeof(name), why);
	return ret ? ret : route_profile(name, rt, why);
}

/* A target named by the path's first segments; *used: how many. */
static int path_target(const struct parsed_target *t, struct http_route *rt,
		       int *used)
{
	enum target_kind k;

	*used = 0;
	if (!t->nsegs)
		return 0;
	if (!set_pid(&rt->tgt, t->segs[0])) {
		*used = 1;
	} else if (!target_kind_of(t->segs[0], strlen(t->segs[0]), &k)) {
		if (k == TARGET_ALL) {
			*used = 1;
			target_set(&rt->tgt, k, "", 0);
		} else if (t->nsegs < 2 ||
			   target_set(&rt->tgt, k, t->segs[1],
				      strlen(t->segs[1]))) {
			return -ENOENT;
		} else {
			*used = 2;
		}
	} else {
		return 0;
	}
	rt->has_target = true;
	return 0;
}

static int route(const struct parsed_target *t, struct http_route *rt,
		 const char **why)
{
	bool prefix;
	int used, ret;

	*why = "no such page";
	ret = path_target(t, rt, &used);
	if (ret)
		return ret;
	prefix = used > 0;
	if (!prefix && (t->nsegs == 0 || (t->nsegs == 1 && !t->segs[0][0]))) {
		rt->type = HTTP_ROUTE_ROOT;
		return 0;
	}
	if (!prefix && t->nsegs == 1 && !strcmp(t->segs[0], "metrics")) {
		rt->type = HTTP_ROUTE_METRICS;
		return 0;
	}
	if (!prefix && t->nsegs == 1 && !strcmp(t->segs[0], "status")) {
		rt->type = HTTP_ROUTE_STATUS;
		return 0;
	}
	if (!prefix && t->nsegs == 1 && !strcmp(t->segs[0], "errors.txt")) {
		rt->type = HTTP_ROUTE_ERRORS;
		return 0;
	}
	if (prefix && t->nsegs - used <= 1)
		return route_file(t, t->nsegs > used ? t->segs[used] : "", rt,
				  why);
	ret = route_rest(t, used, rt, why);
	if (!ret)
		ret = query_target(t, rt, why);
	return ret;
}

int http_route(const char *target, struct http_route *rt, const char **why)
{
	struct parsed_target t;
	int ret;

	memset(rt, 0, sizeof(*rt));
	memset(&t, 0, sizeof(t));
	ret = split_target(target, &t, why);
	if (!ret)
		ret = route(&t, rt, why);
	if (ret)
		return ret;
	*why = "which process? add pid=, unit= or name=, or use /all/";
	if (!rt->has_target && (rt->type == HTTP_ROUTE_PROFILE ||
				rt->type == HTTP_ROUTE_CMDLINE ||
				rt->type == HTTP_ROUTE_INDEX))
		return -EINVAL;
	*why = "not in all/: only whole-host profiles are (CPU), e.g. "
	       "cpu_5s.svg";
	if (rt->has_target && rt->tgt.kind == TARGET_ALL &&
	    (rt->type == HTTP_ROUTE_CMDLINE || rt->type == HTTP_ROUTE_INDEX ||
	     (rt->type == HTTP_ROUTE_PROFILE &&
	      !kinds_row(rt->req.kind)->host)))
		return -ENOENT;
	return 0;
}
