// SPDX-License-Identifier: GPL-2.0-or-later
/* proc.c - small, stateless readers of /proc/PID. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sampler/proc.h"

static int read_path(const char *path, char *buf, size_t size, size_t *len)
{
	size_t got = 0;
	int fd, saverr;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got < size) {
		ssize_t r = read(fd, buf + got, size - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			saverr = errno;
			close(fd);
			return -saverr;
		}
		if (r == 0)
			break;
		got += r;
	}
	close(fd);
	*len = got;
	return 0;
}

int proc_read(pid_t pid, const char *what, char *buf, size_t size,
	      size_t *len)
{
	char path[128];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	return read_path(path, buf, size, len);
}

int proc_read_text(pid_t pid, const char *what, char *buf, size_t size)
{
	size_t len;
	int ret = proc_read(pid, what, buf, size - 1, &len);

	buf[ret ? 0 : len] = '\0';
	return ret;
}

static void strip_newline(char *s)
{
	s[strcspn(s, "\n")] = '\0';
}

int proc_ns_tid(pid_t pid, pid_t tid, pid_t *out)
{
	char path[64], buf[4096];
	const char *line;
	size_t len;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid,
		 (int)tid);
	ret = read_path(path, buf, sizeof(buf) - 1, &len);
	if (ret)
		return ret;
	buf[len] = '\0';
	*out = tid;
	line = strstr(buf, "\nNSpid:");
	if (line) {
		const char *end = line + 1 + strcspn(line + 1, "\n");
		const char *last = end;

		while (last > line && (last[-1] == ' ' || last[-1] == '\t'))
			last--;
		while (last > line && last[-1] >= '0' && last[-1] <= '9')
			last--;
		if (last < end && *last >= '0' && *last <= '9')
			*out = (pid_t)strtol(last, NULL, 10);
	}
	return 0;
}

int proc_comm(pid_t pid, pid_t tid, char *buf, size_t size)
{
	char path[64];
	size_t len;
	int ret;

	if (!size)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid,
		 (int)tid);
	ret = read_path(path, buf, size - 1, &len);
	if (ret)
		return ret;
	buf[len] = '\0';
	strip_newline(buf);
	return 0;
}

int proc_cmdline_str(pid_t pid, char *buf, size_t size)
{
	size_t len, i;
	int ret;

	if (!size)
		return -EINVAL;
	ret = proc_read(pid, "cmdline", buf, size - 1, &len);
	if (ret)
		return ret;
	while (len && buf[len - 1] == '\0')
		len--;
	for (i = 0; i < len; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[len] = '\0';
	if (!len)	/* kernel threads have none: show [comm] like ps */
		return proc_comm(pid, pid, buf, size);
	return 0;
}

/* The state letter of the text of a stat file, NUL-terminated. */
static int state_of(char *buf, char *state)
{
	/* comm may hold spaces and parentheses: the state follows the last
	 * ')' */
	char *paren = strrchr(buf, ')');

	if (!paren || paren[1] != ' ' || !paren[2])
		return -EINVAL;
	*state = paren[2];
	return 0;
}

/* The state letter of a stat file (of a process or a thread). */
static int stat_state(pid_t pid, const char *what, char *state)
{
	char buf[512];
	size_t len;
	int ret;

	ret = proc_read(pid, what, buf, sizeof(buf) - 1, &len);
	if (ret)
		return ret;
	buf[len] = '\0';
	return state_of(buf, state);
}

int proc_state(pid_t pid, char *state)
{
	return stat_state(pid, "stat", state);
}

int proc_task_sched(pid_t pid, pid_t tid, uint64_t *run_ns, char *state)
{
	char what[64], buf[128];
	size_t len;
	int ret;

	snprintf(what, sizeof(what), "task/%d/schedstat", (int)tid);
	ret = proc_read(pid, what, buf, sizeof(buf) - 1, &len);
	if (ret)
		return ret;
	buf[len] = '\0';
	if (sscanf(buf, "%" SCNu64, run_ns) != 1)
		return -EINVAL;
	snprintf(what, sizeof(what), "task/%d/stat", (int)tid);
	return stat_state(pid, what, state);
}

static bool state_alive(char state)
{
	return state != 'Z' && state != 'X' && state != 'x';
}

bool proc_alive(pid_t pid)
{
	char state;

	return !proc_state(pid, &state) && state_alive(state);
}

int proc_stat_open(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

bool proc_alive_fd(int fd)
{
	char buf[512], state;
	ssize_t len = pread(fd, buf, sizeof(buf) - 1, 0);

	if (len <= 0)
		return false;
	buf[len] = '\0';
	return !state_of(buf, &state) && state_alive(state);
}

static int mem_result(ssize_t got, size_t len)
{
	if (got == (ssize_t)len)
		return 0;
	return got < 0 && errno ? -errno : -EFAULT;
}

int proc_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	return mem_result(process_vm_readv(pid, &local, 1, &remote, 1, 0),
			  len);
}

