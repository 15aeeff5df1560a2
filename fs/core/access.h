/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * access.h - who may profile whom (SPEC §5).
 *
 * A caller may profile a target only if it could ptrace it: the caller is
 * root or holds CAP_SYS_PTRACE, or the caller's uid equals the target's
 * real, effective and saved uids and the target is dumpable (a
 * non-dumpable process's /proc entries belong to root). Decided afresh on
 * every call from /proc, never cached: a pid can be reused.
 *
 * Returns 0 (allowed), -EACCES (not allowed) or -ENOENT (no such target).
 */
#ifndef PROFFS_ACCESS_H
#define PROFFS_ACCESS_H

#include <stdbool.h>
#include <sys/types.h>

int access_check(pid_t caller_pid, uid_t caller_uid, pid_t target);

/* Whether the caller may profile every process: root, or CAP_SYS_PTRACE
 * in caller_pid's effective set (caller_pid 0: no process to ask). */
bool access_privileged(pid_t caller_pid, uid_t caller_uid);

/*
 * Whether the caller may see kernel frames, which the daemon (root) may
 * see whoever asks: as perf would show them to the caller itself (root,
 * CAP_PERFMON or CAP_SYS_ADMIN, or anyone where perf_event_paranoid is
 * 1 or less); with sleeping, the kernel stacks of sleeping threads,
 * which the kernel shows root alone (/proc/PID/task/TID/stack:
 * CAP_SYS_ADMIN). caller_pid 0: by the uid alone.
 */
bool access_kernel(pid_t caller_pid, uid_t caller_uid, bool sleeping);

#endif
