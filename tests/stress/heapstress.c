// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * heapstress - allocation patterns that stress the moment the heap agent
 * is loaded into a process (issue 16): a loader that stops a thread
 * halfway through a heap change, or swallows a failed call, shows here as
 * an abort, a crash, a corrupted block or a hang.
 *
 * Usage: heapstress PATTERN SECONDS. Runs the pattern for SECONDS, or
 * until SIGUSR2 (the stress harness sends it once its read is done, so a
 * slow load still happens while the pattern runs), checks every block it
 * kept (each is filled with a pattern of its own address), prints
 * "checksum N" and exits 0; a corrupted block exits 3.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CORRUPT 3

static double deadline;
static volatile sig_atomic_t stop;
static const char *plugin_path;
static volatile unsigned long checksum;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int running(void)
{
	return !stop && now() < deadline;
}

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static unsigned char tag(const void *p)
{
	uintptr_t a = (uintptr_t)p;

	return (unsigned char)(a ^ a >> 8 ^ a >> 16 ^ 0x5a);
}

/* Fill: the first and last 32 bytes and one byte a page. */
static void fill(void *p, size_t n)
{
	unsigned char *c = p, t = tag(p);

	for (size_t i = 0; i < n; i += i < 32 || i + 32 >= n ? 1 : 4096)
		c[i] = t;
	if (n)
		c[n - 1] = t;
}

static void check(const void *p, size_t n)
{
	const unsigned char *c = p;
	unsigned char t = tag(p);

	for (size_t i = 0; i < n; i += i < 32 || i + 32 >= n ? 1 : 4096) {
		if (c[i] != t) {
			fprintf(stderr, "heapstress: block %p+%zu corrupted\n",
				p, i);
			_exit(CORRUPT);
		}
	}
	if (n && c[n - 1] != t)
		_exit(CORRUPT);
	checksum += t + n;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		fprintf(stderr, "heapstress: out of memory\n");
		exit(2);
	}
	fill(p, n);
	return p;
}

static void release(void *p, size_t n)
{
	check(p, n);
	free(p);
}

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* One thread growing the heap: kept 1 KiB blocks, 64 KiB blocks (mmap
 * threshold) made and freed, kept callocs, a growing realloc. */
struct kept {
	void *p;
	size_t n;
};

static void keep(struct kept **k, size_t *nk, size_t *cap, void *p,
		 size_t n)
{
	if (*nk == *cap) {
		*cap = *cap ? 2 * *cap : 4096;
		*k = realloc(*k, *cap * sizeof(**k));
		if (!*k)
			exit(2);
	}
	(*k)[(*nk)++] = (struct kept){ p, n };
}

static void pat_grow(void)
{
	struct kept *kept = NULL;
	size_t nkept = 0, cap = 0, big_n = 0;
	char *big = NULL;

	while (running()) {
		for (int i = 0; i < 1024; i++)
			keep(&kept, &nkept, &cap, xmalloc(1024), 1024);
		for (int i = 0; i < 64; i++)
			release(xmalloc(65536), 65536);
		for (int i = 0; i < 64; i++) {
			char *c = calloc(1, 4096);

			if (c[0] || c[4095])
				_exit(CORRUPT);
			fill(c, 4096);
			keep(&kept, &nkept, &cap, c, 4096);
		}
		big = realloc(big, big_n + 65536);
		memset(big + big_n, 0x77, 65536);
		big_n += 65536;
		if (big[0] != 0x77 || big[big_n - 1] != 0x77)
			_exit(CORRUPT);
		usleep(100000);
	}
	for (size_t i = 0; i < nkept; i++)
		release(kept[i].p, kept[i].n);
	free(kept);
	free(big);
}

/* calloc with no top padding and no trim threshold: every calloc grows
 * the heap top by brk and every free gives it back (issue 16's
 * reproduction: 15 of 20 loads failed this way). */
static void pat_calloc(void)
{
	static void *p[1000];

	mallopt(M_TOP_PAD, 0);
	mallopt(M_TRIM_THRESHOLD, 0);
	while (running()) {
		for (int i = 0; i < 1000; i++) {
			unsigned char *c = calloc(1, 4096);

			if (c[0] || c[4095])
				_exit(CORRUPT);
			fill(c, 4096);
			p[i] = c;
		}
		for (int i = 0; i < 1000; i++)
			release(p[i], 4096);
	}
}

/* 8 threads, 16 B to 1 MiB: tcache, fast and small bins, large bins,
 * mmap; blocks handed between threads. */
#define SLOTS 512
static void *shared_p[SLOTS];
static size_t shared_n[SLOTS];
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;

