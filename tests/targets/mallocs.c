// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mallocs - N threads (argv[1], default 8) allocating and freeing as fast
 * as they can: batches of 64 blocks of mixed small sizes, freed in the
 * reverse order; so a benchmark can measure what a heap profiler costs,
 * and so a test can load the agent into a process busy in malloc on every
 * thread. With "fill" (argv[2]) each block is written whole before it is
 * freed, as a program that uses its memory would; else one byte. With
 * "far" (argv[2]) it first reserves 16 GiB of address space below its
 * libraries and fills the holes above that, so that an object loaded
 * later (a heap agent) lands more than 2 GiB away from libc, as in a
 * process with large mappings of its own (a JVM's heap, a Go arena).
 *
 * Every 200 ms it prints (ops.h)
 *   ops TOTAL hooked M F threads C0,C1,...
 * TOTAL the blocks allocated and freed; M and F 1 when this program's
 * malloc and free go through someone else's function (a heap agent's
 * hooks), 0 when they are libc's; Ci the blocks of thread i, so a test
 * sees that every thread runs, not just the sum.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ops.h"

#define BATCH 64

static _Atomic unsigned long ops;

/* One cache line each: the counters must not slow the threads down. */
static struct {
	_Atomic unsigned long n;
	char pad[64 - sizeof(unsigned long)];
} *per_thread;
static int nthreads;

static int fill;

__attribute__((noinline)) static void batch(void **p, unsigned seed)
{
	for (int i = 0; i < BATCH; i++) {
		size_t size = 16 + ((seed + i * 7u) & 15) * 16;

		p[i] = malloc(size);
		if (fill)
			memset(p[i], i, size);
		*(volatile char *)p[i] = 1;
	}
	for (int i = BATCH - 1; i >= 0; i--)
		free(p[i]);
}

static void *worker(void *arg)
{
	void *p[BATCH];
	unsigned seed = (unsigned)(uintptr_t)arg;
	_Atomic unsigned long *mine = &per_thread[seed].n;

	for (;;) {
		batch(p, seed++);
		atomic_fetch_add_explicit(&ops, BATCH, memory_order_relaxed);
		atomic_fetch_add_explicit(mine, BATCH, memory_order_relaxed);
	}
	return NULL;
}

/*
 * In a PIE, the address of malloc is loaded from the GOT entry the
 * dynamic loader filled (a GLOB_DAT relocation) - the entry a heap agent
 * points at its hook, as it does the PLT's. dlsym finds libc's own
 * function (the agent exports nothing named malloc). volatile: the GOT
 * is read anew at every report, never folded into a constant.
 */
__attribute__((noinline)) static void more(void)
{
	void *(*volatile m)(size_t) = malloc;
	void (*volatile f)(void *) = free;

	printf(" hooked %d %d threads ",
	       (void *)m != dlsym(RTLD_DEFAULT, "malloc"),
	       (void *)f != dlsym(RTLD_DEFAULT, "free"));
	for (int i = 0; i < nthreads; i++)
		printf(i ? ",%lu" : "%lu", atomic_load(&per_thread[i].n));
}

/* Every later mapping goes below a 16 GiB reservation: the holes above
 * it are filled first, a page at a time, until a page lands below. */
static int push_mappings_away(void)
{
	char *r = mmap(NULL, 16ul << 30, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *q;

	if (r == MAP_FAILED)
		return -1;
	do {
		q = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		if (q == MAP_FAILED)
			return -1;
	} while (q > r);
	return munmap(q, 4096);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	pthread_t t;

	fill = argc > 2 && !strcmp(argv[2], "fill");
	if (argc > 2 && !strcmp(argv[2], "far") && push_mappings_away())
		return 1;
	per_thread = aligned_alloc(64, sizeof(*per_thread) * (n > 0 ? n : 1));
	if (!per_thread)
		return 1;
	memset(per_thread, 0, sizeof(*per_thread) * (n > 0 ? n : 1));
	nthreads = n;
	for (int i = 0; i < n; i++)
		pthread_create(&t, NULL, worker, (void *)(uintptr_t)i);
	report_ops(&ops, more);
}
