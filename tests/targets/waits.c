// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * waits - threads whose time off the CPU is known by construction, for
 * the wall, block and mutex kinds:
 *   sleeper     each 100 ms: spins 30 ms in sleeper_spin, then sleeps to
 *               the end of the 100 ms in sleeper_sleep (clock_nanosleep)
 *   holder      each 45 ms: holds the mutex 40 ms, asleep in holder_hold
 *               (nanosleep), then signals the condition and sleeps 5 ms
 *               in holder_rest
 *   waiter      waits for the mutex in waiter_lock, then sleeps 2 ms in
 *               waiter_rest: almost all its time is a mutex wait
 *   condwaiter  waits for the holder's signal in cond_park
 *               (pthread_cond_wait): a block that is not a mutex
 *   main        asleep in main_idle
 *
 * With an argument FILE, the threads keep their measured times in FILE
 * (struct truth below, CLOCK_MONOTONIC nanoseconds, mmapped), so a test
 * can take the truth over exactly the window it profiled: a waiter's wait
 * depends on who gets the mutex first after each release, and on a busy
 * machine a thread whose sleep is over may wait for a CPU inside the
 * sleeping call (the time in a function is from its call to its return).
 * Prints "ready" once every thread is named and running.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define LOG_WAITS 4096

/* One wait counted in lock_waits or cond_waits: from its call to its
 * return. */
struct wait_span {
	_Atomic uint64_t start_ns, end_ns;
};

/* Nine counters, in this order, as the tests read them; then the last
 * LOG_WAITS waits counted of the waiter and of the condwaiter, the i-th
 * at i % LOG_WAITS (written before the count goes up): a test takes the
 * waits of exactly the window a profile says it took. */
struct truth {
	_Atomic uint64_t spin_ns, sleep_ns;	/* sleeper */
	_Atomic uint64_t hold_ns, rest_ns;	/* holder */
	_Atomic uint64_t lock_wait_ns, lock_waits;	/* waiter */
	_Atomic uint64_t cond_wait_ns, cond_waits;	/* condwaiter */
	_Atomic uint64_t waiter_rest_ns;	/* waiter, outside the lock */
	struct wait_span lock_log[LOG_WAITS], cond_log[LOG_WAITS];
};

static struct truth local, *truth = &local;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static unsigned long generation;	/* under cond_mutex */
static _Atomic int started;

/* The wait [t, u] is the next one of *count, in log. */
static void count_wait(_Atomic uint64_t *count, struct wait_span *log,
		       uint64_t t, uint64_t u)
{
	struct wait_span *w = &log[atomic_load(count) % LOG_WAITS];

	atomic_store(&w->start_ns, t);
	atomic_store(&w->end_ns, u);
	atomic_fetch_add(count, 1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}

static void name(const char *n)
{
	prctl(PR_SET_NAME, n);
	atomic_fetch_add(&started, 1);
}

/* The clock is read every few microseconds only: samples of the spin
 * land in it, not in the vDSO's clock_gettime. */
__attribute__((noinline)) void sleeper_spin(uint64_t until)
{
	while (now_ns() < until)
		for (int i = 0; i < 20000; i++)
			asm volatile("" ::: "memory");
}

__attribute__((noinline)) void sleeper_sleep(uint64_t until)
{
	struct timespec ts = { until / 1000000000ull, until % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

static void *sleeper(void *arg)
{
	uint64_t cycle = now_ns(), t, u;

	(void)arg;
	name("sleeper");
	for (;;) {
		t = now_ns();
		sleeper_spin(cycle + 30000000ull);
		u = now_ns();
		atomic_fetch_add(&truth->spin_ns, u - t);
		cycle += 100000000ull;
		if (cycle < u)	/* the spin overran: start afresh */
			cycle = u + 70000000ull;
		sleeper_sleep(cycle);
		atomic_fetch_add(&truth->sleep_ns, now_ns() - u);
	}
	return NULL;
}

__attribute__((noinline)) void holder_hold(void)
{
	pthread_mutex_lock(&mutex);
	sleep_ms(40);
	pthread_mutex_unlock(&mutex);
}

__attribute__((noinline)) void holder_rest(void)
{
	sleep_ms(5);
}

static void *holder(void *arg)
{
	uint64_t t = now_ns(), u;

	(void)arg;
	name("holder");
	for (;;) {
		holder_hold();
		u = now_ns();
		atomic_fetch_add(&truth->hold_ns, u - t);
		/* Signalled outside the mutex: a woken condwaiter never
		 * waits for it (a holder preempted inside would make that
		 * a lock wait). */
		pthread_mutex_lock(&cond_mutex);
		generation++;
		pthread_mutex_unlock(&cond_mutex);
		pthread_cond_signal(&cond);
		holder_rest();
		t = now_ns();
		atomic_fetch_add(&truth->rest_ns, t - u);
	}
	return NULL;
}

__attribute__((noinline)) void waiter_lock(void)
{
	uint64_t t = now_ns(), u;

	pthread_mutex_lock(&mutex);
	u = now_ns();
	pthread_mutex_unlock(&mutex);
	atomic_fetch_add(&truth->lock_wait_ns, u - t);
	if (u - t > 1000000)
		count_wait(&truth->lock_waits, truth->lock_log, t, u);
}

__attribute__((noinline)) void waiter_rest(void)
{
	sleep_ms(2);
}

static void *waiter(void *arg)
{
	(void)arg;
	name("waiter");
	uint64_t t;

	for (;;) {
		waiter_lock();
		t = now_ns();
		waiter_rest();
		atomic_fetch_add(&truth->waiter_rest_ns, now_ns() - t);
	}
	return NULL;
}

__attribute__((noinline)) void cond_park(void)
{
	unsigned long seen;
	uint64_t t, u;

	pthread_mutex_lock(&cond_mutex);
	seen = generation;
	t = now_ns();
	while (generation == seen)
		pthread_cond_wait(&cond, &cond_mutex);
	pthread_mutex_unlock(&cond_mutex);
	u = now_ns();
	atomic_fetch_add(&truth->cond_wait_ns, u - t);
	count_wait(&truth->cond_waits, truth->cond_log, t, u);
}

static void *condwaiter(void *arg)
{
	(void)arg;
	name("condwaiter");
	for (;;)
		cond_park();
	return NULL;
}

__attribute__((noinline)) void main_idle(void)
{
	for (;;)
		sleep_ms(1000);
}

static void map_truth(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	void *m;

	if (fd < 0 || ftruncate(fd, sizeof(*truth))) {
		perror(path);
		exit(1);
	}
	m = mmap(NULL, sizeof(*truth), PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	close(fd);
	truth = m;
}

int main(int argc, char **argv)
{
	void *(*fns[])(void *) = { sleeper, holder, waiter, condwaiter };
	pthread_t th;

	if (argc > 1)
		map_truth(argv[1]);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (pthread_create(&th, NULL, fns[i], NULL))
			return 1;
	while (atomic_load(&started) < 4)
		sleep_ms(1);
	printf("ready\n");
	fflush(stdout);
	main_idle();
	return 0;
}
