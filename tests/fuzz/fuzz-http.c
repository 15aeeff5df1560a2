// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz-http.c - libFuzzer harness for fs/http/http_parse.c: the input is what
 * a client sends, a request head (and anything after it). Checks that
 * http_head_len() stays within the input; that http_parse_head() and
 * http_route() return only their documented errors, each with a reason;
 * that a parsed target points into the head; that a route is in range:
 * a profile's request as name_parse() gives it (kind, format, window),
 * its name short enough to be a file name, and a target that needs one
 * has one; and that both are deterministic. Built by tests/fuzz/run.sh:
 *
 *   tests/fuzz/run.sh http
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/http/http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	fprintf(stderr, "fuzz-http: %s\n", what);
	abort();
}

static void check_route(const char *target)
{
	struct http_route rt, again;
	const char *why = NULL;
	int ret = http_route(target, &rt, &why);

	if (ret != 0 && ret != -ENOENT && ret != -EINVAL)
		fail("http_route: unexpected return");
	if (ret && (!why || !*why))
		fail("http_route: an error without a reason");
	if (http_route(target, &again, &why) != ret)
		fail("http_route: not deterministic");
	if (ret)
		return;
	if ((unsigned)rt.type >= HTTP_ROUTE__COUNT)
		fail("route type out of range");
	if (rt.type == HTTP_ROUTE_PROFILE) {
		struct proffs_request req;

		if (!rt.has_target)
			fail("a profile without a target");
		if (strnlen(rt.name, sizeof(rt.name)) >= sizeof(rt.name))
			fail("name not terminated");
		if (name_parse(rt.name, &req) != rt.parse_ret)
			fail("the route's name parses otherwise");
		if (!rt.parse_ret && (req.kind != rt.req.kind ||
				      req.format != rt.req.format ||
				      req.window_ms != rt.req.window_ms))
			fail("the route's request is not its name's");
		if (rt.parse_ret && rt.parse_ret != -EINVAL)
			fail("parse_ret neither 0 nor -EINVAL");
		if ((unsigned)rt.req.kind >= PROFFS_KIND__COUNT ||
		    (unsigned)rt.req.format >= PROFFS_FMT__COUNT)
			fail("kind or format out of range");
	}
	if (rt.has_target && rt.tgt.kind != TARGET_PID &&
	    rt.tgt.kind != TARGET_ALL &&
	    (!rt.tgt.id[0] || strchr(rt.tgt.id, '/') ||
	     strnlen(rt.tgt.id, TARGET_ID_MAX) >= TARGET_ID_MAX))
		fail("a stable name that cannot be one");
	if (rt.has_target && rt.tgt.kind == TARGET_PID && rt.tgt.pid <= 0)
		fail("a pid that is not one");
	if (memcmp(&rt, &again, sizeof(rt)))
		fail("http_route: not deterministic");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_request r;
	const char *why = NULL;
	char *buf = malloc(size + 1);
	size_t hl;
	int ret;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	hl = http_head_len(buf, size);
	if (hl > size)
		fail("head longer than the input");
	if (hl) {
		ret = http_parse_head(buf, hl, &r, &why);
		if (ret != 0 && ret != -EINVAL && ret != -EMSGSIZE &&
		    ret != -EOPNOTSUPP && ret != -EPROTO)
			fail("http_parse_head: unexpected return");
		if (ret && (!why || !*why))
			fail("http_parse_head: an error without a reason");
		if (!ret && (r.target < buf || r.target >= buf + hl))
			fail("target outside the head");
		if (!ret && r.has_auth &&
		    strnlen(r.auth, sizeof(r.auth)) >= sizeof(r.auth))
			fail("token not terminated");
		if (!ret)
			check_route(r.target);
	}
	/* The whole input as a request-target too: most of the space the
	 * head's syntax would keep the fuzzer from. */
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (strlen(buf) == size)
		check_route(buf);
	free(buf);
	return 0;
}