int proc_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = { (void *)buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	return mem_result(process_vm_writev(pid, &local, 1, &remote, 1, 0),
			  len);
}

#define COPY_PAGE 4096ull
#define COPY_IOV 64

size_t proc_mem_copy(pid_t pid, uint64_t addr, void *buf, size_t max)
{
	struct iovec local = { buf, max };
	struct iovec remote[COPY_IOV];
	uint64_t end = addr + max, a = addr;
	unsigned n = 0;
	ssize_t got;

	while (a < end && n < COPY_IOV) {
		uint64_t next = (a & ~(COPY_PAGE - 1)) + COPY_PAGE;

		if (next > end)
			next = end;
		remote[n].iov_base = (void *)(uintptr_t)a;
		remote[n].iov_len = next - a;
		n++;
		a = next;
	}
	local.iov_len = a - addr;
	got = process_vm_readv(pid, &local, 1, remote, n, 0);
	return got > 0 ? (size_t)got : 0;
}

/* The numeric entries of a /proc directory. */
static int list_ids(const char *path, pid_t **ids, size_t *n)
{
	size_t cap = 16, cnt = 0;
	struct dirent *de;
	pid_t *v, tid;
	DIR *dir;

	dir = opendir(path);
	if (!dir)
		return -errno;
	v = malloc(cap * sizeof(*v));
	if (!v) {
		closedir(dir);
		return -ENOMEM;
	}
	while ((de = readdir(dir))) {
		if (!proc_parse_pid(de->d_name, &tid))
			continue;
		if (cnt == cap) {
			pid_t *nv = realloc(v, 2 * cap * sizeof(*v));

			if (!nv) {
				free(v);
				closedir(dir);
				return -ENOMEM;
			}
			v = nv;
			cap *= 2;
		}
		v[cnt++] = tid;
	}
	closedir(dir);
	*ids = v;
	*n = cnt;
	return 0;
}

int proc_tasks(pid_t pid, pid_t **tids, size_t *n)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	return list_ids(path, tids, n);
}

int proc_pids(pid_t **pids, size_t *n)
{
	return list_ids("/proc", pids, n);
}

int proc_stat_fields(pid_t pid, pid_t *ppid, unsigned long long *start)
{
	char buf[1024], *p;
	unsigned long long t;
	size_t len;
	int pp, ret;

	ret = proc_read(pid, "stat", buf, sizeof(buf) - 1, &len);
	if (ret)
		return ret;
	buf[len] = '\0';
	/* The command may hold anything, ')' too: fields follow the last. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%*u %*u %*d %*d %*d %*d %*d %*d %llu", &pp, &t) != 2)
		return -EINVAL;
	if (ppid)
		*ppid = pp;
	if (start)
		*start = t;
	return 0;
}

static int parse_uids(const char *status, struct proc_creds *c)
{
	const char *l = strstr(status, "\nUid:");
	unsigned r, e, s;

	if (!l || sscanf(l + 5, "%u %u %u", &r, &e, &s) != 3)
		return -EINVAL;
	c->ruid = r;
	c->euid = e;
	c->suid = s;
	l = strstr(status, "\nCapEff:");
	c->cap_eff = l ? strtoull(l + 8, NULL, 16) : 0;
	return 0;
}

int proc_creds(pid_t pid, struct proc_creds *creds)
{
	char buf[4096], path[64];
	struct stat st;
	size_t len;
	int ret;

	ret = proc_read(pid, "status", buf, sizeof(buf) - 1, &len);
	if (ret)
		return ret;
	buf[len] = '\0';
	ret = parse_uids(buf, creds);
	if (ret)
		return ret;
	/* The files of a non-dumpable process belong to root; on recent
	 * kernels its /proc/PID directory itself keeps the user's uid. */
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (stat(path, &st))
		return -errno;
	creds->owner = st.st_uid;
	return 0;
}

bool proc_parse_pid(const char *name, pid_t *pid)
{
	long v = 0;

	if (!*name || *name == '0')
		return false;
	for (; *name; name++) {
		if (*name < '0' || *name > '9')
			return false;
		v = v * 10 + (*name - '0');
		if (v > INT_MAX)
			return false;
	}
	*pid = (pid_t)v;
	return true;
}

static int thread_nice(int nice, bool raise_only, int *was)
{
	pid_t tid = gettid();

	errno = 0;
	*was = getpriority(PRIO_PROCESS, tid);
	if (*was == -1 && errno)
		return -errno;
	if (*was == nice || (raise_only && *was < nice))
		return 0;
	return setpriority(PRIO_PROCESS, tid, nice) ? -errno : 0;
}

int proc_thread_nice(int nice)
{
	int was;

	return thread_nice(nice, true, &was);
}

int proc_thread_set_nice(int nice, int *was)
{
	return thread_nice(nice, false, was);
}
