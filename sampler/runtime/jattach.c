// SPDX-License-Identifier: GPL-2.0-or-later
/* jattach.c - one command to a HotSpot JVM over its attach socket. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/log.h"
#include "sampler/proc.h"
#include "sampler/runtime/jattach.h"

#define POLL_NAP_NS 10000000L	/* between looks for the socket */

/* Whether the file belongs to the target's user or to root. */
static bool owner_ok(pid_t pid, const struct stat *st)
{
	struct proc_creds c;

	if (!st->st_uid || st->st_uid == geteuid())
		return true;
	return !proc_creds(pid, &c) &&
	       (st->st_uid == c.euid || st->st_uid == c.ruid);
}

/* SigCgt of /proc/PID/status has SIGQUIT: the JVM's handler is there. */
static int catches_sigquit(pid_t pid)
{
	char buf[4096], *p;
	unsigned long long mask;
	int ret;

	ret = proc_read_text(pid, "status", buf, sizeof(buf));
	if (ret)
		return ret;
	p = strstr(buf, "\nSigCgt:");
	if (!p)
		return -EPROTO;
	mask = strtoull(p + 8, NULL, 16);
	return mask & (1ull << (SIGQUIT - 1)) ? 0 : -EPERM;
}

static int socket_ready(pid_t pid, const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return -errno;
	if (!S_ISSOCK(st.st_mode) || !owner_ok(pid, &st)) {
		pr_info("jattach: %s: not a socket of the JVM's user or root: "
			"ignored", path);
		return -EPERM;
	}
	return 0;
}

/* The trigger file in the JVM's working directory, else its /tmp. */
static int make_trigger(pid_t pid, pid_t nspid, char *path, size_t size)
{
	int fd;

	snprintf(path, size, "/proc/%d/cwd/.attach_pid%d", (int)pid,
		 (int)nspid);
	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(path, size, "/proc/%d/root/tmp/.attach_pid%d",
			 (int)pid, (int)nspid);
		fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			  0600);
	}
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Wake the listener up, if it is not there yet, and wait for it. */
static int start_listener(pid_t pid, pid_t nspid, const char *sock)
{
	struct timespec nap = { 0, POLL_NAP_NS };
	char trigger[128];
	uint64_t start;
	int ret;

	ret = socket_ready(pid, sock);
	if (ret != -ENOENT)
		return ret;
	ret = catches_sigquit(pid);
	if (ret) {
		if (ret == -EPERM)
			pr_info("jattach: %d does not catch SIGQUIT and has no "
				"attach listener: not attached", (int)pid);
		return ret;
	}
	ret = make_trigger(pid, nspid, trigger, sizeof(trigger));
	if (ret) {
		pr_info("jattach: %d: no trigger file: %s", (int)pid,
			strerror(-ret));
		return ret;
	}
	if (kill(pid, SIGQUIT)) {
		ret = -errno;
		unlink(trigger);
		return ret;
	}
	start = now_ns();
	while ((ret = socket_ready(pid, sock)) == -ENOENT &&
	       now_ns() - start < JATTACH_START_MS * 1000000ull)
		nanosleep(&nap, NULL);
	unlink(trigger);
	if (ret == -ENOENT) {
		pr_info("jattach: %d: no attach listener after %d ms",
			(int)pid, JATTACH_START_MS);
		ret = -ETIMEDOUT;
	}
	return ret;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		buf += n;
		len -= n;
	}
	return 0;
}

/* Everything until the JVM closes, at most JATTACH_MAX_REPLY bytes. */
static int read_reply(int fd, char **out, size_t *len)
{
	uint64_t deadline = now_ns() + JATTACH_REPLY_MS * 1000000ull;
	size_t cap = 64 << 10, n = 0;
	char *buf = malloc(cap + 1), *grown;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = now_ns();
		ssize_t got;

		if (now >= deadline) {
			free(buf);
			return -ETIMEDOUT;
		}
		if (poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return -errno;
		}
		if (n == cap) {
			if (cap >= JATTACH_MAX_REPLY)
				break;
			grown = realloc(buf, 2 * cap + 1);
			if (!grown) {
				free(buf);
				return -ENOMEM;
			}
			buf = grown;
			cap *= 2;
		}
		got = recv(fd, buf + n, cap - n, MSG_DONTWAIT);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0) {
			free(buf);
			return -errno;
		}
		if (!got)
			break;
		n += got;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* "CODE\n" then the output: the output moved to the front. */
static int split_code(char *buf, size_t *len, long *code)
{
	char *nl = memchr(buf, '\n', *len), *end;

	if (!nl)
		return -EPROTO;
	*code = strtol(buf, &end, 10);
	if (end == buf || end != nl)
		return -EPROTO;
	*len -= nl + 1 - buf;
	memmove(buf, nl + 1, *len + 1);
	return 0;
}

int jattach(pid_t pid, const char *cmd, const char *const args[3],
	    char **out, size_t *len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[1024], *reply = NULL;
	size_t rlen = 0, reqlen = 0;
	pid_t nspid;
	long code;
	int fd, ret;

	ret = proc_ns_tid(pid, pid, &nspid);
	if (ret)
		return ret;
	snprintf(sa.sun_path, sizeof(sa.sun_path),
		 "/proc/%d/root/tmp/.java_pid%d", (int)pid, (int)nspid);
	ret = start_listener(pid, nspid, sa.sun_path);
	if (ret)
		return ret;
	/* "1" CMD ARG1 ARG2 ARG3, each NUL-terminated */
	const char *parts[5] = { "1", cmd, args[0], args[1], args[2] };
	for (int i = 0; i < 5; i++) {
		const char *s = parts[i] ? parts[i] : "";
		size_t l = strlen(s) + 1;

		if (reqlen + l > sizeof(req))
			return -E2BIG;
		memcpy(req + reqlen, s, l);
		reqlen += l;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		pr_info("jattach: %s: %s", sa.sun_path, strerror(-ret));
		close(fd);
		return ret;
	}
	ret = send_all(fd, req, reqlen);
	if (!ret)
		ret = read_reply(fd, &reply, &rlen);
	close(fd);
	if (ret) {
		pr_info("jattach: %d: %s: %s", (int)pid, cmd, strerror(-ret));
		return ret;
	}
	ret = split_code(reply, &rlen, &code);
	if (ret) {
		pr_info("jattach: %d: %s: a reply without a result code",
			(int)pid, cmd);
		free(reply);
		return ret;
	}
	*out = reply;
	*len = rlen;
	return code ? -EREMOTEIO : 0;
}
