// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * unwind-replay - the unwinder's cost per sample on one fixed set of
 * samples, so that two builds can be compared where a live read cannot:
 * cc1's phases move a window's cost by more than a change to the
 * unwinder does (tests/bench/cc1.py, cc1_side.py).
 *
 *   unwind-replay record PID SECONDS HZ FILE   samples of PID into FILE,
 *                                              then PID is left stopped
 *   unwind-replay replay PID FILE ROUNDS       unwind them ROUNDS times
 *   (then kill -CONT PID)
 *
 * Each replay round is a fresh unwinder on one dso cache, as a session
 * is: the first computes every row from the CFI (a first read), later
 * ones find the rows kept with the objects (a later read), and build
 * their own table of rows again. The process stays stopped, so the maps
 * and the stack words past each copy are the same for every build. The
 * frames' count and checksum tell whether two builds unwound alike.
 * Each round then names the stacks' pcs into a profile of its own, as a
 * session does (the symbolizer on the same dso cache), timed apart.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sampler/model/profile.h"
#include "sampler/perf/perf.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/maps.h"
#include "sampler/unwind/symbolize.h"
#include "sampler/unwind/unwind.h"

#define MAX_FRAMES 512

struct rec_hdr {
	uint32_t pid, tid;
	struct unwind_regs regs;
	uint64_t stack_len;
};

static void on_sample(const struct perf_sample *s, void *arg)
{
	struct rec_hdr h = { .pid = s->pid, .tid = s->tid, .regs = s->regs,
			     .stack_len = s->stack_len };

	fwrite(&h, sizeof(h), 1, arg);
	fwrite(s->stack, 1, s->stack_len, arg);
}

static double now_s(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int record(pid_t pid, double seconds, unsigned hz, const char *path)
{
	struct perf_rec *rec;
	double end;
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = perf_open(pid, hz, false, &rec);
	if (ret) {
		fclose(f);
		return ret;
	}
	end = now_s(CLOCK_MONOTONIC) + seconds;
	while (!ret && now_s(CLOCK_MONOTONIC) < end)
		ret = perf_poll(rec, 100, on_sample, f);
	kill(pid, SIGSTOP);
	if (!ret)
		ret = perf_poll(rec, 0, on_sample, f);
	perf_close(rec);
	return fclose(f) || ret ? (ret ? ret : -EIO) : 0;
}

struct sample {
	struct rec_hdr h;
	uint8_t *stack;
};

static void samples_free(struct sample *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].stack);
	free(v);
}

/* The samples of path into *out (samples_free() them); a record cut
 * short ends the list. */
static int load(const char *path, struct sample **out, size_t *n)
{
	struct sample *v = NULL, *nv;
	size_t cap = 0;
	FILE *f = fopen(path, "r");
	struct rec_hdr h;

	*out = NULL;
	*n = 0;
	if (!f)
		return -errno;
	while (fread(&h, sizeof(h), 1, f) == 1) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 1024;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[*n].h = h;
		v[*n].stack = malloc(h.stack_len ? h.stack_len : 1);
		if (!v[*n].stack ||
		    fread(v[*n].stack, 1, h.stack_len, f) != h.stack_len) {
			free(v[*n].stack);
			break;
		}
		(*n)++;
	}
	fclose(f);
	*out = v;
	return *n ? 0 : -ENODATA;
}

/* Name every stack of v: the symbolizer's cost, into a fresh profile. */
static int name_all(struct proc_maps *maps, uint64_t (*stacks)[MAX_FRAMES],
		    const int *depth, size_t n)
{
	static const int64_t values[2] = { 1, 1000000 };
	uint64_t locs[MAX_FRAMES + 64];
	struct symbolizer *sym;
	struct profile *p;
	int ret, k;

	ret = profile_new(&p);
	if (!ret)
		ret = profile_add_sample_type(p, "samples", "count");
	if (!ret)
		ret = profile_add_sample_type(p, "cpu", "nanoseconds");
	if (!ret)
		ret = symbolizer_new(p, maps, &sym);
	for (size_t i = 0; !ret && i < n; i++) {
		ret = symbolizer_stack(sym, 0, stacks[i], depth[i], locs,
				       MAX_FRAMES + 64, &k, NULL);
		if (!ret)
			ret = profile_add_sample(p, locs, k, NULL, 0, values);
	}
	if (sym)
		symbolizer_free(sym);
	profile_free(p);
	return ret;
}

