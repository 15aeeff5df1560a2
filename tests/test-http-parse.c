// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-http-parse.c - fs/http/http_parse.c against tables: request heads
 * (methods, versions, Connection, Authorization, bodies, folding, the
 * size limit) and request-targets (Go's paths, delta_ and fgprof, the
 * target by prefix or query, the mount's file names, the errors), each
 * route compared with what name_parse() gives for the file name it
 * should stand for.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fs/http/http_parse.h"

struct head_case {
	const char *head;
	int ret;
	bool keep_alive;
	const char *target;
	const char *auth;	/* NULL: no Authorization */
};

static const struct head_case heads[] = {
	{ "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0, true, "/", NULL },
	{ "GET /a?b=c HTTP/1.0\r\n\r\n", 0, false, "/a?b=c", NULL },
	{ "HEAD /m HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 0, true,
	  "/m", NULL },
	{ "GET /m HTTP/1.1\r\nconnection: x, close\r\n\r\n", 0, false, "/m",
	  NULL },
	{ "GET /m HTTP/1.1\nAuthorization: Bearer  tok123 \n\n", 0, true,
	  "/m", "tok123" },
	{ "GET /m HTTP/1.1\r\nAuthorization: Basic dXNlcjpw\r\n\r\n", 0, true,
	  "/m", "" },
	{ "GET /m HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 0, true, "/m",
	  NULL },
	{ "GET /m HTTP/1.1\r\nContent-Length: 5\r\n\r\n", -EINVAL },
	{ "GET /m HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", -EINVAL },
	{ "GET /m HTTP/1.1\r\nX: a\r\n b\r\n\r\n", -EINVAL },
	{ "GET /m HTTP/1.1\r\nNo colon\r\n\r\n", -EINVAL },
	{ "POST /m HTTP/1.1\r\n\r\n", -EOPNOTSUPP },
	{ "GET /m HTTP/2.0\r\n\r\n", -EPROTO },
	{ "GET /m HTTP/1.2\r\n\r\n", -EPROTO },
	{ "GET /m HTTP\r\n\r\n", -EINVAL },
	{ "GET /m\r\n\r\n", -EINVAL },
	{ "GET  /m HTTP/1.1\r\n\r\n", -EINVAL },
	{ "\r\n\r\n", -EINVAL },
};

static void test_heads(void)
{
	char buf[512];

	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		const struct head_case *c = &heads[i];
		struct http_request r;
		const char *why = NULL;
		size_t hl;
		int ret;

		snprintf(buf, sizeof(buf), "%s", c->head);
		hl = http_head_len(buf, strlen(buf));
		CHECK(hl == strlen(buf), "%s: head length %zu", c->head, hl);
		ret = http_parse_head(buf, hl, &r, &why);
		CHECK(ret == c->ret, "%s: %d, want %d", c->head, ret, c->ret);
		CHECK(ret == 0 || (why && *why), "%s: no reason", c->head);
		if (ret || c->ret)
			continue;
		CHECK(r.keep_alive == c->keep_alive, "%s: keep-alive", c->head);
		CHECK(!strcmp(r.target, c->target), "%s: target %s", c->head,
		      r.target);
		CHECK(r.has_auth == (c->auth != NULL), "%s: auth", c->head);
		CHECK(!c->auth || !strcmp(r.auth, c->auth), "%s: token '%s'",
		      c->head, r.auth);
	}
	/* not complete yet; a pipelined request after the head */
	CHECK(!http_head_len("GET / HTTP/1.1\r\n", 16), "partial head");
	CHECK(http_head_len("GET / HTTP/1.1\r\n\r\nGET", 21) == 18,
	      "head before a pipelined request");
	{
		static char big[HTTP_HEAD_MAX + 64];
		struct http_request r;
		const char *why;

		memset(big, 'a', sizeof(big));
		memcpy(big, "GET /", 5);
		CHECK(http_parse_head(big, sizeof(big), &r, &why) == -EMSGSIZE,
		      "a head over HTTP_HEAD_MAX");
	}
}

struct route_case {
	const char *target;
	int ret;
	enum http_route_type type;
	enum target_kind tkind;	/* checked with has_target */
	const char *tid;	/* pid as a string, or the unit/comm */
	const char *name;	/* HTTP_ROUTE_PROFILE: the file name */
};

#define PROFILE HTTP_ROUTE_PROFILE
#define R(t, ty) { t, 0, ty }
#define P(t, kind, id, n) { t, 0, PROFILE, kind, id, n }
#define ERR(t, e) { t, e }

static const struct route_case routes[] = {
	R("/", HTTP_ROUTE_ROOT),
	R("/metrics", HTTP_ROUTE_METRICS),
	R("/status", HTTP_ROUTE_STATUS),
	R("/debug/pprof/", HTTP_ROUTE_PPROF_INDEX),
	R("/debug/pprof", HTTP_ROUTE_PPROF_INDEX),
	{ "/debug/pprof/?pid=12", 0, HTTP_ROUTE_PPROF_INDEX, TARGET_PID,
	  "12" },
	{ "/unit/nginx/debug/pprof/", 0, HTTP_ROUTE_PPROF_INDEX, TARGET_UNIT,
	  "nginx.service" },
	/* Go's paths */
	P("/debug/pprof/profile?pid=12&seconds=5", TARGET_PID, "12",
	  "profile?seconds=5"),
	P("/debug/pprof/profile?seconds=5&pid=12", TARGET_PID, "12",
	  "profile?seconds=5"),
	P("/debug/pprof/heap?pid=12&gc=1&debug=1", TARGET_PID, "12",
	  "heap?debug=1.txt"),
	P("/debug/pprof/goroutine?pid=12&debug=0", TARGET_PID, "12",
	  "goroutine?debug=0"),
	P("/debug/pprof/allocs?pid=12&rate=1&sample=alloc_space", TARGET_PID,
	  "12", "allocs?rate=1&sample=alloc_space"),
	P("/debug/pprof/delta_heap?pid=12", TARGET_PID, "12",
	  "heap?seconds=5"),
	P("/debug/pprof/delta_heap?pid=12&seconds=9", TARGET_PID, "12",
	  "heap?seconds=9"),
	P("/debug/pprof/flame?pid=12", TARGET_PID, "12", "flame"),
	/* Go answers these at once: a short window, not the default 30 s */
	P("/debug/pprof/block?pid=12", TARGET_PID, "12", "block?seconds=5"),
	P("/debug/pprof/mutex?pid=12&seconds=2", TARGET_PID, "12",
	  "mutex?seconds=2"),
	P("/debug/pprof/delta_mutex?pid=12", TARGET_PID, "12",
	  "mutex?seconds=5"),
	/* the target by prefix or query */
	P("/unit/nginx.service/debug/pprof/profile", TARGET_UNIT,
	  "nginx.service", "profile"),
	P("/debug/pprof/allocs?unit=nginx", TARGET_UNIT, "nginx.service",
	  "allocs"),
	P("/name/sshd@newest/debug/pprof/heap", TARGET_NAME, "sshd@newest",
	  "heap"),
	P("/debug/pprof/heap?name=a%20b", TARGET_NAME, "a b", "heap"),
	P("/all/debug/pprof/profile?seconds=2", TARGET_ALL, "",
	  "profile?seconds=2"),
	/* the mount's names */
	P("/12/cpu_5s.svg", TARGET_PID, "12", "cpu_5s.svg"),
	P("/12/heap.svg?sample=alloc_space", TARGET_PID, "12",
	  "heap.svg?sample=alloc_space"),
	P("/12/profile%3Fseconds=5.pb.gz", TARGET_PID, "12",
	  "profile?seconds=5.pb.gz"),
	P("/unit/x.service/cpu_1s.txt", TARGET_UNIT, "x.service",
	  "cpu_1s.txt"),
	P("/all/cpu_5s.pb.gz", TARGET_ALL, "", "cpu_5s.pb.gz"),
	{ "/12/", 0, HTTP_ROUTE_INDEX, TARGET_PID, "12" },
	{ "/12", 0, HTTP_ROUTE_INDEX, TARGET_PID, "12" },
	{ "/12/index.html", 0, HTTP_ROUTE_INDEX, TARGET_PID, "12" },
	{ "/12/cmdline", 0, HTTP_ROUTE_CMDLINE, TARGET_PID, "12" },
	{ "/debug/pprof/cmdline?pid=12", 0, HTTP_ROUTE_CMDLINE, TARGET_PID,
	  "12" },
	/* a bad value is routed, and refused at open (parse_ret) */
	P("/debug/pprof/profile?pid=12&seconds=0", TARGET_PID, "12",
	  "profile?seconds=0"),
	/* errors */
	ERR("/debug/pprof/profile", -EINVAL),	/* which process? */
	ERR("/12/cpu.pb.gz/x", -ENOENT),
	ERR("/debug/pprof/nosuch?pid=1", -ENOENT),
	ERR("/debug/pprof/delta_nosuch?pid=1", -ENOENT),
	ERR("/debug/pprof/heap?pid=1&unit=x", -EINVAL),
	ERR("/unit/x/debug/pprof/heap?pid=1", -EINVAL),
	ERR("/debug/pprof/heap?pid=1&sample=a.b", -EINVAL),
	ERR("/debug/pprof/heap?pid=1&debug=1%26hz%3D5", -EINVAL),
	ERR("/debug/pprof/heap?pid=0", -EINVAL),
	ERR("/debug/pprof/heap?pid=x", -EINVAL),
	ERR("/debug/pprof/heap?name=a%2Fb", -EINVAL),
	ERR("/unit", -ENOENT),
	ERR("/unit/..", -ENOENT),
	ERR("/all/heap.pb.gz", -ENOENT),	/* CPU only */
	ERR("/all/cmdline", -ENOENT),
	ERR("/12/nosuch.pb.gz", -ENOENT),
	ERR("/12/cpu%00.pb.gz", -EINVAL),
	ERR("/12/cpu%zz", -EINVAL),
	ERR("/nowhere", -ENOENT),
	ERR("relative", -EINVAL),
	ERR("/a/b/c/d/e/f/g/h/", -EINVAL),
};

static void check_target(const struct route_case *c,
			 const struct http_route *rt)
{
	char id[32];

	CHECK(rt->has_target, "%s: no target", c->target);
	CHECK(rt->tgt.kind == c->tkind, "%s: target kind %d", c->target,
	      rt->tgt.kind);
	if (c->tkind == TARGET_PID) {
		snprintf(id, sizeof(id), "%d", (int)rt->tgt.pid);
		CHECK(!strcmp(id, c->tid), "%s: pid %s", c->target, id);
	} else {
		CHECK(!strcmp(rt->tgt.id, c->tid), "%s: id '%s'", c->target,
		      rt->tgt.id);
	}
}

static void test_routes(void)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct route_case *c = &routes[i];
		struct proffs_request want;
		struct http_route rt;
		const char *why = NULL;
		int ret = http_route(c->target, &rt, &why);

		CHECK(ret == c->ret, "%s: %d, want %d (%s)", c->target, ret,
		      c->ret, why ? why : "");
		if (ret || c->ret)
			continue;
		CHECK(rt.type == c->type, "%s: type %d", c->target, rt.type);
		if (c->tid)
			check_target(c, &rt);
		else
			CHECK(!rt.has_target, "%s: a target", c->target);
		if (c->type != PROFILE)
			continue;
		CHECK(!strcmp(rt.name, c->name), "%s: name '%s', want '%s'",
		      c->target, rt.name, c->name);
		CHECK(name_parse(c->name, &want) == rt.parse_ret &&
		      want.kind == rt.req.kind && want.format == rt.req.format &&
		      want.window_ms == rt.req.window_ms &&
		      want.debug == rt.req.debug, "%s: request", c->target);
	}
}

int main(void)
{
	test_heads();
	test_routes();
	if (failures) {
		fprintf(stderr, "test-http-parse: %d failure(s)\n", failures);
		return 1;
	}
	printf("test-http-parse: %zu heads, %zu targets, all passed\n",
	       sizeof(heads) / sizeof(heads[0]),
	       sizeof(routes) / sizeof(routes[0]));
	return 0;
}
