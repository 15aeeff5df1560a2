// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * http.c - the listener, its connections, and waiting for a result while
 * watching the client.
 *
 * A connection thread reads one head at a time (HTTP/1.1 keeps the
 * connection for the next; a pipelined request waits in the buffer), has
 * http_serve() answer it, and ends at "Connection: close", an error, an
 * idle minute, or the server's stop. While it waits for a profile it
 * polls the socket for POLLRDHUP (the client closed or reset: not
 * POLLIN, which a pipelined request would raise) and an eventfd the
 * registry's callback writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs/http/http.h"
#include "fs/http/http_i.h"
#include "sampler/log.h"
#include "fs/http/peer.h"
#include "sampler/proc.h"
#include "fs/core/daemon.h"
#include "fs/core/registry.h"

#define HEAD_TIMEOUT_MS 10000	/* a slow client's head */
#define IDLE_TIMEOUT_MS 60000	/* between requests on a kept connection */
#define SEND_TIMEOUT_S 30	/* a client that stops reading */
#define CONN_STACK (256 * 1024)
#define CONN_NICE -10		/* as a sampling thread: see conn_main() */

struct http_server {
	struct proffs *fs;
	int lfd;
	int stop_pipe[2];
	char *token;			/* NULL: loopback only */
	pthread_t acceptor;
	pthread_mutex_t lock;
	pthread_cond_t idle;		/* conns reached 0 */
	struct http_conn *conns;	/* protected by lock */
	unsigned nconns;		/* protected by lock */
	bool stopping;			/* protected by lock */
};

/* ---- responses ---- */

static const char *reason(int status)
{
	static const struct {
		int status;
		const char *text;
	} reasons[] = {
		{ 200, "OK" }, { 301, "Moved Permanently" },
		{ 400, "Bad Request" },
		{ 401, "Unauthorized" }, { 403, "Forbidden" },
		{ 404, "Not Found" }, { 405, "Method Not Allowed" },
		{ 431, "Request Header Fields Too Large" },
		{ 500, "Internal Server Error" }, { 501, "Not Implemented" },
		{ 503, "Service Unavailable" },
		{ 505, "HTTP Version Not Supported" },
	};

	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].status == status)
			return reasons[i].text;
	return "Error";
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= n;
	}
	return 0;
}

int http_send(struct http_conn *c, int status, const char *ctype,
	      const char *extra, const void *body, size_t len)
{
	char head[1024];
	int n, ret;

	n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n"
		     "Content-Type: %s\r\nContent-Length: %zu\r\n"
		     "X-Content-Type-Options: nosniff\r\n"
		     "Cache-Control: no-store\r\n%s%s\r\n", status,
		     reason(status), ctype, len, extra ? extra : "",
		     c->keep_alive ? "" : "Connection: close\r\n");
	if (n < 0 || (size_t)n >= sizeof(head))
		return -EINVAL;
	ret = send_all(c->fd, head, n);
	if (!ret && !c->head_only && len)
		ret = send_all(c->fd, body, len);
	return ret;
}

/* ---- waiting for a result ---- */

static void result_cb(void *arg, int err, const uint8_t *buf, size_t len,
		      size_t total)
{
	struct http_conn *c = arg;
	uint64_t one = 1;

	(void)total;	/* len: all of it */
	pthread_mutex_lock(&c->lock);
	c->done = true;
	c->err = err;
	c->res = buf;
	c->res_len = len;
	pthread_mutex_unlock(&c->lock);
	if (write(c->efd, &one, sizeof(one)) < 0)
		pr_err("http: cannot wake a connection: %s", strerror(errno));
}

static bool take_result(struct http_conn *c, int *err)
{
	bool done;

	pthread_mutex_lock(&c->lock);
	done = c->done;
	*err = c->err;
	pthread_mutex_unlock(&c->lock);
	return done;
}

