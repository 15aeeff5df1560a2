/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mountwatch.h - end the FUSE connection when our mount is gone from the
 * daemon's mount namespace but lives on in another one.
 *
 * A mount namespace made while proffs is mounted (unshare --mount, a
 * container, a systemd service with PrivateMounts) holds a copy of the
 * mount. fusermount3 -u removes ours only; the kernel keeps the
 * connection while the copy exists, so the daemon never learns that it
 * was unmounted and never exits (issue 19: "daemon did not exit within
 * 30 s of the unmount"; such daemons exited the instant the last other
 * namespace died). The watcher thread sees the mount leave
 * /proc/self/mountinfo and, once it has been gone for a moment and no
 * request is in flight (or for long), aborts the connection through
 * fusectl (/sys/fs/fuse/connections/N/abort): the session loop then
 * ends and the daemon exits as after any unmount.
 *
 * mountwatch_start() owns the thread; mountwatch_stop() ends and frees
 * it (NULL is a no-op). Errors are negative errno values, logged.
 */
#ifndef PROFFS_MOUNTWATCH_H
#define PROFFS_MOUNTWATCH_H

struct mountwatch;

/* Watch the proffs mount at mountpoint: absolute and resolved, as
 * libfuse's command line parser gives it (resolving it here would stat
 * our own mount before the session loop runs, and wait forever). */
int mountwatch_start(const char *mountpoint, struct mountwatch **out);
void mountwatch_stop(struct mountwatch *w);

#endif
