// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * http_serve.c - what one HTTP request gets: who asks (peer.h, the
 * token), what it asks (http_parse.h), whether they may (access.h, the
 * daemon's limits), and the answer, from the registry for a profile.
 *
 * Every refusal is one notice line - client, uid, request, status, why -
 * and one count in the HTTP refusals of /metrics, by errno: EKEYREJECTED
 * for 401, EACCES for 403, ENOENT for 404, EINVAL for 400 ...
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/core/access.h"
#include "fs/core/errors.h"
#include "fs/http/http_i.h"
#include "fs/core/index.h"
#include "fs/core/kinds.h"
#include "sampler/log.h"
#include "fs/core/output.h"
#include "fs/core/past.h"
#include "fs/http/peer.h"
#include "sampler/proc.h"
#include "fs/core/daemon.h"
#include "fs/core/registry.h"
#include "fs/core/status.h"

#define CMDLINE_MAX (128 * 1024)

struct http_ctx {
	struct http_conn *c;
	const struct http_request *r;
	struct http_who who;
	pid_t pid;		/* the target, once known, for errors.txt */
};

/* The status for a negative errno, as the mount's table has them. */
static int status_of(int err)
{
	switch (-err) {
	case ENOENT: case ESRCH:
		return 404;
	case EINVAL: case ENAMETOOLONG:
		return 400;
	case EACCES: case EPERM:
		return 403;
	case EKEYREJECTED:
		return 401;
	case EBUSY: case EAGAIN:
		return 503;
	case ENOEXEC: case EOPNOTSUPP:
		return 501;
	default:
		return 500;
	}
}

/* Refuse with err's status, one log line and one count. */
static int refuse(struct http_ctx *x, int err, const char *why)
{
	char body[400], uid[32] = "?";
	int status = status_of(err), n;
	const char *extra = NULL;

	if (x->who.known)
		snprintf(uid, sizeof(uid), "%u", (unsigned)x->who.uid);
	pr_notice("http: %s uid %s: %s %s: %d %s: %s", x->who.addr, uid,
		  x->r->method == HTTP_HEAD ? "HEAD" : "GET", x->r->target,
		  status, strerrorname_np(-err), why);
	status_refused(&x->c->fs->http_refused, err);
	if (x->who.known && err != -ENOMEM)
		errlog_add(x->c->fs->errors, x->pid, x->who.uid,
			   x->r->target, err, why);
	if (status == 401)
		extra = "WWW-Authenticate: Bearer realm=\"proffs\"\r\n";
	else if (status == 503)
		extra = "Retry-After: 1\r\n";
	n = snprintf(body, sizeof(body), "%s\n", why);
	return http_send(x->c, status, "text/plain; charset=utf-8", extra, body,
			 n);
}

/* A loopback client is its socket's owner; anyone else needs the
 * token, and with it has the daemon's rights. 0, or why not. */
static int identify(struct http_ctx *x, const char **why)
{
	struct http_who *w = &x->who;

	w->loopback = peer_is_loopback(&x->c->peer);
	peer_str(&x->c->peer, w->addr, sizeof(w->addr));
	if (x->r->has_auth) {
		*why = "wrong token";
		if (!http_token_ok(x->c, x->r->auth))
			return -EKEYREJECTED;
		w->token = w->known = true;
		w->uid = geteuid();
		return 0;
	}
	*why = "a client off loopback needs the token (Authorization: "
	       "Bearer)";
	if (!w->loopback)
		return -EKEYREJECTED;
	*why = "cannot tell which user the client is (its socket is not in "
	       "/proc/net/tcp)";
	if (peer_uid(&x->c->local, &x->c->peer, &w->uid))
		return -EACCES;
	w->known = true;
	return 0;
}

static int send_page(struct http_ctx *x, const char *ctype, char *buf,
		     size_t len)
{
	int ret = http_send(x->c, 200, ctype, NULL, buf, len);

	registry_count_bytes(x->c->fs->registry, len);
	free(buf);
	return ret;
}

/* ---- targets ---- */

/* The pid rt names for this client, checked as a FUSE open is. */
static int target_pid(struct http_ctx *x, const struct http_route *rt,
		      pid_t *pid, const char **why)
{
	int ret = target_resolve(&rt->tgt, 0, x->who.uid, pid);

	*why = errlog_advice(-ENOENT);
	/* an exited process, while the recorder keeps it (past.h) */
	if (ret == -ENOENT && rt->req.last && rt->tgt.kind == TARGET_PID) {
		*pid = rt->tgt.pid;
		ret = past_access(x->c->fs->rec, 0, x->who.uid, *pid);
		if (ret == -EACCES)
			*why = "caller may not ptrace the target";
		return ret;
	}
	if (ret)
		return ret == -EINVAL ? -ENOENT : ret;
	x->pid = *pid;
	ret = access_check(0, x->who.uid, *pid);
	if (ret == -EACCES)
		*why = errlog_advice(ret);
	return ret;
}

/* ---- pages ---- */

/* Write s %-escaped for a URL's query value. */
static void put_query_value(FILE *f, const char *s)
{
	for (; *s; s++)
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("-_.~", *s))
			fputc(*s, f);
		else
			fprintf(f, "%%%02X", (unsigned char)*s);
}

