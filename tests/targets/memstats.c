// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * memstats - a program whose calls of the allocator are known exactly, for
 * the MemStats figures (Mallocs, Frees, HeapAlloc, HeapObjects).
 *
 *   memstats [SCALE]
 *
 * Prints "ready", then waits for SIGUSR1. On each it runs one round and
 * prints one JSON line of what the round did, by construction:
 *   {"mallocs": M, "frees": F, "alloc_bytes": A, "live_bytes": L,
 *    "live_objects": O, "classes": [[count, size, kept], ...]}
 * mallocs and frees count calls (malloc, calloc, realloc, free of a
 * block; a realloc of a block counts as a free and a malloc; free(NULL)
 * counts nothing); alloc_bytes the bytes they asked for; live_* what the
 * round keeps (live until the program ends); classes each group of equal
 * blocks, [count, size, how many kept], for the sampling error of an
 * estimate.
 *
 * A round, spread over threads so that every way a thread's counts are
 * kept is used:
 *   - main: SCALE x 16384 blocks of 1 KiB kept; 5000 malloc/free pairs
 *     of 32 bytes; 100 callocs of 10 x 100 freed; a block grown by 10
 *     reallocs from realloc(NULL) then freed; 1000 free(NULL);
 *   - a worker thread mallocs 2000 blocks of 256 bytes, frees half,
 *     hands the other half to a thread that only frees (it never
 *     allocates), and both end: their counts outlive them;
 *   - a thread that lives on, parked between rounds, mallocs 300 blocks
 *     of 128 bytes and frees 100 of them each round.
 * Nothing else allocates after "ready": the output is written with
 * write(2), no stdio.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEEP_N 16384
#define KEEP_SIZE 1024
#define PAIRS 5000
#define PAIR_SIZE 32
#define CALLOCS 100
#define CALLOC_N 10
#define CALLOC_SIZE 100
#define REALLOCS 10
#define NULL_FREES 1000
#define WORKER_N 2000
#define WORKER_SIZE 256
#define PARKED_N 300
#define PARKED_FREE 100
#define PARKED_SIZE 128

struct tally {
	unsigned long mallocs, frees, alloc_bytes, live_bytes, live_objects;
};

static void *volatile sink;	/* keeps the compiler from eliding pairs */
static void *handed[WORKER_N / 2];
static pthread_barrier_t parked_go, parked_done;

static void *worker(void *arg)
{
	void *b[WORKER_N];

	(void)arg;
	for (int i = 0; i < WORKER_N; i++)
		b[i] = malloc(WORKER_SIZE);
	for (int i = 0; i < WORKER_N / 2; i++)
		free(b[i]);
	memcpy(handed, b + WORKER_N / 2, sizeof(handed));
	return NULL;
}

/* Never allocates: its first call of a hook is a free. */
static void *freer(void *arg)
{
	(void)arg;
	for (int i = 0; i < WORKER_N / 2; i++)
		free(handed[i]);
	return NULL;
}

static void *parked(void *arg)
{
	void *b[PARKED_N];

	(void)arg;
	for (;;) {
		pthread_barrier_wait(&parked_go);
		for (int i = 0; i < PARKED_N; i++)
			b[i] = malloc(PARKED_SIZE);
		for (int i = 0; i < PARKED_FREE; i++)
			free(b[i]);
		pthread_barrier_wait(&parked_done);
	}
	return NULL;
}

