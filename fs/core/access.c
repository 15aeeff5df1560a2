// SPDX-License-Identifier: GPL-2.0-or-later
/* access.c - the ptrace rule, applied to the FUSE caller. */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>

#include "fs/core/access.h"
#include "sampler/proc.h"

bool access_privileged(pid_t caller_pid, uid_t caller_uid)
{
	struct proc_creds c;

	if (caller_uid == 0)
		return true;
	if (caller_pid <= 0)
		return false;
	/* The capability is the calling thread's; /proc/PID/status of the
	 * thread group is close enough for a capability set by exec. */
	if (proc_creds(caller_pid, &c))
		return false;
	return c.cap_eff & (1ull << CAP_SYS_PTRACE);
}

/* perf_event_paranoid: 2 (the kernel's default) when unreadable. */
static int paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v = 2;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 2;
		fclose(f);
	}
	return v;
}

bool access_kernel(pid_t caller_pid, uid_t caller_uid, bool sleeping)
{
	uint64_t caps = 1ull << CAP_SYS_ADMIN;
	struct proc_creds c;

	if (caller_uid == 0)
		return true;
	if (!sleeping && paranoid() <= 1)
		return true;
	if (!sleeping)
		caps |= 1ull << CAP_PERFMON;
	return caller_pid > 0 && !proc_creds(caller_pid, &c) &&
	       (c.cap_eff & caps);
}

int access_check(pid_t caller_pid, uid_t caller_uid, pid_t target)
{
	struct proc_creds t;
	int ret;

	ret = proc_creds(target, &t);
	if (ret)
		return ret == -ENOENT ? -ENOENT : -EACCES;
	if (access_privileged(caller_pid, caller_uid))
		return 0;
	if (t.ruid == caller_uid && t.euid == caller_uid &&
	    t.suid == caller_uid && t.owner == caller_uid)
		return 0;
	return -EACCES;
}
