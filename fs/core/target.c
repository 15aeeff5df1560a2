// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * target.c - stable names to pids: a unit through its cgroup, a command
 * name through /proc.
 *
 * Why not ask systemd (systemctl show -p MainPID): it needs systemd as
 * PID 1 and its D-Bus, a process per lookup, and would not answer in a
 * container or chroot where the unit's cgroup is still visible. The
 * cgroup tells the same for a running unit: systemd puts a unit's
 * processes in a cgroup named after it, and when it has to guess a
 * main process (Type=forking without PIDFile=) it takes the one whose
 * parent is not in the cgroup. The oldest such process is what a
 * simple service's MainPID is, as its children start later.
 */
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/core/access.h"
#include "sampler/proc.h"
#include "fs/core/target.h"

#define CGROUP_DEPTH 8		/* slices nest: user.slice/user-1000.slice/... */
#define CGROUP_DIRS 20000	/* a bound on the walk of a big machine */
#define PROCS_MAX 4096		/* processes of one unit considered */

static const char *const words[] = {
	[TARGET_PID] = NULL,
	[TARGET_UNIT] = "unit",
	[TARGET_NAME] = "name",
	[TARGET_ALL] = "all",
};

const char *target_word(enum target_kind kind)
{
	return (unsigned)kind <= TARGET_ALL ? words[kind] : NULL;
}

int target_kind_of(const char *word, size_t len, enum target_kind *kind)
{
	for (int k = TARGET_UNIT; k <= TARGET_ALL; k++)
		if (strlen(words[k]) == len && !memcmp(words[k], word, len)) {
			*kind = k;
			return 0;
		}
	return -ENOENT;
}

int target_set(struct target *t, enum target_kind kind, const char *id,
	       size_t len)
{
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	if (kind == TARGET_ALL)
		return len ? -EINVAL : 0;
	if (!len || len >= TARGET_ID_MAX || memchr(id, '/', len) ||
	    memchr(id, '\0', len) || (id[0] == '.' && (len == 1 ||
	    (len == 2 && id[1] == '.'))))
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)id[i] < 0x20)
			return -EINVAL;
	memcpy(t->id, id, len);
	/* systemctl's habit: a unit without a type is a service. */
	if (kind == TARGET_UNIT && !strchr(t->id, '.')) {
		if (len + sizeof(".service") > TARGET_ID_MAX)
			return -EINVAL;
		strcat(t->id, ".service");
	}
	return 0;
}

/* ---- units ---- */

/* The mount points of the cgroup2 hierarchy and of systemd's named v1
 * hierarchy, from mountinfo: where units have their directories. */
static int cgroup_roots(char roots[2][256])
{
	char line[1024], mnt[256], fstype[64], super[512];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int n = 0;

	if (!f)
		return 0;
	while (n < 2 && fgets(line, sizeof(line), f)) {
		char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %*s %511s", fstype, super) != 2)
			continue;
		if (!strcmp(fstype, "cgroup2") ||
		    (!strcmp(fstype, "cgroup") && strstr(super, "name=systemd")))
			snprintf(roots[n++], 256, "%s", mnt);
	}
	fclose(f);
	return n;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* Depth-first search under dir for a directory named unit. */
static bool find_unit_dir(char *dir, size_t size, const char *unit,
			  int depth, unsigned *budget)
{
	size_t len = strlen(dir);
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (depth > CGROUP_DEPTH || !(d = opendir(dir)))
		return false;
	while (!found && (de = readdir(d)) && (*budget)--) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(dir + len, size - len, "/%s", de->d_name) >=
		    (int)(size - len))
			continue;
		found = !strcmp(de->d_name, unit) ||
			find_unit_dir(dir, size, unit, depth + 1, budget);
		if (!found)
			dir[len] = '\0';
	}
	closedir(d);
	return found;
}

/* The unit's cgroup directory: where systemd puts most (system.slice),
 * then anywhere below the roots. */
static int unit_dir(const char *unit, char *dir, size_t size)
{
	char roots[2][256];
	int n = cgroup_roots(roots);

	for (int i = 0; i < n; i++) {
		snprintf(dir, size, "%s/system.slice/%s", roots[i], unit);
		if (is_dir(dir))
			return 0;
	}
	for (int i = 0; i < n; i++) {
		unsigned budget = CGROUP_DIRS;

		snprintf(dir, size, "%s", roots[i]);
		if (find_unit_dir(dir, size, unit, 0, &budget))
			return 0;
	}
	return -ENOENT;
}