/* stacks and depth: room for n, written before (their page faults are
 * not the unwinder's) */
static int one_round(pid_t pid, struct proc_maps *maps,
		     const struct sample *v, size_t n, int r,
		     uint64_t (*stacks)[MAX_FRAMES], int *depth)
{
	uint64_t frames = 0, sum = 0;
	struct unwinder *u = NULL;
	double t0, t1, t2;
	size_t m = 0;
	int ret;

	ret = unwinder_new(maps, &u);
	if (!ret)
		ret = unwinder_read_live(u, pid);
	if (ret)
		goto out;
	t0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	for (size_t i = 0; i < n; i++) {
		if (v[i].h.pid != (uint32_t)pid)
			continue;
		unwind_stack(u, &v[i].h.regs, v[i].stack, v[i].h.stack_len,
			     stacks[m], MAX_FRAMES, &depth[m]);
		frames += depth[m];
		for (int j = 0; j < depth[m]; j++)
			sum = sum * 31 + stacks[m][j];
		m++;
	}
	t1 = now_s(CLOCK_THREAD_CPUTIME_ID);
	ret = name_all(maps, stacks, depth, m);
	t2 = now_s(CLOCK_THREAD_CPUTIME_ID);
	printf("round %d: unwind %.2f us, name %.2f us a sample; %zu "
	       "samples, %llu frames, checksum %016llx\n", r + 1,
	       (t1 - t0) * 1e6 / m, (t2 - t1) * 1e6 / m, m,
	       (unsigned long long)frames, (unsigned long long)sum);
out:
	unwinder_free(u);
	return ret;
}

static int replay(pid_t pid, const char *path, int rounds)
{
	struct dso_cache *cache;
	struct proc_maps *maps = NULL;
	uint64_t (*stacks)[MAX_FRAMES];
	struct sample *v;
	int *depth;
	size_t n;
	int ret;

	ret = load(path, &v, &n);
	if (ret) {
		samples_free(v, n);
		return ret;
	}
	ret = dso_cache_new(NULL, &cache);
	if (ret) {
		samples_free(v, n);
		return ret;
	}
	ret = maps_load(pid, cache, &maps);
	stacks = malloc(n * sizeof(*stacks));
	depth = malloc(n * sizeof(*depth));
	if (!ret && (!stacks || !depth))
		ret = -ENOMEM;
	/* not 0: the compiler makes malloc() + memset(0) a calloc(), whose
	 * fresh pages the first round would then fault in */
	if (!ret) {
		memset(stacks, 0xff, n * sizeof(*stacks));
		memset(depth, 0xff, n * sizeof(*depth));
	}
	for (int r = 0; r < rounds && !ret; r++)
		ret = one_round(pid, maps, v, n, r, stacks, depth);
	free(stacks);
	free(depth);
	maps_free(maps);
	dso_cache_free(cache);
	samples_free(v, n);
	return ret;
}

int main(int argc, char **argv)
{
	int ret = -EINVAL;

	if (argc == 6 && !strcmp(argv[1], "record"))
		ret = record(atoi(argv[2]), atof(argv[3]), atoi(argv[4]),
			     argv[5]);
	else if (argc == 5 && !strcmp(argv[1], "replay"))
		ret = replay(atoi(argv[2]), argv[3], atoi(argv[4]));
	else
		fprintf(stderr, "usage: %s record PID SECONDS HZ FILE\n"
			"       %s replay PID FILE ROUNDS\n", argv[0], argv[0]);
	if (ret)
		fprintf(stderr, "unwind-replay: %s\n", strerror(-ret));
	return ret ? 1 : 0;
}
