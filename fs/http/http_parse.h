/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * http_parse.h - what an HTTP request asks of proffs: its head parsed,
 * and its request-target mapped onto the names of the mount (SPEC §9):
 *
 *   GET /debug/pprof/<kind>?pid=N&seconds=S&...  Go's paths: pprof by
 *       default, debug=1|2 as text; delta_<kind> is <kind> over a window
 *       (seconds=, else HTTP_DELTA_SECONDS), as godeltaprof's paths are
 *       deltas; block and mutex, which Go answers at once with counts
 *       since the start, take the same short window; fgprof is wall
 *   GET /debug/pprof/                           an index
 *   GET /<pid>/<file name>                      any name of the mount
 *   GET /unit/<unit>/..., /name/<comm>/...,     the target by a stable
 *       /all/...; or ?unit=, ?name=, ?pid=       name (target.h)
 *   GET /metrics, /status                       the daemon's counters
 *
 * Every kind the name grammar knows (name.h) is served here with no code
 * of its own: a Go path is spelled out as a file name and parsed by
 * name_parse(), whose verdict stands (-ENOENT: 404, -EINVAL: 400).
 *
 * Pure functions, no allocation, no I/O. Errors are negative errno
 * values, each with a reason in words for the response and the log:
 * -EINVAL (400), -ENOENT (404), -EMSGSIZE (431: head too long),
 * -EOPNOTSUPP (405: a method other than GET or HEAD), -EPROTO (505).
 */
#ifndef PROFFS_HTTP_PARSE_H
#define PROFFS_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "fs/core/name.h"
#include "fs/core/target.h"

#define HTTP_HEAD_MAX 8192	/* request line and headers */
#define HTTP_TOKEN_MAX 256	/* an Authorization value we read */
#define HTTP_DELTA_SECONDS 5	/* delta_<kind>, block, mutex without
				 * seconds= */

enum http_method { HTTP_GET, HTTP_HEAD };

struct http_request {
	enum http_method method;
	bool keep_alive;	/* HTTP/1.1 unless "close"; 1.0 if asked */
	bool has_auth;
	char auth[HTTP_TOKEN_MAX];	/* the bearer token, if any */
	const char *target;	/* into the caller's buffer, NUL-ended */
};

/*
 * The length of the head at buf (through its blank line), or 0 when the
 * blank line has not come yet.
 */
size_t http_head_len(const char *buf, size_t len);

/*
 * Parse the head buf[0..len) (http_head_len() bytes); the buffer is
 * changed (the request-target is NUL-terminated in place) and r->target
 * points into it. A request with a body is refused (-EINVAL): proffs
 * reads none.
 */
int http_parse_head(char *buf, size_t len, struct http_request *r,
		    const char **why);

enum http_route_type {
	HTTP_ROUTE_ROOT,	/* "/" */
	HTTP_ROUTE_METRICS,
	HTTP_ROUTE_STATUS,
	HTTP_ROUTE_PPROF_INDEX,	/* /debug/pprof/, with or without target */
	HTTP_ROUTE_INDEX,	/* /<pid>/, /<pid>/index.html */
	HTTP_ROUTE_CMDLINE,
	HTTP_ROUTE_PROFILE,
	HTTP_ROUTE_ERRORS,	/* /errors.txt, /<pid>/errors.txt */
	HTTP_ROUTE__COUNT	/* not a route: how many there are */
};

struct http_route {
	enum http_route_type type;
	bool has_target;
	struct target tgt;
	struct proffs_request req;	/* HTTP_ROUTE_PROFILE */
	int parse_ret;			/* 0 or -EINVAL, as name_parse */
	char name[256];			/* the file name, for the log */
	char why[300];			/* a refused name's sentence */
};

/*
 * Map a request-target ("/debug/pprof/heap?pid=1&seconds=5") to what it
 * asks. 0, -ENOENT or -EINVAL with *why. A profile whose values are
 * wrong (seconds=0) is routed, with rt->parse_ret -EINVAL, as a name of
 * the mount is looked up and then refused at open.
 */
int http_route(const char *target, struct http_route *rt, const char **why);

#endif