static int read_procs(const char *dir, pid_t *pids, size_t *n)
{
	char path[PATH_MAX + 16];
	FILE *f;
	int pid;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ENOENT : -errno;
	*n = 0;
	while (*n < PROCS_MAX && fscanf(f, "%d", &pid) == 1)
		pids[(*n)++] = pid;
	fclose(f);
	return 0;
}

static bool member(const pid_t *pids, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

static int unit_main_pid(const char *unit, pid_t *out)
{
	unsigned long long best_start = 0, start;
	char dir[PATH_MAX];
	pid_t *pids, ppid, best = 0;
	size_t n = 0;
	int ret;

	ret = unit_dir(unit, dir, sizeof(dir));
	if (ret)
		return ret;
	pids = malloc(PROCS_MAX * sizeof(*pids));
	if (!pids)
		return -ENOMEM;
	ret = read_procs(dir, pids, &n);
	for (size_t i = 0; !ret && i < n; i++) {
		if (proc_stat_fields(pids[i], &ppid, &start) ||
		    member(pids, n, ppid) || !proc_alive(pids[i]))
			continue;
		if (!best || start < best_start) {
			best = pids[i];
			best_start = start;
		}
	}
	free(pids);
	if (ret)
		return ret;
	if (!best)
		return -ENOENT;
	*out = best;
	return 0;
}

/* ---- command names ---- */

struct aged {
	unsigned long long start;
	pid_t pid;
};

static int by_age(const void *a, const void *b)
{
	const struct aged *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* "comm", "comm@N" (1 = oldest) or "comm@newest": the comm and which. */
static int parse_selector(const char *id, char *comm, size_t size,
			  long *nth)
{
	const char *at = strrchr(id, '@');
	char *end;

	*nth = 1;
	if (at && !strcmp(at + 1, "newest")) {
		*nth = -1;
	} else if (at && at[1] >= '1' && at[1] <= '9') {
		*nth = strtol(at + 1, &end, 10);
		if (*end)
			at = NULL;	/* part of the name */
	} else {
		at = NULL;
	}
	snprintf(comm, size, "%.*s", (int)(at ? at - id : (long)strlen(id)),
		 id);
	return comm[0] ? 0 : -EINVAL;
}

static int name_pid(const char *id, pid_t caller_pid, uid_t caller_uid,
		    pid_t *out)
{
	char comm[TARGET_ID_MAX], buf[64];
	struct aged *found;
	pid_t *pids;
	size_t n, nfound = 0;
	long nth;
	int ret;

	ret = parse_selector(id, comm, sizeof(comm), &nth);
	if (ret)
		return ret;
	ret = proc_pids(&pids, &n);
	if (ret)
		return ret;
	found = malloc((n ? n : 1) * sizeof(*found));
	if (!found) {
		free(pids);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned long long start;

		if (proc_comm(pids[i], pids[i], buf, sizeof(buf)) ||
		    strcmp(buf, comm) || !proc_alive(pids[i]) ||
		    access_check(caller_pid, caller_uid, pids[i]) ||
		    proc_stat_fields(pids[i], NULL, &start))
			continue;
		found[nfound++] = (struct aged){ start, pids[i] };
	}
	qsort(found, nfound, sizeof(*found), by_age);
	if (nth < 0 && nfound)
		nth = nfound;
	ret = nth >= 1 && (size_t)nth <= nfound ? 0 : -ENOENT;
	if (!ret)
		*out = found[nth - 1].pid;
	free(found);
	free(pids);
	return ret;
}

int target_resolve(const struct target *t, pid_t caller_pid,
		   uid_t caller_uid, pid_t *out)
{
	switch (t->kind) {
	case TARGET_PID:
		if (!proc_alive(t->pid))
			return -ENOENT;
		*out = t->pid;
		return 0;
	case TARGET_UNIT:
		return unit_main_pid(t->id, out);
	case TARGET_NAME:
		return name_pid(t->id, caller_pid, caller_uid, out);
	default:
		return -EINVAL;
	}
}

void target_describe(const struct target *t, char *buf, size_t size)
{
	if (t->kind == TARGET_PID)
		snprintf(buf, size, "pid %d", (int)t->pid);
	else if (t->kind == TARGET_ALL)
		snprintf(buf, size, "all");
	else
		snprintf(buf, size, "%s %s", target_word(t->kind), t->id);
}
