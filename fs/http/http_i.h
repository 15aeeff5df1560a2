/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * http_i.h - between the HTTP server's connections (http.c: sockets,
 * heads, waits, responses) and what a request gets (http_serve.c).
 */
#ifndef PROFFS_HTTP_I_H
#define PROFFS_HTTP_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "fs/http/http_parse.h"

struct proffs;
struct reg_handle;

/* Who a client is, decided once per request. */
struct http_who {
	bool loopback;
	bool token;		/* sent the daemon's token */
	bool known;		/* uid is known (loopback, or the token) */
	uid_t uid;
	char addr[64];		/* "127.0.0.1:43210", for the log */
};

struct http_conn {
	struct http_server *srv;
	struct proffs *fs;
	int fd;
	struct sockaddr_storage local, peer;
	bool keep_alive;	/* of the request being answered */
	bool head_only;		/* a HEAD request */
	/* The result a wait hands over (registry_wait()'s callback). */
	pthread_mutex_t lock;
	int efd;		/* eventfd: the result is there */
	bool done;		/* protected by lock */
	int err;
	const uint8_t *res;
	size_t res_len;
	struct http_conn *prev, *next;	/* the server's, its lock */
};

/*
 * Send a whole response: status line, headers (extra: more header lines,
 * each ending "\r\n", or NULL), and the body unless the request was a
 * HEAD. 0, or a negative errno (the connection is then closed).
 */
int http_send(struct http_conn *c, int status, const char *ctype,
	      const char *extra, const void *body, size_t len);

/*
 * Wait for the result of h: 0 with *buf and *len (valid until h is
 * released), the session's negative errno, or -EINTR when the client
 * went away first (the wait then ended as an interrupted read).
 */
int http_wait(struct http_conn *c, struct reg_handle *h, const uint8_t **buf,
	      size_t *len);

/* Whether the token the client sent is the daemon's. */
bool http_token_ok(const struct http_conn *c, const char *token);

/* Answer one parsed request (http_serve.c); 0, or a negative errno when
 * the connection must close. */
int http_serve(struct http_conn *c, const struct http_request *r);

#endif
