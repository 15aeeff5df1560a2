// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * stackcopy - what the kernel's copy of the user stack costs a thread at
 * every perf sample, by the size asked (sample_stack_user), for a stack
 * 24 KiB deep: the measurement behind keeping perf's 8 KiB and reading
 * deeper stacks from the live thread instead (sampler/unwind/livestack.h,
 * docs/performance.md).
 *
 *   stackcopy [HZ [ROUNDS [fill|holes]]]      (4999, 15, fill)
 *
 * The thread samples itself with cpu-clock at HZ (a second thread drains
 * the ring), working through a frame of 24 KiB of locals: written whole
 * (fill), or left untouched (holes: the kernel copies only the pages
 * present, so it stops a few bytes up). For each size, in turns, ROUNDS
 * times: the thread's CPU time per unit of work; the medians, against no
 * stack copy at all, give the cost per sample.
 */
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RING_PAGES 1024
#define PAGE 4096
#define ROUND_S 0.4
#define MAX_ROUNDS 64

static const int sizes[] = { 0, 8192, 16384, 32768, 65000 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static _Atomic bool stop;
static _Atomic uint64_t nsamples;
static volatile uint64_t sink;

static void *drain(void *ring)
{
	struct perf_event_mmap_page *pg = ring;
	uint8_t *data = (uint8_t *)ring + PAGE;

	while (!atomic_load(&stop)) {
		uint64_t head = __atomic_load_n(&pg->data_head,
						__ATOMIC_ACQUIRE);
		uint64_t tail = pg->data_tail;

		while (tail < head) {
			struct perf_event_header *h = (void *)(data +
				(tail & (RING_PAGES * PAGE - 1)));

			if (h->type == PERF_RECORD_SAMPLE)
				nsamples++;
			tail += h->size;
		}
		__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
		usleep(2000);
	}
	return NULL;
}

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* CPU ns per unit of work over about ROUND_S of CPU. */
__attribute__((noinline)) static double work(void)
{
	uint64_t t0 = thread_ns(), units = 0;

	while (thread_ns() - t0 < ROUND_S * 1e9) {
		uint64_t x = units;

		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		sink += x;
		units++;
	}
	return (double)(thread_ns() - t0) / units;
}

__attribute__((noinline)) static double deep(bool fill)
{
	volatile char buf[24 * 1024];

	for (size_t i = 0; i < sizeof(buf); i += fill ? 1 : sizeof(buf) - 1)
		buf[i] = 1;
	return work() + buf[0] * 0;
}

/* One round, sampled with a copy of size bytes (0: none). */
static double round_with(int size, unsigned hz, bool fill, uint64_t *n)
{
	struct perf_event_attr a = {
		.size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000000ull / hz,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			       PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD,
		.exclude_kernel = 1, .exclude_hv = 1,
	};
	pthread_t th;
	void *ring;
	double per;
	int fd;

	if (size > 0) {
		a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a.sample_regs_user = 0x1ff | (0xffull << 16);
		a.sample_stack_user = size;
	}
	fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0) {
		perror("perf_event_open");
		exit(1);
	}
	ring = mmap(NULL, PAGE + RING_PAGES * PAGE, PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	atomic_store(&stop, false);
	nsamples = 0;
	pthread_create(&th, NULL, drain, ring);
	per = deep(fill);
	atomic_store(&stop, true);
	pthread_join(th, NULL);
	*n += nsamples;
	munmap(ring, PAGE + RING_PAGES * PAGE);
	close(fd);
	return per;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	unsigned hz = argc > 1 ? atoi(argv[1]) : 4999;
	int rounds = argc > 2 ? atoi(argv[2]) : 15;
	bool fill = argc <= 3 || strcmp(argv[3], "holes");
	static double per[NSIZES][MAX_ROUNDS];
	uint64_t n[NSIZES] = { 0 };
	double med[NSIZES];

	if (!hz || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: %s [HZ [ROUNDS [fill|holes]]]\n",
			argv[0]);
		return 2;
	}
	for (int r = 0; r < rounds; r++)
		for (size_t k = 0; k < NSIZES; k++)
			per[k][r] = round_with(sizes[k], hz, fill, &n[k]);
	for (size_t k = 0; k < NSIZES; k++) {
		qsort(per[k], rounds, sizeof(double), by_value);
		med[k] = per[k][rounds / 2];
	}
	printf("%d Hz, a 24 KiB frame %s, medians of %d rounds\n", hz,
	       fill ? "written whole" : "left untouched", rounds);
	for (size_t k = 1; k < NSIZES; k++) {
		/* samples per unit of work: the unit's CPU time x hz */
		double per_unit = med[k] * 1e-9 * hz;

		printf("copy %5d bytes: %+.1f%% CPU per unit of work, %.1f us "
		       "a sample more than no copy (%llu samples)\n",
		       sizes[k], 100 * (med[k] / med[0] - 1),
		       (med[k] - med[0]) / 1e3 / per_unit,
		       (unsigned long long)n[k]);
	}
	return 0;
}
