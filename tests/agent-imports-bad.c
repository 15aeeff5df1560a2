// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * agent-imports-bad.c - a library that calls what the heap agent must not
 * (the allocator, a lock, the unwinder, the loader, stdio): the proof
 * that test-agent-imports would catch each. Never loaded.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

void agent_imports_bad(void);

static _Unwind_Reason_Code step(struct _Unwind_Context *c, void *arg)
{
	(void)c;
	(void)arg;
	return _URC_END_OF_STACK;
}

void agent_imports_bad(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	char *s = strdup("x");
	void *volatile p = malloc(1);	/* volatile: not optimized away */

	pthread_mutex_lock(&lock);
	free(p);
	_Unwind_Backtrace(step, NULL);
	fprintf(stderr, "%s %p\n", s, dlopen("libm.so.6", RTLD_NOW));
	pthread_mutex_unlock(&lock);
	free(s);
}
