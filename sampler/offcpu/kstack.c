// SPDX-License-Identifier: GPL-2.0-or-later
/* kstack.c - kernel frame names from /proc/PID/task/TID/stack. */
#include <string.h>

#include "sampler/offcpu/kstack.h"

int kstack_names(char *text, const char **names, int max)
{
	int n = 0;

	for (char *line = text, *next; line && *line && n < max;
	     line = next) {
		char *name, *end;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		name = strstr(line, "] ");
		if (!name)
			continue;
		name += 2;
		end = name + strcspn(name, "+ ");
		*end = '\0';
		if (*name)
			names[n++] = name;
	}
	return n;
}