/* "pid=1234", "unit=nginx.service", "name=sshd": a target's query. */
static void put_target_query(FILE *f, const struct target *t)
{
	if (t->kind == TARGET_PID) {
		fprintf(f, "pid=%d", (int)t->pid);
		return;
	}
	fprintf(f, "%s=", target_word(t->kind));
	put_query_value(f, t->id);
}

/* Go's /debug/pprof/ of one target: a link per kind the grammar has. */
static void pprof_links(FILE *f, const struct target *t)
{
	const char *kw;

	fputs("<table>\n", f);
	for (size_t i = 0; (kw = name_kind_word(i)); i++) {
		struct proffs_request req;

		if (name_parse(kw, &req) ||
		    !output_supported(req.kind, req.format) ||
		    (t->kind == TARGET_ALL && !kinds_row(req.kind)->host))
			continue;
		if (t->kind == TARGET_ALL) {
			fprintf(f, "<tr><td><a href=\"/all/%s_5s.%s\">%s</a>"
				"</td></tr>\n", kw, name_format_str(req.format),
				kw);
			continue;
		}
		fprintf(f, "<tr><td><a href=\"/debug/pprof/%s?", kw);
		put_target_query(f, t);
		fprintf(f, "\">%s</a></td><td><a href=\"/debug/pprof/%s?", kw,
			kw);
		put_target_query(f, t);
		fputs("&amp;debug=1\">debug=1</a></td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* The root: every process this client may profile, with links. */
static void process_list(FILE *f, struct http_ctx *x)
{
	char comm[64];
	pid_t *pids;
	size_t n;

	fputs("<p><a href=\"/all/cpu_5s.svg\">every process, 5 s</a> &middot; "
	      "<a href=\"/metrics\">metrics</a> &middot; "
	      "<a href=\"/status\">status</a></p>\n<table>\n", f);
	if (proc_pids(&pids, &n))
		n = 0;
	for (size_t i = 0; i < n; i++) {
		if (access_check(0, x->who.uid, pids[i]) ||
		    proc_comm(pids[i], pids[i], comm, sizeof(comm)))
			continue;
		fprintf(f, "<tr><td>%d</td><td>", (int)pids[i]);
		index_put_html(f, comm);
		fprintf(f, "</td><td><a href=\"/%d/\">files</a></td>"
			"<td><a href=\"/debug/pprof/?pid=%d\">pprof</a></td>"
			"</tr>\n", (int)pids[i], (int)pids[i]);
	}
	fputs("</table>\n", f);
	if (n)
		free(pids);
}

static int index_page(struct http_ctx *x, const struct http_route *rt)
{
	char *buf, title[TARGET_ID_MAX + 32];
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return refuse(x, -ENOMEM, "out of memory");
	if (rt->has_target)
		target_describe(&rt->tgt, title, sizeof(title));
	else
		snprintf(title, sizeof(title), "processes");
	fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
	      "<title>proffs: ", f);
	index_put_html(f, title);
	fputs("</title></head>\n<body>\n<h1>", f);
	index_put_html(f, title);
	fputs("</h1>\n", f);
	if (rt->has_target)
		pprof_links(f, &rt->tgt);
	else
		process_list(f, x);
	fputs("</body></html>\n", f);
	if (fclose(f))
		return refuse(x, -ENOMEM, "out of memory");
	return send_page(x, "text/html; charset=utf-8", buf, len);
}

static int target_index(struct http_ctx *x, const struct http_route *rt)
{
	const char *why, *q = strchr(x->r->target, '?');
	size_t plen = q ? (size_t)(q - x->r->target) : strlen(x->r->target);
	char *buf, loc[600];
	size_t len;
	pid_t pid;
	int ret;

	/* Its links are relative: /1234 must be /1234/. */
	if (x->r->target[plen - 1] != '/' &&
	    (plen < 10 || memcmp(x->r->target + plen - 10, "index.html", 10))) {
		snprintf(loc, sizeof(loc), "Location: %.*s/\r\n", (int)plen,
			 x->r->target);
		return http_send(x->c, 301, "text/plain", loc, "", 0);
	}
	ret = target_pid(x, rt, &pid, &why);
	if (!ret)
		ret = index_html(pid, &buf, &len);
	if (ret)
		return refuse(x, ret, ret == -ENOMEM ? "out of memory" : why);
	return send_page(x, "text/html; charset=utf-8", buf, len);
}

static int cmdline(struct http_ctx *x, const struct http_route *rt)
{
	const char *why;
	char *buf;
	size_t len;
	pid_t pid;
	int ret;

	ret = target_pid(x, rt, &pid, &why);
	if (ret)
		return refuse(x, ret, why);
	buf = malloc(CMDLINE_MAX);
	if (!buf)
		return refuse(x, -ENOMEM, "out of memory");
	ret = proc_read(pid, "cmdline", buf, CMDLINE_MAX, &len);
	if (ret) {
		free(buf);
		return refuse(x, ret, "no such process");
	}
	return send_page(x, "text/plain; charset=utf-8", buf, len);
}

static int counters(struct http_ctx *x, bool metrics)
{
	struct status_src src;
	char *buf;
	size_t len;
	int ret;

	proffs_status_src(x->c->fs, &src);
	ret = metrics ? status_metrics(&src, &buf, &len)
		      : status_text(&src, &buf, &len);
	if (ret)
		return refuse(x, ret, "out of memory");
	return send_page(x, metrics ? "text/plain; version=0.0.4; "
				      "charset=utf-8"
				    : "text/plain; charset=utf-8", buf, len);
}

/* errors.txt: a target's for whoever may profile it, else the
 * client's own (errors.h). */
static int errors_page(struct http_ctx *x, const struct http_route *rt)
{
	const char *why;
	char *buf;
	size_t len;
	pid_t pid = 0;
	int ret;

	if (rt->has_target && rt->tgt.kind != TARGET_ALL &&
	    (ret = target_pid(x, rt, &pid, &why)))
		return refuse(x, ret, why);
	ret = errlog_text(x->c->fs->errors, pid, x->who.uid, &buf, &len);
	if (ret)
		return refuse(x, ret, "out of memory");
	return send_page(x, "text/plain; charset=utf-8", buf, len);
}

/* ---- profiles ---- */

static const char *content_type(enum proffs_format fmt)
{
	switch (fmt) {
	case PROFFS_FMT_SVG:
		return "image/svg+xml";
	case PROFFS_FMT_TXT:
	case PROFFS_FMT_FOLDED:
		return "text/plain; charset=utf-8";
	default:
		return "application/octet-stream";
	}
}

static int profile(struct http_ctx *x, const struct http_route *rt)
{
	struct proffs *fs = x->c->fs;
	struct reg_target t = { 0 };
	struct reg_handle *h;
	const uint8_t *buf;
	const char *why;
	char extra[160], reason[96], sentence[300];
	size_t len;
	int ret;

	t.kernel = access_kernel(0, x->who.uid,
				 name_kind_sleeping(rt->req.kind));
	if (rt->tgt.kind == TARGET_ALL)
		t.uid = x->who.uid == 0 ? REG_ANY_UID : x->who.uid;
	else if ((ret = target_pid(x, rt, &t.pid, &why)))
		return refuse(x, ret, why);
	if (!output_supported(rt->req.kind, rt->req.format)) {
		/* As the mount: no such file (ops.c's classify). */
		snprintf(sentence, sizeof(sentence), "not a file proffs "
			 "serves: %s profiles do not come as .%s%s",
			 name_kind_str(rt->req.kind),
			 name_format_str(rt->req.format),
			 rt->req.kind == PROFFS_KIND_MEMSTATS ?
			 ": memstats.txt" : "");
		return refuse(x, -ENOENT, sentence);
	}
	if ((ret = proffs_check_request(fs, &rt->req, rt->parse_ret, &why))) {
		char both[400];

		proffs_explain(fs, rt->name, &rt->req, ret, why, sentence,
			       sizeof(sentence));
		/* the log's reason, then what to do */
		snprintf(both, sizeof(both), "%s%s%s", why,
			 strcmp(why, sentence) ? ": " : "",
			 strcmp(why, sentence) ? sentence : "");
		return refuse(x, ret, both);
	}
	if (x->c->head_only)	/* no profile for a HEAD: it would cost one */
		return http_send(x->c, 200, content_type(rt->req.format), NULL,
				 NULL, 0);
	ret = registry_open(fs->registry, &t, &rt->req, &h, reason,
			    sizeof(reason));
	if (ret)
		return refuse(x, ret, reason);
	ret = http_wait(x->c, h, &buf, &len);
	if (ret == -EINTR) {
		pr_info("http: %s: %s: the client went away", x->who.addr,
			x->r->target);
		registry_release(h);
		return -EPIPE;
	}
	if (ret) {
		registry_release(h);
		return refuse(x, ret, strerror(-ret));
	}
	snprintf(extra, sizeof(extra), "Content-Disposition: %s; "
		 "filename=\"profile.%s\"\r\n", rt->req.format ==
		 PROFFS_FMT_PB_GZ || rt->req.format == PROFFS_FMT_PB ?
		 "attachment" : "inline", name_format_str(rt->req.format));
	ret = http_send(x->c, 200, content_type(rt->req.format), extra, buf,
			len);
	registry_release(h);
	return ret;
}

int http_serve(struct http_conn *c, const struct http_request *r)
{
	struct http_ctx x = { .c = c, .r = r };
	struct http_route rt;
	const char *why;
	int ret;

	ret = identify(&x, &why);
	if (!ret)
		ret = http_route(r->target, &rt, &why);
	if (ret)
		return refuse(&x, ret, why);
	switch (rt.type) {
	case HTTP_ROUTE_ROOT:
	case HTTP_ROUTE_PPROF_INDEX:
		return index_page(&x, &rt);
	case HTTP_ROUTE_METRICS:
		return counters(&x, true);
	case HTTP_ROUTE_STATUS:
		return counters(&x, false);
	case HTTP_ROUTE_INDEX:
		return target_index(&x, &rt);
	case HTTP_ROUTE_CMDLINE:
		return cmdline(&x, &rt);
	case HTTP_ROUTE_PROFILE:
		return profile(&x, &rt);
	case HTTP_ROUTE_ERRORS:
		return errors_page(&x, &rt);
	case HTTP_ROUTE__COUNT:
		break;
	}
	return refuse(&x, -ENOENT, "no such page");
}