static void *thread_worker(void *arg)
{
	unsigned s = (unsigned)(uintptr_t)arg * 7919u + 1;

	while (running()) {
		for (int k = 0; k < 256; k++) {
			unsigned r = rnd(&s), slot = r % SLOTS;
			size_t n = (size_t)16 << (r >> 9) % 17;	/* 16 B..1 MiB */
			void *old, *p;
			size_t oldn;

			n += r % 97;
			p = xmalloc(n);
			pthread_mutex_lock(&shared_lock);
			old = shared_p[slot];
			oldn = shared_n[slot];
			shared_p[slot] = p;
			shared_n[slot] = n;
			pthread_mutex_unlock(&shared_lock);
			if (old)
				release(old, oldn);
		}
		usleep(1000);
	}
	return NULL;
}

static void run_threads(void *(*fn)(void *), int n)
{
	pthread_t t[16];

	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, fn, (void *)(uintptr_t)i);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static void pat_threads(void)
{
	run_threads(thread_worker, 8);
	for (int i = 0; i < SLOTS; i++)
		if (shared_p[i])
			release(shared_p[i], shared_n[i]);
}

/* realloc growth and shrink of a few blocks, with the contents kept. */
static void pat_realloc(void)
{
	unsigned char *p[16] = { 0 };
	size_t n[16] = { 0 };
	unsigned s = 1;

	while (running()) {
		for (int k = 0; k < 1000; k++) {
			int i = rnd(&s) % 16;
			size_t m = n[i] < (4 << 20) ? n[i] + 1 + rnd(&s) % 70000 :
				   rnd(&s) % 4096 + 1;
			size_t keep = m < n[i] ? m : n[i];

			p[i] = realloc(p[i], m);
			for (size_t j = 0; j < keep; j += 4093)
				if (p[i][j] != (unsigned char)(j * 31 + i))
					_exit(CORRUPT);
			for (size_t j = keep; j < m; j++)
				p[i][j] = (unsigned char)(j * 31 + i);
			n[i] = m;
		}
		usleep(1000);
	}
	for (int i = 0; i < 16; i++)
		free(p[i]);
}

/* fork with allocations around it: fork holds every arena lock. */
static void pat_fork(void)
{
	while (running()) {
		void *a = xmalloc(4096);
		pid_t c = fork();
		int st;

		if (c == 0) {
			void *b = xmalloc(100);

			release(b, 100);
			_exit(0);
		}
		release(a, 4096);
		while (c > 0 && waitpid(c, &st, 0) < 0 && errno == EINTR)
			;
		if (c > 0 && (!WIFEXITED(st) || WEXITSTATUS(st)))
			_exit(CORRUPT);
		usleep(2000);
	}
}

/* A signal handler that allocates (not async-signal-safe, but common),
 * interrupting a loop that allocates too. */
static void on_alarm(int sig)
{
	(void)sig;
	release(xmalloc(200), 200);
}

static void pat_signal(void)
{
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };

	/* The first allocations make the heap and the thread's cache: a tick
	 * inside them would deadlock the handler's malloc on the arena lock
	 * by itself (seen under load, without proffs: the timer's first tick
	 * came during the first sysmalloc). Later the loop's sizes stay in
	 * the cache, which takes no lock. */
	release(xmalloc(64), 64);
	release(xmalloc(200), 200);
	signal(SIGALRM, on_alarm);
	setitimer(ITIMER_REAL, &it, NULL);
	while (running())
		for (int i = 0; i < 100; i++)
			release(xmalloc(64 + i), 64 + i);
	it = (struct itimerval){ 0 };
	setitimer(ITIMER_REAL, &it, NULL);
}

/* dlopen and dlclose of a library that allocates: the loader's locks. */
static void pat_dlopen(void)
{
	while (running()) {
		void *h = dlopen(plugin_path, RTLD_NOW);
		long (*fn)(long, long);

		if (!h) {
			fprintf(stderr, "heapstress: %s\n", dlerror());
			exit(2);
		}
		fn = (long (*)(long, long))dlsym(h, "plugin_alloc");
		if (fn)
			fn(16, 256);
		dlclose(h);
		usleep(1000);
	}
}

/* Threads created and joined in a loop: the stack cache lock. */
static void *short_thread(void *arg)
{
	release(xmalloc(1000 + (uintptr_t)arg), 1000 + (uintptr_t)arg);
	return NULL;
}

static void pat_threadloop(void)
{
	while (running())
		run_threads(short_thread, 4);
}

/*
 * Registers that must come back as they were: the main thread (the one a
 * load's calls run on) spins with all sixteen vector registers and five
 * general ones holding a pattern, then checks them. A call that put back
 * its thread's extended state or registers wrong - by ptrace, or by the
 * signal frame a dying daemon leaves it to (inject_call.c) - shows here.
 * (No push in the asm: the stack must unwind, with the compiler's CFI, for
 * the thread to be judged safe.)
 */
static uint64_t vpat[16][4];

/* 1 when intact; else 0 with what differed: *vmask the bytes of the
 * sixteen vector registers' comparison ANDed (0xffffffff: all equal),
 * *gbad whether a general register did. */
