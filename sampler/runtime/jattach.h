/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jattach.h - the HotSpot dynamic attach protocol, as jcmd and jattach
 * speak it: one command to a running JVM, its reply read back. No agent,
 * no flag, no restart.
 *
 * The JVM listens on a Unix socket, /tmp/.java_pid<N> (N: the pid the JVM
 * has in its own pid namespace), reached through /proc/PID/root so that a
 * JVM in a container is found. Until a first attach it has no listener:
 * an empty trigger file .attach_pid<N> in its working directory (else in
 * its /tmp) and a SIGQUIT make it start one (a thread, "Attach Listener",
 * that stays for the life of the JVM). SIGQUIT is sent only to a process
 * that catches it (SigCgt), since its default action ends the process (a
 * JVM started with -Xrs does not catch it, and starts its listener at
 * startup instead). The trigger file is removed again.
 *
 * A request is "1\0" CMD "\0" then three arguments, each NUL-terminated;
 * the reply is a decimal result code on its own line, then the command's
 * output, until the JVM closes the socket. The JVM accepts a peer of its
 * own effective uid and gid, or root; the socket is used only if it
 * belongs to the target's user or root (anyone may create files in /tmp).
 *
 * The caller decides whether it may attach (the ptrace rule, access.h):
 * nothing here checks who asked. Blocking: up to JATTACH_START_MS for a
 * listener to appear, JATTACH_REPLY_MS for a reply. Errors are negative
 * errno values: -ENOENT (no such process), -EPERM (SIGQUIT not caught,
 * a socket of another user), -ETIMEDOUT (no listener, no reply), -EPROTO
 * (a reply without a result code), -EREMOTEIO (a non-zero result code:
 * the reply is still given), -ENOMEM.
 */
#ifndef PROFFS_JATTACH_H
#define PROFFS_JATTACH_H

#include <stddef.h>
#include <sys/types.h>

#define JATTACH_START_MS 5000
#define JATTACH_REPLY_MS 10000
#define JATTACH_MAX_REPLY (8u << 20)	/* longer replies are cut */

/*
 * Send cmd with up to three arguments (NULL is "") to pid's JVM. *out
 * (malloc()ed, NUL-terminated, the caller frees it) is the output after
 * the result code line, *len its length; set on 0 and on -EREMOTEIO.
 */
int jattach(pid_t pid, const char *cmd, const char *const args[3],
	    char **out, size_t *len);

#endif