int http_wait(struct http_conn *c, struct reg_handle *h, const uint8_t **buf,
	      size_t *len)
{
	struct pollfd p[2] = {
		{ .fd = c->fd, .events = POLLRDHUP },
		{ .fd = c->efd, .events = POLLIN },
	};
	struct reg_wait *w;
	uint64_t v;
	int err, ret;

	c->done = false;
	ret = registry_wait(h, result_cb, c, &w);
	if (ret)
		return ret;
	while (!take_result(c, &err)) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return -errno;	/* cannot happen: nothing is freed */
		if (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			/* As an interrupted read: our cb gets -EINTR now,
			 * unless the result was quicker. */
			registry_wait_cancel(w);
			p[0].events = 0;
		}
	}
	if (read(c->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		pr_err("http: eventfd: %s", strerror(errno));
	*buf = c->res;
	*len = c->res_len;
	return err;
}

/* ---- connections ---- */

bool http_token_ok(const struct http_conn *c, const char *token)
{
	const char *want = c->srv->token;
	size_t lw, lt;
	unsigned char diff = 0;

	if (!want || !token)
		return false;
	lw = strlen(want);
	lt = strlen(token);
	/* Constant time in the token's bytes: no early exit. */
	for (size_t i = 0; i < lw; i++)
		diff |= (unsigned char)want[i] ^
			(unsigned char)(i < lt ? token[i] : 0);
	return !diff && lt == lw;
}

/* Read until a whole head is in buf; its length, 0 at a clean end of
 * the connection, or a negative errno. */
static ssize_t read_head(struct http_conn *c, char *buf, size_t *have,
			 int timeout_ms)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	size_t hl;

	while (!(hl = http_head_len(buf, *have))) {
		ssize_t n;

		if (*have >= HTTP_HEAD_MAX)
			return -EMSGSIZE;
		n = poll(&p, 1, timeout_ms);
		if (n == 0)
			return *have ? -ETIMEDOUT : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		n = recv(c->fd, buf + *have, HTTP_HEAD_MAX - *have, 0);
		if (n == 0)
			return *have ? -ECONNRESET : 0;
		if (n < 0)
			return errno == EINTR ? 0 : -errno;
		*have += n;
		timeout_ms = HEAD_TIMEOUT_MS;
	}
	return hl;
}

static void serve_conn(struct http_conn *c)
{
	char buf[HTTP_HEAD_MAX + 1], who[64];
	size_t have = 0;
	int timeout = IDLE_TIMEOUT_MS;

	peer_str(&c->peer, who, sizeof(who));
	for (;;) {
		struct http_request r;
		const char *why;
		ssize_t hl = read_head(c, buf, &have, timeout);
		int ret;

		if (hl == -EMSGSIZE) {
			c->keep_alive = false;
			http_send(c, 431, "text/plain", NULL, "head too long\n",
				  14);
		}
		if (hl <= 0)
			return;
		ret = http_parse_head(buf, hl, &r, &why);
		c->keep_alive = !ret && r.keep_alive;
		c->head_only = !ret && r.method == HTTP_HEAD;
		if (ret) {
			char body[128];
			int status = ret == -EOPNOTSUPP ? 405 :
				     ret == -EPROTO ? 505 : 400;
			int n = snprintf(body, sizeof(body), "%s\n", why);

			pr_notice("http: %s: %d: %s", who, status, why);
			http_send(c, status, "text/plain; charset=utf-8",
				  status == 405 ? "Allow: GET, HEAD\r\n" : NULL,
				  body, n);
			return;
		}
		ret = http_serve(c, &r);
		if (ret || !c->keep_alive)
			return;
		memmove(buf, buf + hl, have - hl);
		have -= hl;
		timeout = IDLE_TIMEOUT_MS;
	}
}