static void main_thread(int scale, struct tally *t)
{
	size_t n = (size_t)scale * KEEP_N;
	void **keep = malloc(n * sizeof(*keep)), *p;

	/* keep itself is an allocation kept too */
	t->mallocs++;
	t->alloc_bytes += n * sizeof(*keep);
	t->live_bytes += n * sizeof(*keep);
	t->live_objects++;
	for (size_t i = 0; i < n; i++)
		keep[i] = malloc(KEEP_SIZE);
	t->mallocs += n;
	t->alloc_bytes += n * KEEP_SIZE;
	t->live_bytes += n * KEEP_SIZE;
	t->live_objects += n;
	for (int i = 0; i < PAIRS; i++) {
		sink = malloc(PAIR_SIZE);
		free(sink);
	}
	t->mallocs += PAIRS;
	t->frees += PAIRS;
	t->alloc_bytes += PAIRS * PAIR_SIZE;
	for (int i = 0; i < CALLOCS; i++) {
		sink = calloc(CALLOC_N, CALLOC_SIZE);
		free(sink);
	}
	t->mallocs += CALLOCS;
	t->frees += CALLOCS;
	t->alloc_bytes += CALLOCS * CALLOC_N * CALLOC_SIZE;
	p = realloc(NULL, 16);
	t->mallocs++;
	t->alloc_bytes += 16;
	for (int i = 1; i <= REALLOCS; i++) {
		p = realloc(p, 16 << i);
		t->mallocs++;
		t->frees++;
		t->alloc_bytes += 16 << i;
	}
	free(p);
	t->frees++;
	for (int i = 0; i < NULL_FREES; i++) {
		sink = NULL;
		free(sink);
	}
}

static void round_once(int scale, struct tally *t)
{
	pthread_t w, f;

	main_thread(scale, t);
	pthread_create(&w, NULL, worker, NULL);
	pthread_join(w, NULL);
	pthread_create(&f, NULL, freer, NULL);
	pthread_join(f, NULL);
	t->mallocs += WORKER_N;
	t->frees += WORKER_N;
	t->alloc_bytes += WORKER_N * WORKER_SIZE;
	pthread_barrier_wait(&parked_go);
	pthread_barrier_wait(&parked_done);
	t->mallocs += PARKED_N;
	t->frees += PARKED_FREE;
	t->alloc_bytes += PARKED_N * PARKED_SIZE;
	t->live_bytes += (PARKED_N - PARKED_FREE) * PARKED_SIZE;
	t->live_objects += PARKED_N - PARKED_FREE;
}

static void say(const char *s)
{
	size_t len = strlen(s);

	while (len) {
		ssize_t n = write(1, s, len);

		if (n <= 0)
			exit(1);
		s += n;
		len -= n;
	}
}

static void report(int scale, const struct tally *t)
{
	char line[512];

	snprintf(line, sizeof(line), "{\"mallocs\": %lu, \"frees\": %lu, "
		 "\"alloc_bytes\": %lu, \"live_bytes\": %lu, "
		 "\"live_objects\": %lu, \"classes\": [[1, %lu, 1], "
		 "[%lu, %d, %lu], "
		 "[%d, %d, 0], [%d, %d, 0], [%d, %d, 0], [%d, %d, %d]]}\n",
		 t->mallocs, t->frees, t->alloc_bytes, t->live_bytes,
		 t->live_objects,
		 (unsigned long)scale * KEEP_N * sizeof(void *),
		 (unsigned long)scale * KEEP_N, KEEP_SIZE,
		 (unsigned long)scale * KEEP_N,
		 PAIRS, PAIR_SIZE, CALLOCS, CALLOC_N * CALLOC_SIZE,
		 WORKER_N, WORKER_SIZE, PARKED_N, PARKED_SIZE,
		 PARKED_N - PARKED_FREE);
	say(line);
}

int main(int argc, char **argv)
{
	int scale = argc > 1 ? atoi(argv[1]) : 1, sig;
	pthread_t park;
	sigset_t set;

	if (scale < 1)
		scale = 1;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	pthread_barrier_init(&parked_go, NULL, 2);
	pthread_barrier_init(&parked_done, NULL, 2);
	pthread_create(&park, NULL, parked, NULL);
	say("ready\n");
	for (;;) {
		struct tally t = { 0 };

		if (sigwait(&set, &sig))
			return 1;
		round_once(scale, &t);
		report(scale, &t);
	}
}
