// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * top.c - `proffs top`: one thread reads <target>/cpu_1s.txt from the
 * mount over and over (each read takes a 1 s window), the main thread
 * draws the latest table and waits for q. The table is the .txt's own
 * (flat% = self, cum% = total), so what top shows is what a file shows.
 *
 * Nothing here knows the daemon's insides: it is a client of the mount,
 * as cat is. Errors go to stderr and the exit status (1); a refused read
 * is drawn with errors.txt's line for it and retried each second.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "sampler/proc.h"
#include "fs/core/target.h"
#include "fs/top/top.h"

#define TOP_FILE "cpu_1s.txt"
#define TOP_MAX_READ (16u << 20)

struct top {
	char mnt[PATH_MAX];
	char dir[PATH_MAX + 300];	/* the target's directory, with '/' */
	struct target tgt;
	bool all;
	int wake[2];			/* reader (or a signal) -> main */
	pthread_mutex_t lock;
	char *text;			/* protected by lock: the last read */
	int err;			/* protected by lock: its errno */
	unsigned frames;		/* protected by lock: reads done */
};

static struct termios saved_tty;
static bool tty_raw;
static int sig_fd = -1;

static void restore_tty(void)
{
	if (tty_raw) {
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
		tty_raw = false;
		fputs("\033[?25h\n", stdout);	/* the cursor back */
		fflush(stdout);
	}
}

static void on_signal(int sig)
{
	char q = 'q';

	(void)sig;
	if (sig_fd >= 0 && write(sig_fd, &q, 1) < 0)
		_exit(1);
}

/* Keys one at a time, no echo; Ctrl-C still a signal. */
static void raw_tty(void)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tty))
		return;
	t = saved_tty;
	t.c_lflag &= ~(ICANON | ECHO);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t))
		return;
	tty_raw = true;
	atexit(restore_tty);
	fputs("\033[?25l", stdout);	/* no cursor while drawing */
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] &&
		    s[3]) {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* The first proffs mount in /proc/self/mountinfo that answers. */
static int find_mount(char *out, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - "), *mp, *save = NULL;
		struct stat st;

		if (!sep || strncmp(sep + 3, "fuse.proffs ", 12))
			continue;
		*sep = '\0';
		mp = strtok_r(line, " ", &save);
		for (int i = 0; mp && i < 4; i++)
			mp = strtok_r(NULL, " ", &save);
		if (!mp)
			continue;
		unescape(mp);
		/* a daemon killed leaves its mount: ENOTCONN */
		if (stat(mp, &st) || strlen(mp) >= size)
			continue;
		strcpy(out, mp);
		ret = 0;
	}
	fclose(f);
	return ret;
}

/* The whole of path, NUL-terminated, into *buf (malloc()ed). */
static int read_all(const char *path, char **buf)
{
	size_t len = 0, cap = 65536;
	char *b = malloc(cap + 1), *nb;
	int fd = open(path, O_RDONLY | O_CLOEXEC), saverr;
	ssize_t n;

	if (fd < 0 || !b) {
		saverr = fd < 0 ? errno : ENOMEM;
		free(b);
		if (fd >= 0)
			close(fd);
		return -saverr;
	}
	while ((n = read(fd, b + len, cap - len)) > 0) {
		len += n;
		if (len == cap) {
			if (cap >= TOP_MAX_READ ||
			    !(nb = realloc(b, cap * 2 + 1)))
				break;
			b = nb;
			cap *= 2;
		}
	}
	saverr = n < 0 ? errno : 0;
	close(fd);
	if (saverr) {
		free(b);
		return -saverr;
	}
	b[len] = '\0';
	*buf = b;
	return 0;
}

static void *reader(void *arg)
{
	struct top *t = arg;
	char path[sizeof(t->dir) + sizeof(TOP_FILE)];
	char x = 'r';

	snprintf(path, sizeof(path), "%s%s", t->dir, TOP_FILE);
	for (;;) {
		char *text = NULL;
		int err = read_all(path, &text);

		pthread_mutex_lock(&t->lock);
		free(t->text);
		t->text = text;
		t->err = err;
		t->frames++;
		pthread_mutex_unlock(&t->lock);
		if (write(t->wake[1], &x, 1) < 0)
			return NULL;
		if (err)
			sleep(1);	/* a refusal: ask again in a while */
	}
	return NULL;
}

