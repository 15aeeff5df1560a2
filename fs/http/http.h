/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * http.h - the daemon's HTTP/1.1 server (-o http=ADDR:PORT): the mount's
 * namespace for Go's client and fleet scrapers (SPEC §9; the paths are
 * in http_parse.h). It serves the same sessions, results and renderers
 * as the mount, through the registry: identical concurrent requests
 * share one session, and a client that goes away ends its wait as an
 * interrupted read does (its session stops when nobody else waits).
 *
 * Who may see what is the mount's rule (SPEC §5): a client on loopback
 * is the uid owning its socket (peer.h) and may profile what that uid
 * could ptrace; any other client must send the token of
 * -o http_token=FILE (Authorization: Bearer), and is refused with 401
 * without it; the token stands for the daemon's own rights. Every
 * refusal is logged on one line and counted (status.h).
 *
 * A thread accepts, and each connection has a thread of its own while it
 * lasts (at most HTTP_MAX_CONNS at once); a wait for a profile holds
 * that thread, polling the socket for the client's leaving. Nothing
 * listens unless asked.
 *
 * Errors: negative errno; http_start() logs why it failed.
 */
#ifndef PROFFS_HTTP_H
#define PROFFS_HTTP_H

struct proffs;
struct http_server;

#define HTTP_MAX_CONNS 128

/*
 * Listen on addr ("127.0.0.1:6060", "[::1]:6060", "0.0.0.0:0": port 0
 * picks one; the log line says which) and serve fs, which must outlive
 * the server. token_file may be NULL (then only loopback is served).
 */
int http_start(struct proffs *fs, const char *addr, const char *token_file,
	       struct http_server **out);

/* Stop listening, end every connection and wait for their threads.
 * NULL is a no-op. */
void http_stop(struct http_server *s);

#endif
