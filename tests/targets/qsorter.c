// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qsorter - CPU spent in a comparator that libc's qsort() calls: the
 * profile must unwind from cmp_ints through libc's frames to main.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

__attribute__((noinline)) int cmp_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	for (int i = 0; i < 50; i++)
		sink += i;
	return (x > y) - (x < y);
}

int main(void)
{
	enum { N = 100000 };
	int *v = malloc(N * sizeof(*v));

	if (!v)
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		for (int i = 0; i < N; i++)
			v[i] = rand();
		qsort(v, N, sizeof(*v), cmp_ints);
	}
}
