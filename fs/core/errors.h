/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * errors.h - the recent refusals and failures, for the user who met them:
 * /prof/<pid>/errors.txt (those concerning pid) and /prof/errors.txt (the
 * caller's own, a pid or not), over HTTP the same files. Newest first, one
 * line each: time, file name, errno name and a sentence saying what to do,
 * e.g.
 *
 *   07:51:02 cpu_5.pb.gz: EINVAL: a duration needs a unit: cpu_5s.pb.gz
 *            or cpu_500ms.pb.gz
 *
 * Bounded: the last ERRLOG_CAP entries of the whole daemon, whoever met
 * them; an entry repeated at once (same pid, uid, name and errno) is
 * counted, not added. Who sees what is decided by the caller of
 * errlog_text() (ops.c, http_serve.c): pid's entries to whoever may
 * profile pid, a uid's own entries to that uid.
 *
 * Thread-safe (one mutex, never held across a call out). Errors are
 * negative errno values; on success *buf is malloc()ed and the caller's.
 */
#ifndef PROFFS_ERRORS_H
#define PROFFS_ERRORS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define ERRLOG_CAP 256
#define ERRLOG_NO_UID ((uid_t)-1)	/* a failure nobody's own (a session) */

struct errlog;

int errlog_new(struct errlog **out);
void errlog_free(struct errlog *l);	/* NULL is a no-op */

/*
 * Note that name (a file name, a path or an HTTP target) met err (a
 * negative or positive errno) for uid about pid (0: no pid), with why,
 * the sentence for the user (NULL or "": errlog_advice()'s). Never fails:
 * without memory the oldest entry is overwritten.
 */
void errlog_add(struct errlog *l, pid_t pid, uid_t uid, const char *name,
		int err, const char *why);

/*
 * The entries of pid (pid > 0), or of uid (pid 0: every entry uid met,
 * with its pid in the name), newest first. "" when there is none.
 * -ENOMEM.
 */
int errlog_text(struct errlog *l, pid_t pid, uid_t uid, char **buf,
		size_t *len);

/* What to do about err, in general: for entries with no sentence of
 * their own (a session that failed). Never NULL. */
const char *errlog_advice(int err);

#endif
