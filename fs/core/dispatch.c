// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dispatch.c - what a kind's row says to do, done: its run function for a
 * session (and the session's line in the log), its renderer for a format
 * (dispatch.h). The one module that calls through the rows, above both
 * the table (kinds.c) and the functions it names (run.c, output.c).
 */
#include <errno.h>
#include <string.h>

#include "fs/core/dispatch.h"
#include "fs/core/kinds.h"
#include "fs/core/name.h"
#include "sampler/clock.h"
#include "sampler/log.h"

bool dispatch_supported(enum proffs_kind kind, enum proffs_format fmt)
{
	const struct kind_ops *k = kinds_row(kind);

	return k && (unsigned)fmt < PROFFS_FMT__COUNT && k->render[fmt];
}

int dispatch_render(const struct profile *p, const struct proffs_request *req,
		    uint8_t **buf, size_t *len)
{
	const struct kind_ops *k = kinds_row(req->kind);

	if (!dispatch_supported(req->kind, req->format))
		return -ENOENT;
	return k->render[req->format](p, req, k, buf, len);
}

static void log_outcome(const struct run_ctx *c, const struct run_result *r,
			int ret, uint64_t ms)
{
	const char *kind = name_kind_str(c->req->kind);

	if (!ret && r->harm[0])
		pr_err("session %u done: pid=%d kind=%s window_ms=%llu %s "
		       "elapsed_ms=%llu result=harmed: %s", c->id, (int)c->pid,
		       kind, (unsigned long long)r->window_ms, r->detail,
		       (unsigned long long)ms, r->harm);
	else if (!ret)
		pr_info("session %u done: pid=%d kind=%s window_ms=%llu %s "
			"elapsed_ms=%llu result=ok", c->id, (int)c->pid, kind,
			(unsigned long long)r->window_ms, r->detail,
			(unsigned long long)ms);
	else if (ret == -ECANCELED)
		pr_info("session %u stopped: pid=%d kind=%s elapsed_ms=%llu "
			"result=stopped: no readers left", c->id, (int)c->pid,
			kind, (unsigned long long)ms);
	else if (ret == -ENOMEM || ret == -EIO)	/* ours */
		pr_warn("session %u failed: pid=%d kind=%s elapsed_ms=%llu "
			"result=%s: %s", c->id, (int)c->pid, kind,
			(unsigned long long)ms, strerrorname_np(-ret),
			strerror(-ret));
	else	/* the target's state: traced, gone, not allowed */
		pr_notice("session %u failed: pid=%d kind=%s elapsed_ms=%llu "
			  "result=%s: %s", c->id, (int)c->pid, kind,
			  (unsigned long long)ms, strerrorname_np(-ret),
			  ret == -EBUSY ? kinds_row(c->req->kind)->busy :
			  strerror(-ret));
}

int dispatch_run(const struct run_ctx *c, struct profile **out,
		 struct run_outcome *outcome)
{
	const struct kind_ops *k = kinds_row(c->req->kind);
	struct run_result r = { .detail = "", .harm = "" };
	uint64_t t0 = now_ms();
	int ret;

	r.window_ms = kinds_window_ms(c->req);
	ret = k && k->run ? k->run(c, out, &r) : -ENOENT;
	*outcome = (struct run_outcome){ .samples = r.samples, .lost = r.lost,
					 .elapsed_ms = now_ms() - t0 };
	log_outcome(c, &r, ret, outcome->elapsed_ms);
	return ret;
}
