/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * check.h - what every C unit test needs (after redis's testhelp.h):
 * CHECK(cond, fmt, ...) counts a failure and says where and why, without
 * stopping the test; `failures` is the count, for main()'s exit status.
 * MUST(call) is for set-up that the rest of a test stands on: a call
 * returning non-zero ends the program. One test program per module
 * includes it once.
 */
#ifndef PROFFS_CHECK_H
#define PROFFS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

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

#endif