static void conn_unlist(struct http_conn *c)
{
	struct http_server *s = c->srv;

	pthread_mutex_lock(&s->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (--s->nconns == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
}

static void conn_free(struct http_conn *c)
{
	if (c->efd >= 0)
		close(c->efd);
	close(c->fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void *conn_main(void *arg)
{
	struct http_conn *c = arg;

	/* The session's thread hands a result over at nice -10 (cpu.h); a
	 * connection at the default priority would then wait for a CPU on
	 * a busy machine before it sends, where a FUSE reader gets the
	 * reply from the session's thread itself. */
	proc_thread_nice(CONN_NICE);
	serve_conn(c);
	conn_unlist(c);
	conn_free(c);
	return NULL;
}

/* One accepted socket: a connection thread, or 503 when too many. */
static void start_conn(struct http_server *s, int fd)
{
	struct timeval tv = { .tv_sec = SEND_TIMEOUT_S };
	struct http_conn *c = calloc(1, sizeof(*c));
	socklen_t sl = sizeof(c->local), pl = sizeof(c->peer);
	pthread_attr_t attr;
	pthread_t tid;
	int ret = -ENOMEM;

	if (!c) {
		close(fd);
		return;
	}
	c->srv = s;
	c->fs = s->fs;
	c->fd = fd;
	pthread_mutex_init(&c->lock, NULL);
	c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (c->efd < 0 ||
	    getsockname(fd, (struct sockaddr *)&c->local, &sl) ||
	    getpeername(fd, (struct sockaddr *)&c->peer, &pl)) {
		conn_free(c);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (s->nconns < HTTP_MAX_CONNS && !s->stopping) {
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, CONN_STACK);
		ret = -pthread_create(&tid, &attr, conn_main, c);
		pthread_attr_destroy(&attr);
		if (!ret) {
			c->next = s->conns;
			if (s->conns)
				s->conns->prev = c;
			s->conns = c;
			s->nconns++;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (ret) {
		char who[64];

		peer_str(&c->peer, who, sizeof(who));
		pr_notice("http: %s: 503: %u connections at once", who,
			  HTTP_MAX_CONNS);
		c->keep_alive = false;
		http_send(c, 503, "text/plain", "Retry-After: 1\r\n",
			  "too many connections\n", 21);
		conn_free(c);
	}
}

static void *accept_main(void *arg)
{
	struct http_server *s = arg;
	struct pollfd p[2] = {
		{ .fd = s->lfd, .events = POLLIN },
		{ .fd = s->stop_pipe[0], .events = POLLIN },
	};

	for (;;) {
		int fd;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			start_conn(s, fd);
		else if (errno == EMFILE || errno == ENFILE)
			poll(NULL, 0, 100);	/* let connections end */
	}
	return NULL;
}

/* ---- start and stop ---- */

/* "host:port" or "[v6]:port" into a bound, listening socket. */
static int listen_on(const char *addr, int *out)
{
	char host[256], *colon;
	const char *port;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai;
	int fd, one = 1, ret;

	if (snprintf(host, sizeof(host), "%s", addr) >= (int)sizeof(host) ||
	    !(colon = strrchr(host, ':')))
		return -EINVAL;
	*colon = '\0';
	port = colon + 1;
	if (host[0] == '[' && colon > host && colon[-1] == ']') {
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	ret = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (ret)
		return -EINVAL;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				 sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return ret;
	}
	freeaddrinfo(ai);
	*out = fd;
	return 0;
}

/* The token: the file's first line. A file others may read is refused:
 * it would let them in. */
static int read_token(const char *path, char **out)
{
	char buf[HTTP_TOKEN_MAX];
	struct stat st;
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) || (st.st_mode & 077)) {
		fclose(f);
		pr_err("http: %s: group or others may read it: chmod 600 it",
		       path);
		return -EPERM;
	}
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	n = strcspn(buf, "\r\n");
	buf[n] = '\0';
	if (n < 16) {
		pr_err("http: %s: the token must be 16 characters at least",
		       path);
		return -EINVAL;
	}
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

int http_start(struct proffs *fs, const char *addr, const char *token_file,
	       struct http_server **out)
{
	struct http_server *s = calloc(1, sizeof(*s));
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	char where[80];
	int ret;

	if (!s)
		return -ENOMEM;
	s->fs = fs;
	s->lfd = s->stop_pipe[0] = s->stop_pipe[1] = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	ret = token_file ? read_token(token_file, &s->token) : 0;
	if (!ret && (ret = listen_on(addr, &s->lfd)))
		pr_err("http: cannot listen on %s: %s", addr, strerror(-ret));
	if (!ret && pipe2(s->stop_pipe, O_CLOEXEC))
		ret = -errno;
	if (!ret)
		ret = -pthread_create(&s->acceptor, NULL, accept_main, s);
	if (ret) {
		if (s->lfd >= 0)
			close(s->lfd);
		s->lfd = -1;
		http_stop(s);
		return ret;
	}
	getsockname(s->lfd, (struct sockaddr *)&sa, &sl);
	peer_str(&sa, where, sizeof(where));
	pr_info("http: listening on %s%s", where, s->token ?
		" (token required off loopback)" : " (loopback only)");
	*out = s;
	return 0;
}

void http_stop(struct http_server *s)
{
	if (!s)
		return;
	if (s->stop_pipe[1] >= 0) {
		if (write(s->stop_pipe[1], "", 1) < 0)
			pr_err("http: cannot stop: %s", strerror(errno));
		pthread_join(s->acceptor, NULL);
	}
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	/* Wakes every poll: a wait then ends as the client's leaving. */
	for (struct http_conn *c = s->conns; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	while (s->nconns)
		pthread_cond_wait(&s->idle, &s->lock);
	pthread_mutex_unlock(&s->lock);
	if (s->lfd >= 0)
		close(s->lfd);
	for (int i = 0; i < 2; i++)
		if (s->stop_pipe[i] >= 0)
			close(s->stop_pipe[i]);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s->token);
	free(s);
}
