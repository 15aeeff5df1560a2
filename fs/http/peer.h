/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * peer.h - who is at the other end of a TCP connection to the daemon.
 *
 * A client on the same machine (a loopback address) is the uid that owns
 * its end of the connection: the kernel lists every TCP socket of the
 * network namespace in /proc/net/tcp and tcp6 with its owner's uid, and
 * the client's socket is the one whose local address is our peer and
 * whose remote address is our end. The owner is whoever created the
 * socket (its effective uid then), as FUSE's caller is the uid of the
 * process that reads: so HTTP on loopback is checked like the mount.
 *
 * Stateless; reads /proc on every call. Errors: -ENOENT (no such socket
 * any more: the client left), -EAFNOSUPPORT, -errno from reading /proc.
 */
#ifndef PROFFS_PEER_H
#define PROFFS_PEER_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

/* 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. */
bool peer_is_loopback(const struct sockaddr_storage *sa);

/* The uid owning the client's end of the connection local <- peer. */
int peer_uid(const struct sockaddr_storage *local,
	     const struct sockaddr_storage *peer, uid_t *uid);

/* "127.0.0.1:43210", "[::1]:43210": for logs. */
void peer_str(const struct sockaddr_storage *sa, char *buf, size_t size);

#endif
