// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * proffs-dsomem - what the dso cache counts for ELF files (dso_mem.c)
 * against what loading them costs this process: RSS growth by kind
 * (anonymous, file pages, shared memory), and malloc's own word
 * (mallinfo2). For docs/performance.md, by hand:
 *
 *   proffs-dsomem [-n N] FILE...
 *
 * Each file is loaded into one cache and N addresses of it (default
 * 2000: the starts of its functions, spread evenly) are symbolized, as
 * the daemon does for the pcs of a profile.
 */
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler/unwind/dso.h"

struct rss {
	long anon, file, shmem;	/* KiB */
};

static void rss_now(struct rss *r)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	*r = (struct rss){ 0 };
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "RssAnon: %ld", &r->anon);
		sscanf(line, "RssFile: %ld", &r->file);
		sscanf(line, "RssShmem: %ld", &r->shmem);
	}
	if (f)
		fclose(f);
}

static uint64_t heap_now(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static bool any(void *arg, const char *name)
{
	(void)arg, (void)name;
	return true;
}

static void use(struct dso *d, size_t n)
{
	struct dso_frame f[16];
	struct dso_range *r = NULL;
	size_t nr = 0, step;
	int got;

	if (dso_symbol_ranges(d, any, NULL, &r, &nr) || !nr) {
		free(r);
		return;
	}
	step = nr > n ? nr / n : 1;
	for (size_t i = 0; i < nr; i += step)
		dso_symbolize(d, r[i].start, f, 16, &got);
	free(r);
}

int main(int argc, char **argv)
{
	struct dso_mem_parts p, sum = { 0 };
	struct rss r0, r1;
	struct dso_cache *c;
	struct dso **held;
	uint64_t h0, h1, total = 0;
	size_t n = 2000;
	int i = 1, k = 0;

	if (argc > 2 && !strcmp(argv[1], "-n")) {
		n = strtoul(argv[2], NULL, 10);
		i = 3;
	}
	if (i >= argc || dso_cache_new(NULL, &c)) {
		fprintf(stderr, "usage: proffs-dsomem [-n N] FILE...\n");
		return 2;
	}
	dso_cache_set_bytes(c, 0, 0);
	held = calloc(argc, sizeof(*held));
	rss_now(&r0);
	h0 = heap_now();
	printf("| file | counted | heap | inflated | mapped |\n"
	       "| --- | --- | --- | --- | --- |\n");
	for (; i < argc; i++) {
		if (dso_cache_get(c, argv[i], argv[i], &held[k])) {
			fprintf(stderr, "%s: cannot load\n", argv[i]);
			continue;
		}
		use(held[k], n);
		dso_mem_parts(held[k], &p);
		total += dso_mem_bytes(held[k]);
		sum.heap += p.heap;
		sum.inflated += p.inflated;
		sum.mapped += p.mapped;
		printf("| %s | %.1f MiB | %.1f | %.1f | %.1f |\n", argv[i],
		       dso_mem_bytes(held[k]) / 1048576.0, p.heap / 1048576.0,
		       p.inflated / 1048576.0, p.mapped / 1048576.0);
		k++;
	}
	h1 = heap_now();
	rss_now(&r1);
	printf("| all | %.1f MiB | %.1f | %.1f | %.1f |\n\n",
	       total / 1048576.0, sum.heap / 1048576.0,
	       sum.inflated / 1048576.0, sum.mapped / 1048576.0);
	printf("RSS grew %.1f MiB: anonymous %.1f, file %.1f, shared memory "
	       "%.1f; malloc's heap grew %.1f MiB.\n",
	       (r1.anon + r1.file + r1.shmem - r0.anon - r0.file - r0.shmem) /
	       1024.0, (r1.anon - r0.anon) / 1024.0,
	       (r1.file - r0.file) / 1024.0, (r1.shmem - r0.shmem) / 1024.0,
	       (h1 - h0) / 1048576.0);
	while (k--)
		dso_put(held[k]);
	free(held);
	dso_cache_free(c);
	return 0;
}
