/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * status.h - what the daemon has done, for whoever watches it: the same
 * counters as /prof/status ("key: value" lines an operator or a script
 * reads) and as GET /metrics over HTTP (Prometheus' text format, 0.0.4):
 * sessions by kind and result, samples and lost samples, bytes served,
 * refusals by reason and by way in (the mount or HTTP), heap agent loads
 * and their outcomes, and session latency as a histogram; and what the
 * daemon itself costs: its CPU time, its resident memory, and each
 * cache's size with its bound and expiry (the ELF/DWARF objects of
 * dso.h, the kernel's symbols of kallsyms.h).
 *
 * Refusals are counted by the FUSE handlers and the HTTP server
 * (status_refused()), by errno: every open and every change the daemon
 * answered with an error - the ones each logged with a notice line -
 * whereas a kind's failed sessions are counted by the registry. Counting
 * is lock-free and may be called from any thread.
 *
 * On success *buf is malloc()ed and owned by the caller; -ENOMEM.
 */
#ifndef PROFFS_STATUS_H
#define PROFFS_STATUS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct dso_cache;
struct heap_agents;
struct kallsyms;
struct recorder;
struct registry;

/* The errnos counted by name; any other counts as other. EKEYREJECTED
 * stands for an HTTP client without a valid token (401). */
#define STATUS_REFUSALS(X) X(EACCES) X(EBUSY) X(EINVAL) X(ENOENT) \
	X(EPERM) X(EROFS) X(ENAMETOOLONG) X(EKEYREJECTED)

struct status_refusals {
#define STATUS_FIELD(e) _Atomic unsigned long long e##_n;
	STATUS_REFUSALS(STATUS_FIELD)
#undef STATUS_FIELD
	_Atomic unsigned long long other_n;
};

/* Count one request refused with err (positive or negative errno). */
void status_refused(struct status_refusals *c, int err);

/* Where the numbers come from; all borrowed. http may be NULL. */
struct status_src {
	struct registry *registry;
	struct heap_agents *heap;
	const struct status_refusals *fuse;	/* refused through the mount */
	const struct status_refusals *http;	/* ... over HTTP, or NULL */
	uint64_t uptime_s;
	struct dso_cache *dsos;			/* may be NULL */
	struct kallsyms *ksyms;			/* may be NULL */
	struct recorder *rec;			/* NULL: no -o record */
	const char *log_where;	/* "syslog", a file, "stderr"; or NULL */
	size_t inodes;		/* the mount's, the kernel holds (gone.h) */
};

/* /prof/status: "key: value" lines, every value an integer but the
 * version's; then "# " lines for people: where the log goes, the
 * sessions in flight with their elapsed and remaining time, the last
 * warnings. */
int status_text(const struct status_src *src, char **buf, size_t *len);

/* GET /metrics: Prometheus' text exposition format. */
int status_metrics(const struct status_src *src, char **buf, size_t *len);

#endif
