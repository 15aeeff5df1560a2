/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * check.h - what every C unit test needs (after redis's testhelp.h):
 * CHECK(cond, fmt, ...) counts a failure and says where and why, without
 * stopping the test; `failures` is the count, for main()'s exit status.
 * MUST(call) is for set-up that the rest of a test stands on: a call
 * returning non-zero ends the program; run_sh(fmt, ...) the same for a
 * shell command; nm_addr() a symbol's address in a fixture. One test
 * program per module includes it once.
 */
#ifndef PROFFS_CHECK_H
#define PROFFS_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "FAIL %s:%d: %s: ", __func__,	\
				__LINE__, #cond);			\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			failures++;					\
		}							\
	} while (0)

/* Set-up failed: the test cannot go on. */
static __attribute__((noreturn, unused)) void die(const char *what, int ret)
{
	fprintf(stderr, "FATAL: %s: %d\n", what, ret);
	exit(1);
}

#define MUST(call)							\
	do {								\
		int r_ = (call);					\
		if (r_)							\
			die(#call, r_);					\
	} while (0)

/* Set-up by a shell command, made like printf: one that fails ends the
 * program (building fixtures with the compilers the test is about). */
static __attribute__((format(printf, 1, 2), unused)) void
run_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd)) {
		fprintf(stderr, "FATAL: command failed: %s\n", cmd);
		exit(1);
	}
}

/* The address nm gives sym in file (nm -D with dynamic); a symbol that is
 * not there ends the program. */
static __attribute__((unused)) uint64_t nm_addr(const char *file,
						const char *sym, bool dynamic)
{
	char cmd[2048], line[512], name[256], type;
	unsigned long long addr;
	uint64_t found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s %s", dynamic ? "-D" : "", file);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p))
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 &&
		    !strcmp(name, sym))
			found = addr;
	if (p)
		pclose(p);
	if (!found) {
		fprintf(stderr, "FATAL: no %s in %s\n", sym, file);
		exit(1);
	}
	return found;
}

#endif
