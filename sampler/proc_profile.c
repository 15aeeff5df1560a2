// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * proc_profile.c - a profile's target named from /proc: apart from proc.c
 * so that what reads /proc alone links without the profile model.
 */
#include <errno.h>

#include "proc.h"
#include "profile.h"

int proc_name_profile(struct profile *p, pid_t pid, const char *kind)
{
	struct pf_header *h = profile_header(p);
	char cmd[4096];

	h->pid = pid;
	if (proc_cmdline_str(pid, cmd, sizeof(cmd)))
		cmd[0] = '\0';
	h->command = profile_intern(p, cmd);
	if (kind)
		h->kind = profile_intern(p, kind);
	return h->command < 0 || h->kind < 0 ? -ENOMEM : 0;
}
