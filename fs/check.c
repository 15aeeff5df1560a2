// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * check.c - the daemon's limits on a request, the same whether it came
 * through the mount or over HTTP: a value the name grammar accepts may
 * still be more than this daemon allows (max_window, max_hz), or a kind
 * it cannot take here (heap=uprobe without root).
 */
#include <errno.h>

#include "heap.h"
#include "kinds.h"
#include "past.h"
#include "proffs_i.h"

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
