// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wait.c - FUSE reads and stats of a profile as registry waits (wait.h).
 *
 * The interrupt callback is registered between registry_wait_new() and
 * registry_wait_start(): libfuse may call it at once (the request was
 * interrupted already), and the request must not be touched once the
 * wait's callback may have replied to it.
 */
#include <errno.h>
#include <stdlib.h>

#include "fs/core/registry.h"
#include "fs/fuse/wait.h"

struct stat_wait {
	fuse_req_t req;
	struct stat st;
};

static void on_interrupt(fuse_req_t req, void *data)
{
	(void)req;
	registry_wait_cancel(data);
}

static void park(fuse_req_t req, struct reg_wait *w)
{
	fuse_req_interrupt_func(req, on_interrupt, w);
	registry_wait_start(w);
}

static void read_done(void *arg, int err, const uint8_t *buf, size_t len,
		      size_t total)
{
	(void)total;
	if (err)
		fuse_reply_err(arg, -err);
	else
		fuse_reply_buf(arg, (const char *)buf, len);
}

void fuse_wait_read(fuse_req_t req, struct reg_handle *h, size_t size,
		    off_t off)
{
	struct reg_wait *w;

	if (!size) {	/* 0 would ask for the size alone */
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (registry_wait_new(h, off, size, read_done, req, &w)) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	park(req, w);
}

static void stat_done(void *arg, int err, const uint8_t *buf, size_t len,
		      size_t total)
{
	struct stat_wait *sw = arg;

	(void)buf;
	(void)len;
	if (err) {
		fuse_reply_err(sw->req, -err);
	} else {
		sw->st.st_size = total;
		fuse_reply_attr(sw->req, &sw->st, 0);
	}
	free(sw);
}

static struct stat_wait *stat_wait_new(fuse_req_t req, const struct stat *st)
{
	struct stat_wait *sw = malloc(sizeof(*sw));

	if (sw)
		*sw = (struct stat_wait){ .req = req, .st = *st };
	else	/* the size a stat gives before any profile is ready */
		fuse_reply_attr(req, st, 0);
	return sw;
}

void fuse_wait_fstat(fuse_req_t req, struct reg_handle *h,
		     const struct stat *st)
{
	struct stat_wait *sw = stat_wait_new(req, st);
	struct reg_wait *w;

	if (!sw)
		return;
	if (registry_wait_new(h, 0, 0, stat_done, sw, &w)) {
		free(sw);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	park(req, w);
}

void fuse_wait_stat(fuse_req_t req, struct registry *r,
		    const struct reg_target *t,
		    const struct proffs_request *preq, const struct stat *st)
{
	struct stat_wait *sw = stat_wait_new(req, st);
	struct reg_wait *w;
	int ret;

	if (!sw)
		return;
	ret = registry_wait_size(r, t, preq, stat_done, sw, &w);
	if (ret) {	/* logged */
		free(sw);
		fuse_reply_err(req, -ret);
		return;
	}
	park(req, w);
}
