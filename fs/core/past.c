// SPDX-License-Identifier: GPL-2.0-or-later
/* past.c - `last` windows and base= differences from the recorder. */
#include <errno.h>
#include <stdio.h>

#include "fs/core/access.h"
#include "fs/core/kinds.h"
#include "sampler/log.h"
#include "fs/core/past.h"
#include "sampler/model/profile.h"
#include "sampler/model/profile_merge.h"
#include "sampler/record/record.h"

int past_check(const struct recorder *rec, const struct proffs_request *req,
	       const char **why)
{
	uint64_t need;

	if (!req->last && req->base == PROFFS_BASE_NONE)
		return 0;
	if (req->kind == PROFFS_KIND_TRACE) {
		*why = "trace takes no last window or base= (the recorder "
		       "keeps per-second counts, not a timeline)";
		return -EINVAL;
	}
	if (!(kinds_row(req->kind)->key & KIND_KEY_PAST)) {
		*why = "last windows and base= are for cpu profiles (the "
		       "recorder samples CPU)";
		return -EINVAL;
	}
	if (!rec) {
		*why = "no flight recorder: the daemon runs without "
		       "-o record";
		return -EINVAL;
	}
	if (req->base != PROFFS_BASE_NONE &&
	    req->format == PROFFS_FMT_FOLDED) {
		*why = "base= differences are served as .pb.gz, .pb, .svg "
		       "and .txt";
		return -EINVAL;
	}
	if (req->base != PROFFS_BASE_NONE && req->sample[0]) {
		*why = "base= differences do not take sample=";
		return -EINVAL;
	}
	need = req->last ? req->window_ms : 0;
	if (req->base == PROFFS_BASE_PREV)
		need += req->window_ms;
	if (req->base == PROFFS_BASE_LAST && req->base_ms > need)
		need = req->base_ms;
	if (need > record_span_s(rec) * 1000ull) {
		*why = "the window (with its base) reaches further back than "
		       "the recorder keeps (record_s)";
		return -EINVAL;
	}
	return 0;
}

/* The live-read rule over credentials the recorder saw. */
static bool may_see(pid_t caller_pid, uid_t caller_uid,
		    const struct proc_creds *c)
{
	return access_privileged(caller_pid, caller_uid) ||
	       (c->ruid == caller_uid && c->euid == caller_uid &&
		c->suid == caller_uid && c->owner == caller_uid);
}

int past_access(struct recorder *rec, pid_t caller_pid, uid_t caller_uid,
		pid_t pid)
{
	struct proc_creds c;

	if (!rec || record_creds(rec, pid, &c, NULL))
		return -ENOENT;
	return may_see(caller_pid, caller_uid, &c) ? 0 : -EACCES;
}

bool past_known(struct recorder *rec, pid_t pid, uid_t *owner)
{
	struct proc_creds c;

	if (!rec || record_creds(rec, pid, &c, NULL))
		return false;
	*owner = c.owner;
	return true;
}

/* A whole-host read's filter: what uid may profile, live or not. */
static bool allow(pid_t pid, const struct proc_creds *c, bool exited,
		  void *arg)
{
	uid_t uid = *(const uid_t *)arg;

	if (uid == (uid_t)-1)
		return true;
	if (!exited)
		return !access_check(0, uid, pid);
	return may_see(0, uid, c);
}

static int window(struct recorder *rec, pid_t pid, uid_t uid,
		  uint64_t end_ago_ms, uint64_t window_ms,
		  struct profile **out)
{
	char title[64];
	struct record_query q = {
		.pid = pid, .allow = allow, .allow_arg = &uid,
		.all_title = title, .end_ago_ms = end_ago_ms,
		.window_ms = window_ms,
	};

	if (uid == (uid_t)-1)
		snprintf(title, sizeof(title), "all processes");
	else
		snprintf(title, sizeof(title), "all processes of uid %u",
			 (unsigned)uid);
	return record_profile(rec, &q, out);
}

int past_window(struct recorder *rec, pid_t pid, uid_t uid,
		const struct proffs_request *req, struct profile **out)
{
	if (!rec)
		return -EINVAL;
	return window(rec, pid, uid, 0, req->window_ms, out);
}

int past_diff(struct recorder *rec, pid_t pid, uid_t uid,
	      const struct proffs_request *req, struct profile **cur)
{
	static const char *const base_label[] = { "pprof::base", "true",
						  NULL };
	static const char *const none[] = { NULL };
	uint64_t end_ago = 0, len = req->window_ms;
	struct profile *base = NULL, *d = NULL;
	char text[160];
	int ret;

	if (!rec)
		return -EINVAL;
	if (req->base == PROFFS_BASE_PREV) {
		/* A last window ends now; a fresh one ended a moment ago,
		 * and the recorder's buckets are whole seconds. */
		end_ago = req->window_ms;
	} else {
		len = req->base_ms;
	}
	ret = window(rec, pid, uid, end_ago, len, &base);
	if (!ret)
		ret = profile_copy_dropping_labels(*cur, none, &d);
	/* The base per second of the window's: a 60 s base against a 5 s
	 * window counts 5/60 of its samples. */
	if (!ret)
		ret = profile_append(d, base, -(int64_t)req->window_ms,
				     (int64_t)len, base_label);
	if (!ret) {
		snprintf(text, sizeof(text), "proffs: difference with %s "
			 "(%.0f s from the flight recorder, scaled to this "
			 "window; base samples are labelled pprof::base=true "
			 "and negative)", req->base == PROFFS_BASE_PREV ?
			 "the window before" : "base=last", len / 1e3);
		ret = profile_add_comment(d, text);
	}
	profile_free(base);
	if (ret) {
		profile_free(d);
		return ret;
	}
	profile_free(*cur);
	*cur = d;
	return 0;
}
