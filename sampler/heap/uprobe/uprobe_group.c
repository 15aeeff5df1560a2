// SPDX-License-Identifier: GPL-2.0-or-later
/* uprobe_group.c - groups of uprobe events in tracefs (uprobe_group.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "sampler/log.h"
#include "sampler/heap/uprobe/uprobe_group.h"

#define PREFIX "proffs_"
#define MAX_EVENTS 8
#define NAME_MAX_LEN 64

struct uprobe_group {
	char name[NAME_MAX_LEN];
	char events[MAX_EVENTS][NAME_MAX_LEN];
	int nevents;
};

static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
static char root[64];		/* tracefs, once found */
static bool swept;		/* stale groups removed */
static _Atomic unsigned serial;

/* ---- tracefs ---- */

static bool has_uprobe_events(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/uprobe_events", dir);
	return !access(path, F_OK);
}

/* Called with setup_lock held. */
static int find_root_locked(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};

	if (root[0])
		return 0;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (has_uprobe_events(dirs[i])) {
			snprintf(root, sizeof(root), "%s", dirs[i]);
			return 0;
		}
	/* Where systemd mounts it; perf mounts it there too. */
	if (mount("nodev", dirs[0], "tracefs", 0, NULL)) {
		int err = errno;

		pr_notice("heap: tracefs is not mounted and mounting it on %s "
			  "failed: %s: no uprobes", dirs[0], strerror(err));
		return err == EPERM || err == EACCES ? -EPERM : -ENOTSUP;
	}
	if (!has_uprobe_events(dirs[0])) {
		pr_notice("heap: %s has no uprobe_events (a kernel without "
			  "CONFIG_UPROBE_EVENTS): no uprobes", dirs[0]);
		return -ENOTSUP;
	}
	pr_info("heap: mounted tracefs on %s for uprobes", dirs[0]);
	snprintf(root, sizeof(root), "%s", dirs[0]);
	return 0;
}

/* One definition line into uprobe_events; 0 or the kernel's -errno. */
static int define(const char *line)
{
	char path[PATH_MAX];
	size_t len = strlen(line);
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, line, len) != (ssize_t)len)
		ret = -errno;
	close(fd);
	return ret;
}

/* A group of a daemon that is gone: "proffs_<pid>_<n>". */
static bool stale(const char *group)
{
	char *end;
	long pid;

	if (strncmp(group, PREFIX, strlen(PREFIX)))
		return false;
	pid = strtol(group + strlen(PREFIX), &end, 10);
	if (end == group + strlen(PREFIX) || *end != '_' || pid <= 0)
		return false;
	return pid != getpid() && kill(pid, 0) && errno == ESRCH;
}

/* Remove the events of groups whose daemon died (SIGKILL, a crash): they
 * hold no breakpoint once their perf events are gone, but they pin the
 * files they name. Called with setup_lock held. */
static void sweep_locked(void)
{
	char path[PATH_MAX], line[PATH_MAX + 128], del[2 * NAME_MAX_LEN + 8];
	FILE *f;

	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *name = strchr(line, ':'), *sp;

		if (!name)
			continue;
		name++;
		sp = strpbrk(name, " \n");
		if (sp)
			*sp = '\0';
		sp = strchr(name, '/');
		if (!sp || sp - name >= NAME_MAX_LEN)
			continue;
		*sp = '\0';
		if (!stale(name))
			continue;
		snprintf(del, sizeof(del), "-:%s/%.*s", name, NAME_MAX_LEN - 1,
			 sp + 1);
		/* Several probes of one event: the first removal takes them
		 * all, the others find nothing. */
		if (!define(del))
			pr_info("heap: removed uprobe event %s/%s of a daemon "
				"that is gone", name, sp + 1);
	}
	fclose(f);
}

void uprobe_group_sweep(void)
{
	pthread_mutex_lock(&setup_lock);
	if (!swept && !root[0]) {
		/* Only where tracefs is mounted: mounting it now would be a
		 * change to the host for probes nobody may ever ask for. */
		if (has_uprobe_events("/sys/kernel/tracing"))
			snprintf(root, sizeof(root), "/sys/kernel/tracing");
		else if (has_uprobe_events("/sys/kernel/debug/tracing"))
			snprintf(root, sizeof(root),
				 "/sys/kernel/debug/tracing");
	}
	if (!swept && root[0]) {
		sweep_locked();
		swept = true;
	}
	pthread_mutex_unlock(&setup_lock);
}

/* ---- groups ---- */

int uprobe_group_new(struct uprobe_group **out)
{
	struct uprobe_group *g;
	int ret;

	pthread_mutex_lock(&setup_lock);
	ret = find_root_locked();
	if (!ret && !swept) {
		sweep_locked();
		swept = true;
	}
	pthread_mutex_unlock(&setup_lock);
	if (ret)
		return ret;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	snprintf(g->name, sizeof(g->name), PREFIX "%d_%u", (int)getpid(),
		 atomic_fetch_add(&serial, 1));
	*out = g;
	return 0;
}

static bool known(const struct uprobe_group *g, const char *event)
{
	for (int i = 0; i < g->nevents; i++)
		if (!strcmp(g->events[i], event))
			return true;
	return false;
}

int uprobe_group_add(struct uprobe_group *g, const char *event, bool ret,
		     const char *path, uint64_t offset)
{
	char line[PATH_MAX + 2 * NAME_MAX_LEN + 32];
	bool first = !known(g, event);
	int err;

	if (strlen(event) >= NAME_MAX_LEN ||
	    (first && g->nevents == MAX_EVENTS))
		return -EINVAL;
	for (const char *c = path; *c; c++)
		if (isspace((unsigned char)*c))
			return -EINVAL;	/* the definition splits on spaces */
	snprintf(line, sizeof(line), "%c:%s/%s %s:0x%llx\n", ret ? 'r' : 'p',
		 g->name, event, path, (unsigned long long)offset);
	err = define(line);
	if (err == -EEXIST && !first) {
		pr_notice("heap: this kernel cannot put several uprobes in one "
			  "event (before 5.7): no uprobe fallback");
		return -ENOTSUP;
	}
	if (err == -EACCES)
		err = -EPERM;
	if (!err && first)
		snprintf(g->events[g->nevents++], NAME_MAX_LEN, "%s", event);
	return err;
}

int uprobe_group_id(struct uprobe_group *g, const char *event, uint64_t *id)
{
	char path[PATH_MAX], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/events/%s/%s/id", root, g->name,
		 event);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	*id = strtoull(buf, NULL, 10);
	return 0;
}

void uprobe_group_free(struct uprobe_group *g)
{
	char line[3 * NAME_MAX_LEN];

	if (!g)
		return;
	for (int i = 0; i < g->nevents; i++) {
		int err;

		snprintf(line, sizeof(line), "-:%s/%s\n", g->name,
			 g->events[i]);
		err = define(line);
		if (err)
			pr_warn("heap: uprobe event %s/%s not removed: %s",
				g->name, g->events[i], strerror(-err));
	}
	free(g);
}
