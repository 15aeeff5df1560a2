/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * check.h - the two things every C unit test needs (after redis's
 * testhelp.h): CHECK(cond, fmt, ...) counts a failure and says where and
 * why, without stopping the test; `failures` is the count, for main()'s
 * exit status. One test program per module includes it once.
 */
#ifndef PROFFS_CHECK_H
#define PROFFS_CHECK_H

#include <stdio.h>

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

#endif
