// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * errors.c - a ring of ERRLOG_CAP entries, written by the FUSE handlers,
 * the HTTP server and the registry, read as errors.txt.
 *
 * An entry is about 480 bytes: the ring is 120 KiB at most, allocated as
 * entries come.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/core/errors.h"

struct entry {
	time_t when;		/* the last time it happened */
	pid_t pid;
	uid_t uid;
	int err;		/* positive */
	unsigned count;		/* times in a row */
	char name[160];
	char why[300];
};

struct errlog {
	pthread_mutex_t lock;
	struct entry *ring;	/* ERRLOG_CAP, allocated on first add */
	unsigned next;		/* protected by lock: next slot */
	unsigned n;		/* protected by lock: entries held */
};

int errlog_new(struct errlog **out)
{
	struct errlog *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	pthread_mutex_init(&l->lock, NULL);
	*out = l;
	return 0;
}

void errlog_free(struct errlog *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->lock);
	free(l->ring);
	free(l);
}

const char *errlog_advice(int err)
{
	switch (abs(err)) {
	case ENOENT:
	case ESRCH:
		return "no such process (it exited?): ls /prof lists the "
		       "processes you may profile";
	case EACCES:
		return "you may not profile this process (you may not ptrace "
		       "it): only your own (same uid, dumpable), or any as "
		       "root";
	case EPERM:
		return "the daemon lacks a privilege this kind needs: run it "
		       "as root";
	case EBUSY:
		return "busy: too many sessions at once (max_sessions), or "
		       "the process is traced by a debugger; try again";
	case EINVAL:
		return "a bad value in the name: see the grammar in "
		       "proffs --help";
	case EROFS:
		return "profiles are read-only: copy them out with cp";
	case ENAMETOOLONG:
		return "the name is longer than max_name";
	case EINTR:
		return "the read was interrupted";
	case ENOEXEC:
	case EOPNOTSUPP:
		return "the heap agent cannot be loaded into this process "
		       "(static, or no dlopen) and no fallback may be used";
	default:
		return "the session failed: the daemon's log says more "
		       "(/prof/status names where it goes)";
	}
}

void errlog_add(struct errlog *l, pid_t pid, uid_t uid, const char *name,
		int err, const char *why)
{
	struct entry *e;

	if (!why || !why[0])
		why = errlog_advice(err);
	err = abs(err);
	pthread_mutex_lock(&l->lock);
	if (!l->ring && !(l->ring = calloc(ERRLOG_CAP, sizeof(*l->ring)))) {
		pthread_mutex_unlock(&l->lock);
		return;
	}
	e = l->n ? &l->ring[(l->next + ERRLOG_CAP - 1) % ERRLOG_CAP] : NULL;
	if (e && e->pid == pid && e->uid == uid && e->err == err &&
	    !strncmp(e->name, name, sizeof(e->name) - 1)) {
		e->count++;
	} else {
		e = &l->ring[l->next];
		l->next = (l->next + 1) % ERRLOG_CAP;
		if (l->n < ERRLOG_CAP)
			l->n++;
		*e = (struct entry){ .pid = pid, .uid = uid, .err = err,
				     .count = 1 };
		snprintf(e->name, sizeof(e->name), "%s", name);
	}
	snprintf(e->why, sizeof(e->why), "%s", why);
	e->when = time(NULL);
	pthread_mutex_unlock(&l->lock);
}

static void put(FILE *f, const struct entry *e, bool with_pid)
{
	const char *ename = strerrorname_np(e->err);
	struct tm tm;
	char when[32];

	localtime_r(&e->when, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(f, "%s ", when);
	if (with_pid && e->pid)
		fprintf(f, "%d/", (int)e->pid);
	fprintf(f, "%s: %s: %s", e->name, ename ? ename : "?", e->why);
	if (e->count > 1)
		fprintf(f, " (%u times)", e->count);
	fputc('\n', f);
}

int errlog_text(struct errlog *l, pid_t pid, uid_t uid, char **buf,
		size_t *len)
{
	FILE *f = open_memstream(buf, len);

	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&l->lock);
	for (unsigned i = 1; i <= l->n; i++) {
		const struct entry *e =
			&l->ring[(l->next + ERRLOG_CAP - i) % ERRLOG_CAP];

		if (pid ? e->pid == pid : e->uid == uid)
			put(f, e, !pid);
	}
	pthread_mutex_unlock(&l->lock);
	return fclose(f) ? -ENOMEM : 0;
}
