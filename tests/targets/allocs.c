// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * allocs - allocation sites whose heap profile is known by construction.
 *
 *   allocs [SCALE [thread]]
 *
 * Prints "ready", then waits for signals. On each SIGUSR1 it runs the
 * workload once and prints one JSON line: per site (a function that calls
 * the allocator itself), what it allocated and what is still in use:
 *   {"site_small": [alloc_objects, alloc_bytes, inuse_objects,
 *                   inuse_bytes, size], ...}
 * size is the size of every allocation of the site, 0 when they differ.
 * SCALE multiplies the counts of the sites made of many equal blocks, for
 * tests of the default sampling rate. With "thread", each workload runs
 * on a thread created for it (a profiler must follow new threads). On
 * SIGUSR2 it dlopens libplugin.so
 * (beside it) and allocates through it, printing that site's line.
 *
 * The sites: small blocks kept; large blocks allocated and freed by
 * another function; calloc'd blocks kept; one buffer grown with realloc;
 * posix_memalign and aligned_alloc blocks kept; strdup (malloc called
 * inside libc) kept.
 *
 * Built twice: allocs, and allocs_static (-static -DALLOCS_STATIC) for
 * the uprobe fallback - a static binary has no dlopen, so the heap agent
 * cannot be loaded into it; that build has no plugin either (a static
 * program's dlopen would give the agent loader one to call).
 */
#ifndef ALLOCS_STATIC
#include <dlfcn.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SMALL 48
#define LARGE (256 * 1024)
#define CALLOC_N 25
#define CALLOC_SIZE 40
#define REALLOC_FIRST 1000
#define REALLOC_STEPS 11
#define MEMALIGN_SIZE 4096
#define ALIGNED_SIZE 1024
#define STR_LEN 99

static int scale = 1;
/* Blocks still referenced are live for the profiler too. */
static void **kept;
static size_t nkept, capkept;
static char text[STR_LEN + 1];

static void keep(void *p)
{
	if (nkept == capkept) {
		capkept = capkept ? capkept * 2 : 4096;
		kept = realloc(kept, capkept * sizeof(*kept));
		if (!kept)
			abort();
	}
	kept[nkept++] = p;
}

/* Every site reports [objects, bytes, inuse objects, inuse bytes, size]. */
static void report(const char *site, long n, long bytes, long in_n,
		   long in_bytes, long size, int last)
{
	printf("\"%s\": [%ld, %ld, %ld, %ld, %ld]%s", site, n, bytes, in_n,
	       in_bytes, size, last ? "}\n" : ", ");
}

/* kept[] itself grows by realloc from keep(): its allocations belong to
 * keep, not to the sites, so sites fill a local array first. */
__attribute__((noinline, noclone)) static void site_small(void **out, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = malloc(SMALL);
}

__attribute__((noinline, noclone)) static void release_large(void *p)
{
	free(p);
}

__attribute__((noinline, noclone)) static void site_large(long n)
{
	for (long i = 0; i < n; i++) {
		volatile char *p = malloc(LARGE);

		p[0] = 1;
		release_large((void *)p);
	}
}

__attribute__((noinline, noclone)) static void site_calloc(void **out, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = calloc(CALLOC_N, CALLOC_SIZE);
}

__attribute__((noinline, noclone)) static void *site_realloc(void)
{
	char *buf = NULL;
	size_t size = REALLOC_FIRST;

	for (int i = 0; i < REALLOC_STEPS; i++, size *= 2) {
		buf = realloc(buf, size);
		buf[size - 1] = 1;
	}
	return buf;
}

__attribute__((noinline, noclone)) static void site_memalign(void **out, long n)
{
	for (long i = 0; i < n; i++)
		if (posix_memalign(&out[i], 64, MEMALIGN_SIZE))
			abort();
}

__attribute__((noinline, noclone)) static void site_aligned_alloc(void **out, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = aligned_alloc(256, ALIGNED_SIZE);
}

__attribute__((noinline, noclone)) static void site_strdup(void **out, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = strdup(text);
}

static void run_sites(void)
{
	long n_small = 2000L * scale, n_large = 40L * scale;
	long n_calloc = 300L * scale, n_str = 500L * scale;
	long n_memalign = 100, n_aligned = 100;
	long total = n_small + n_calloc + n_str + n_memalign + n_aligned;
	void **tmp = malloc(total * sizeof(*tmp)), **t = tmp;
	long realloc_bytes = REALLOC_FIRST * ((1L << REALLOC_STEPS) - 1);
	long realloc_last = REALLOC_FIRST * (1L << (REALLOC_STEPS - 1));

	site_small(t, n_small);
	t += n_small;
	site_large(n_large);
	site_calloc(t, n_calloc);
	t += n_calloc;
	keep(site_realloc());
	site_memalign(t, n_memalign);
	t += n_memalign;
	site_aligned_alloc(t, n_aligned);
	t += n_aligned;
	site_strdup(t, n_str);
	for (long i = 0; i < total; i++)
		keep(tmp[i]);
	free(tmp);
	printf("{");
	report("site_small", n_small, n_small * SMALL, n_small,
	       n_small * SMALL, SMALL, 0);
	report("site_large", n_large, n_large * LARGE, 0, 0, LARGE, 0);
	report("site_calloc", n_calloc, n_calloc * CALLOC_N * CALLOC_SIZE,
	       n_calloc, n_calloc * CALLOC_N * CALLOC_SIZE,
	       CALLOC_N * CALLOC_SIZE, 0);
	report("site_realloc", REALLOC_STEPS, realloc_bytes, 1, realloc_last,
	       0, 0);
	report("site_memalign", n_memalign, n_memalign * MEMALIGN_SIZE,
	       n_memalign, n_memalign * MEMALIGN_SIZE, MEMALIGN_SIZE, 0);
	report("site_aligned_alloc", n_aligned, n_aligned * ALIGNED_SIZE,
	       n_aligned, n_aligned * ALIGNED_SIZE, ALIGNED_SIZE, 0);
	report("site_strdup", n_str, n_str * (STR_LEN + 1), n_str,
	       n_str * (STR_LEN + 1), STR_LEN + 1, 1);
	fflush(stdout);
}

#ifdef ALLOCS_STATIC
static void run_plugin(const char *self)
{
	(void)self;
	printf("{\"error\": \"no plugin in a static build\"}\n");
	fflush(stdout);
}
#else
static void run_plugin(const char *self)
{
	char path[4096], *slash;
	long (*plugin_alloc)(long, long);
	void *h;
	long n = 100, size = 1000;

	snprintf(path, sizeof(path) - 16, "%s", self);
	slash = strrchr(path, '/');
	strcpy(slash ? slash + 1 : path, "libplugin.so");
	h = dlopen(path, RTLD_NOW);
	plugin_alloc = h ? (long (*)(long, long))dlsym(h, "plugin_alloc") :
			   NULL;
	if (!plugin_alloc) {
		printf("{\"error\": \"%s\"}\n", dlerror());
	} else {
		plugin_alloc(n, size);
		printf("{");
		report("plugin_alloc", n, n * size, n, n * size, size, 1);
	}
	fflush(stdout);
}
#endif

static void *sites_thread(void *arg)
{
	run_sites();
	return arg;
}

int main(int argc, char **argv)
{
	int threaded = argc > 2 && !strcmp(argv[2], "thread");
	sigset_t set;
	pthread_t t;
	int sig;

	if (argc > 1)
		scale = atoi(argv[1]) > 0 ? atoi(argv[1]) : 1;
	memset(text, 'x', STR_LEN);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		if (sigwait(&set, &sig))
			return 1;
		if (sig == SIGUSR1 && threaded) {
			if (pthread_create(&t, NULL, sites_thread, NULL) ||
			    pthread_join(t, NULL))
				return 1;
		} else if (sig == SIGUSR1) {
			run_sites();
		} else {
			run_plugin(argv[0]);
		}
	}
}
