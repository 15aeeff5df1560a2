// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * undumpable - burns CPU after prctl(PR_SET_DUMPABLE, 0), as programs
 * holding secrets do: even its own user may not ptrace, so not profile, it.
 */
#include <stdio.h>
#include <sys/prctl.h>

static volatile unsigned long sink;

int main(void)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;)
		sink++;
}
