// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * check.c - the daemon's limits on a request, the same whether it came
 * through the mount or over HTTP: a value the name grammar accepts may
 * still be more than this daemon allows (max_window, max_hz), or a kind
 * it cannot take here (heap=uprobe without root); and what the user is
 * told when it says no.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs/core/errors.h"
#include "sampler/heap/heap.h"
#include "fs/core/kinds.h"
#include "fs/core/past.h"
#include "fs/core/daemon.h"

int proffs_check_limits(const struct proffs *fs,
			const struct proffs_request *req, int parse_ret,
			const char **why)
{
	if (parse_ret) {
		*why = "bad value in the file name";
		return parse_ret;
	}
	/* A past window waits for nothing: record_s bounds it. */
	if (!req->last && req->window_ms > fs->opts.max_window_s * 1000ull) {
		*why = "window longer than max_window";
		return -EINVAL;
	}
	if (req->hz > fs->opts.max_hz) {
		*why = "hz above max_hz";
		return -EINVAL;
	}
	return past_check(fs->rec, req, why);
}

int proffs_check_request(const struct proffs *fs,
			 const struct proffs_request *req, int parse_ret,
			 const char **why)
{
	int ret = proffs_check_limits(fs, req, parse_ret, why);

	if (ret)
		return ret;
	if (kinds_row(req->kind)->uprobes &&
	    (ret = heap_agents_check(fs->heap))) {
		*why = "heap=uprobe needs root (CAP_SYS_ADMIN) to place "
		       "uprobes";
		return ret;
	}
	return 0;
}

void proffs_explain(const struct proffs *fs, const char *name,
		    const struct proffs_request *req, int err,
		    const char *why, char *buf, size_t len)
{
	struct proffs_request again;

	if (!len)
		return;
	if (err == -EINVAL && name_parse_why(name, &again, buf, len))
		return;
	if (err == -EINVAL && req->window_ms > fs->opts.max_window_s * 1000ull)
		snprintf(buf, len, "a window of %llu s is longer than "
			 "max_window (%u s): ask for %s_%us or less, or mount "
			 "with -o max_window=N", (unsigned long long)
			 (req->window_ms + 999) / 1000, fs->opts.max_window_s,
			 name_kind_str(req->kind), fs->opts.max_window_s);
	else if (err == -EINVAL && req->hz > fs->opts.max_hz)
		snprintf(buf, len, "hz=%u is above max_hz (%u): ask for "
			 "hz=%u or less, or mount with -o max_hz=N", req->hz,
			 fs->opts.max_hz, fs->opts.max_hz);
	else if (err == -EACCES || err == -ENOENT || err == -EROFS)
		snprintf(buf, len, "%s", errlog_advice(err));
	else
		snprintf(buf, len, "%s", why ? why : errlog_advice(err));
}