/* "Threads:" of /proc/PID/status, or -1. */
static long thread_count(pid_t pid)
{
	char buf[4096], *p;
	size_t len;

	if (proc_read(pid, "status", buf, sizeof(buf) - 1, &len))
		return -1;
	buf[len] = '\0';
	p = strstr(buf, "\nThreads:");
	return p ? strtol(p + 9, NULL, 10) : -1;
}

static long process_count(void)
{
	pid_t *pids;
	size_t n;

	if (proc_pids(&pids, &n))
		return -1;
	free(pids);
	return (long)n;
}

/* The first line of text starting with prefix, copied into out. */
static bool line_of(const char *text, const char *prefix, char *out,
		    size_t size)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n'),
	     l = l ? l + 1 : NULL) {
		if (!strncmp(l, prefix, strlen(prefix))) {
			size_t n = strcspn(l, "\n");

			snprintf(out, size, "%.*s", (int)n, l);
			return true;
		}
	}
	return false;
}

/* The header: what, its threads, the refresh count, the time. */
static void draw_head(const struct top *t, unsigned frames, int cols)
{
	char what[400], comm[64] = "", when[16], head[512];
	time_t now = time(NULL);
	struct tm tm;
	long n = -1;
	pid_t pid;

	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	if (t->all) {
		n = process_count();
		snprintf(what, sizeof(what), "all processes, %ld of them", n);
	} else if (target_resolve(&t->tgt, getpid(), getuid(), &pid)) {
		target_describe(&t->tgt, what, sizeof(what));
		strcat(what, ": no such process now");
	} else {
		proc_comm(pid, pid, comm, sizeof(comm));
		n = thread_count(pid);
		snprintf(what, sizeof(what), "pid %d (%s), %ld thread%s",
			 (int)pid, comm, n, n == 1 ? "" : "s");
	}
	snprintf(head, sizeof(head), "proffs top: %s  refresh %u  %s  "
		 "(q quits)", what, frames, when);
	printf("\033[7m%-*.*s\033[0m\n", cols, cols, head);
}

static void draw_table(const char *text, int rows, int cols)
{
	const char *l = strstr(text, "      flat  flat%");
	char line[512];

	if (line_of(text, "Duration:", line, sizeof(line)))
		printf("%.*s\n", cols, line);
	/* why a profile is empty, and other notes of the profile */
	if (line_of(text, "proffs: ", line, sizeof(line)))
		printf("%.*s\n", cols, line);
	printf("\033[1m%8s %8s  %s\033[0m\n", "self%", "total%", "function");
	if (!l)
		return;
	l = strchr(l, '\n');
	for (int r = 0; l && *++l && r < rows; r++) {
		char flat[32], fpct[16], sum[16], cum[32], cpct[16];
		int off = 0;

		if (sscanf(l, "%31s %15s %15s %31s %15s %n", flat, fpct, sum,
			   cum, cpct, &off) != 5 || !off)
			break;
		snprintf(line, sizeof(line), "%8s %8s  %.*s", fpct, cpct,
			 (int)strcspn(l + off, "\n"), l + off);
		printf("%.*s\n", cols, line);
		l = strchr(l, '\n');
	}
}

/* The newest line of errors.txt: the target's, else the caller's. */
static void draw_error(const struct top *t, int err)
{
	char path[sizeof(t->dir) + 16], line[512];
	char *text = NULL;

	printf("cannot read %s%s: %s\n", t->dir, TOP_FILE, strerror(-err));
	if (t->tgt.kind == TARGET_PID && !t->all)
		snprintf(path, sizeof(path), "%serrors.txt", t->dir);
	else
		snprintf(path, sizeof(path), "%s/errors.txt", t->mnt);
	/* no such pid: the caller's own errors.txt has it */
	if (read_all(path, &text)) {
		snprintf(path, sizeof(path), "%s/errors.txt", t->mnt);
		if (read_all(path, &text))
			text = NULL;
	}
	if (text && text[0] && line_of(text, "", line, sizeof(line)))
		printf("%s\n", line);
	free(text);
}

static void draw(struct top *t)
{
	struct winsize ws = { 0 };
	int rows = 24, cols = 80, err;
	unsigned frames;
	char *text;

	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		rows = ws.ws_row;
		cols = ws.ws_col;
	}
	pthread_mutex_lock(&t->lock);
	text = t->text ? strdup(t->text) : NULL;
	err = t->err;
	frames = t->frames;
	pthread_mutex_unlock(&t->lock);
	fputs("\033[H\033[2J", stdout);
	draw_head(t, frames, cols);
	if (err)
		draw_error(t, err);
	else if (text)
		draw_table(text, rows - 6, cols);
	else
		printf("sampling the first second...\n");
	fflush(stdout);
	free(text);
}

