/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * target.h - which process a request means: a pid, or a name that stays
 * when the pid changes (SPEC §9), in the mount and over HTTP:
 *
 *   /prof/<pid>/            that process
 *   /prof/unit/<unit>/      a systemd unit's main process ("nginx" is
 *                           "nginx.service", as systemctl has it)
 *   /prof/name/<comm>/      the oldest process of that command name the
 *                           caller may profile; <comm>@N the N-th oldest,
 *                           <comm>@newest the newest
 *   /prof/all/              every process the caller may profile
 *
 * A unit's main process is found without systemd or D-Bus, as systemd
 * itself guesses it: the unit's cgroup (under the cgroup2 mount, or the
 * name=systemd hierarchy of a hybrid or legacy machine), and among the
 * processes directly in it those whose parent is not, the oldest. So a
 * unit answers the same whoever started it, systemd or not, and a name
 * is resolved afresh on every use: after a restart it means the new
 * process.
 *
 * Stateless; reads /proc and /sys on every call. Errors: -EINVAL (not a
 * name: empty, '/', too long), -ENOENT (names no process now), -ENOMEM.
 */
#ifndef PROFFS_TARGET_H
#define PROFFS_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum target_kind {
	TARGET_PID,
	TARGET_UNIT,
	TARGET_NAME,
	TARGET_ALL,
};

#define TARGET_ID_MAX 128	/* a unit name or a comm[@selector] */

struct target {
	enum target_kind kind;
	pid_t pid;			/* TARGET_PID */
	char id[TARGET_ID_MAX];		/* TARGET_UNIT, TARGET_NAME */
};

/* The directory word of a kind ("unit", "name", "all"; NULL for a pid)
 * and back: 0, or -ENOENT for a word that names none. */
const char *target_word(enum target_kind kind);
int target_kind_of(const char *word, size_t len, enum target_kind *kind);

/* Fill *t with a kind and its id (len bytes, not NUL-terminated);
 * -EINVAL when id cannot be a unit or a command name. */
int target_set(struct target *t, enum target_kind kind, const char *id,
	       size_t len);

/*
 * The pid t means now, for a caller (caller_pid 0 when there is no
 * calling process: over HTTP). A pid is itself (-ENOENT when gone); a
 * name picks among the processes the caller may profile (access.h); a
 * unit's main process is whoever's. TARGET_ALL has no pid: -EINVAL.
 */
int target_resolve(const struct target *t, pid_t caller_pid,
		   uid_t caller_uid, pid_t *out);

/* "pid 1234", "unit nginx.service", "name sshd", "all": for logs. */
void target_describe(const struct target *t, char *buf, size_t size);

#endif
