// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * proc_profile.c - a profile's target named from /proc: apart from proc.c
 * so that what reads /proc alone links without the profile model.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sampler/proc.h"
#include "sampler/model/profile.h"

/*
 * The name pid runs as: its comm, which exec sets from the name it was
 * run by (Debian's redis-server is a symlink to redis-check-rdb, python3
 * one to python3.11: the files' names are not the process's), unless
 * the kernel cut it to 15 bytes and the executable's name goes on.
 */
static void own_name(pid_t pid, char *out, size_t size)
{
	char comm[64] = "", exe[PATH_MAX], link[64];
	const char *base = "";
	ssize_t n;

	proc_comm(pid, pid, comm, sizeof(comm));
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	}
	if (!comm[0] || (strlen(comm) == 15 && !strncmp(base, comm, 15)))
		snprintf(out, size, "%s", base);
	else
		snprintf(out, size, "%s", comm);
}

int proc_name_profile(struct profile *p, pid_t pid, const char *kind)
{
	struct pf_header *h = profile_header(p);
	char cmd[4096], name[PATH_MAX];

	h->pid = pid;
	if (proc_cmdline_str(pid, cmd, sizeof(cmd)))
		cmd[0] = '\0';
	h->command = profile_intern(p, cmd);
	if (pid > 0) {
		own_name(pid, name, sizeof(name));
		h->name = name[0] ? profile_intern(p, name) : 0;
		if (h->name < 0)
			return -ENOMEM;
	}
	if (kind)
		h->kind = profile_intern(p, kind);
	return h->command < 0 || h->kind < 0 ? -ENOMEM : 0;
}