static void usage(FILE *f)
{
	fputs("usage: proffs top [-m MOUNT] PID | -n NAME | -u UNIT | -a\n"
	      "  a live view of where a process spends its CPU, refreshed\n"
	      "  every second from a proffs mount (its cpu_1s.txt): the\n"
	      "  hottest functions, their self and total shares, the\n"
	      "  thread count. q quits.\n"
	      "  -m MOUNT  the mount (default: the first proffs mount in\n"
	      "            /proc/self/mountinfo)\n"
	      "  -n NAME   the oldest process named NAME (MOUNT/name/NAME)\n"
	      "  -u UNIT   a systemd unit's main process (MOUNT/unit/UNIT)\n"
	      "  -a        every process you may profile (MOUNT/all)\n", f);
}

static int parse_args(struct top *t, int argc, char **argv)
{
	enum target_kind kind = TARGET_PID;
	const char *id = NULL;
	int c;

	optind = 1;
	while ((c = getopt(argc, argv, "+m:n:u:ah")) != -1) {
		switch (c) {
		case 'm':
			snprintf(t->mnt, sizeof(t->mnt), "%s", optarg);
			break;
		case 'n':
		case 'u':
			kind = c == 'n' ? TARGET_NAME : TARGET_UNIT;
			id = optarg;
			break;
		case 'a':
			t->all = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	if (kind == TARGET_PID && !t->all) {
		if (optind != argc - 1 ||
		    !proc_parse_pid(argv[optind], &t->tgt.pid))
			return -EINVAL;
		t->tgt.kind = TARGET_PID;
	} else if (optind != argc || (t->all && id)) {
		return -EINVAL;
	} else if (!t->all && target_set(&t->tgt, kind, id, strlen(id))) {
		fprintf(stderr, "proffs top: '%s' is not a %s\n", id,
			kind == TARGET_NAME ? "command name" : "unit");
		return -EINVAL;
	}
	return 0;
}

/* Static: the reader thread may still hold it (and its buffers) when
 * main returns; reachable, as a leak checker sees it. */
static struct top t = { .lock = PTHREAD_MUTEX_INITIALIZER };

int top_main(int argc, char **argv)
{
	struct pollfd pfd[2];
	pthread_t tid;
	int ret;

	if (parse_args(&t, argc, argv)) {
		usage(stderr);
		return 2;
	}
	if (!t.mnt[0] && (ret = find_mount(t.mnt, sizeof(t.mnt)))) {
		fprintf(stderr, "proffs top: no proffs mount in "
			"/proc/self/mountinfo (mount one: proffs /prof; or "
			"give -m DIR)\n");
		return 1;
	}
	if (t.all)
		snprintf(t.dir, sizeof(t.dir), "%s/all/", t.mnt);
	else if (t.tgt.kind == TARGET_PID)
		snprintf(t.dir, sizeof(t.dir), "%s/%d/", t.mnt,
			 (int)t.tgt.pid);
	else
		snprintf(t.dir, sizeof(t.dir), "%s/%s/%s/", t.mnt,
			 target_word(t.tgt.kind), t.tgt.id);
	if (pipe2(t.wake, O_CLOEXEC)) {
		perror("proffs top: pipe");
		return 1;
	}
	sig_fd = t.wake[1];
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	raw_tty();
	if ((ret = pthread_create(&tid, NULL, reader, &t))) {
		restore_tty();
		fprintf(stderr, "proffs top: %s\n", strerror(ret));
		return 1;
	}
	draw(&t);
	pfd[0] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = t.wake[0], .events = POLLIN };
	for (;;) {
		char buf[64];
		ssize_t n;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & (POLLHUP | POLLERR))
			pfd[0].fd = -1;	/* no terminal: run until a signal */
		if ((pfd[0].revents & POLLIN) &&
		    (n = read(STDIN_FILENO, buf, sizeof(buf))) > 0 &&
		    memchr(buf, 'q', n))
			break;
		if (!(pfd[1].revents & POLLIN))
			continue;
		n = read(t.wake[0], buf, sizeof(buf));
		if (n > 0 && memchr(buf, 'q', n))
			break;
		draw(&t);
	}
	restore_tty();
	pthread_mutex_lock(&t.lock);
	free(t.text);
	t.text = NULL;
	pthread_mutex_unlock(&t.lock);
	/* The reader may sit in a window's read: exit() ends it, and the
	 * daemon sees an interrupted read. */
	return 0;
}