__attribute__((target("avx2"), noinline)) static int spin_avx2(long n,
							     unsigned *vmask,
							     long *gbad)
{
	unsigned mask;
	long r12 = 0x1212, r13 = 0x1313, r14 = 0x1414, r15 = 0x1515;
	long rbx = 0xbbbb, bad = 0;

	__asm__ volatile(
		"mov %[rbx], %%rbx\n\t"
		"mov %[r12], %%r12\n\tmov %[r13], %%r13\n\t"
		"mov %[r14], %%r14\n\tmov %[r15], %%r15\n\t"
#define L(i) "vmovdqu " #i "*32(%[p]), %%ymm" #i "\n\t"
		L(0) L(1) L(2) L(3) L(4) L(5) L(6) L(7)
		L(8) L(9) L(10) L(11) L(12) L(13) L(14) L(15)
#undef L
		"1: dec %[n]\n\tjnz 1b\n\t"
#define C(i) "vpcmpeqq " #i "*32(%[p]), %%ymm" #i ", %%ymm" #i "\n\t" \
	     "vpand %%ymm" #i ", %%ymm0, %%ymm0\n\t"
		C(0) C(1) C(2) C(3) C(4) C(5) C(6) C(7)
		C(8) C(9) C(10) C(11) C(12) C(13) C(14) C(15)
#undef C
		"vpmovmskb %%ymm0, %[mask]\n\t"
		"cmp %[rbx], %%rbx\n\tsetne %b[bad]\n\t"
		"cmp %[r12], %%r12\n\tsetne %%al\n\tor %%al, %b[bad]\n\t"
		"cmp %[r13], %%r13\n\tsetne %%al\n\tor %%al, %b[bad]\n\t"
		"cmp %[r14], %%r14\n\tsetne %%al\n\tor %%al, %b[bad]\n\t"
		"cmp %[r15], %%r15\n\tsetne %%al\n\tor %%al, %b[bad]\n\t"
		"vzeroupper"
		: [n] "+r"(n), [mask] "=&r"(mask), [bad] "+&q"(bad)
		: [p] "r"(vpat), [rbx] "m"(rbx),
		  [r12] "m"(r12), [r13] "m"(r13), [r14] "m"(r14),
		  [r15] "m"(r15)
		: "rax", "rbx", "r12", "r13", "r14", "r15", "memory", "cc",
		  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
		  "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
		  "xmm14", "xmm15");
	*vmask = mask;
	*gbad = bad;
	return mask == 0xffffffffu && !bad;
}

static void pat_fpu(void)
{
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 4; j++)
			vpat[i][j] = 0x0101010101010101ull * (i + 1) ^
				     (uint64_t)j << 56 ^ 0x8000000080000000ull;
	if (!__builtin_cpu_supports("avx2")) {
		fprintf(stderr, "heapstress: fpu needs AVX2\n");
		exit(2);
	}
	while (running()) {
		unsigned vmask;
		long gbad;

		release(xmalloc(256), 256);
		if (!spin_avx2(200000, &vmask, &gbad)) {
			fprintf(stderr, "heapstress: registers changed "
				"(vector compare mask %#x, general %s)\n",
				vmask, gbad & 0xff ? "changed" : "intact");
			_exit(CORRUPT);
		}
	}
}

static const struct {
	const char *name;
	void (*run)(void);
} patterns[] = {
	{ "grow", pat_grow },
	{ "fpu", pat_fpu },
	{ "calloc", pat_calloc },
	{ "threads", pat_threads },
	{ "realloc", pat_realloc },
	{ "fork", pat_fork },
	{ "signal", pat_signal },
	{ "dlopen", pat_dlopen },
	{ "threadloop", pat_threadloop },
};

int main(int argc, char **argv)
{
	char self[4096];
	ssize_t len;

	if (argc != 3) {
		fprintf(stderr, "usage: heapstress PATTERN SECONDS\n");
		return 2;
	}
	/* the plugin lies beside the targets: ../targets/libplugin.so */
	len = readlink("/proc/self/exe", self, sizeof(self) - 64);
	if (len > 0) {
		static char path[4096 + 64];

		self[len] = '\0';
		*strrchr(self, '/') = '\0';
		snprintf(path, sizeof(path), "%s/../targets/libplugin.so", self);
		plugin_path = path;
	}
	deadline = now() + atof(argv[2]);
	signal(SIGUSR2, on_stop);
	for (size_t i = 0; i < sizeof(patterns) / sizeof(*patterns); i++) {
		if (strcmp(argv[1], patterns[i].name))
			continue;
		patterns[i].run();
		printf("checksum %lu\n", checksum);
		return 0;
	}
	fprintf(stderr, "heapstress: no pattern %s\n", argv[1]);
	return 2;
}
