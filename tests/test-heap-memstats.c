// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-heap-memstats - MemStats as a profile's figures
 * (sampler/heap/heap_memstats.c):
 *   - heap_mem_read() on this very process, against mappings made here:
 *     an anonymous region adds its size to HeapSys and what is touched
 *     of it to HeapInuse, MADV_DONTNEED takes that back; a thread's stack
 *     counts as Stack, not heap; Sys grows with the region;
 *   - heap_memstats_add(): Go's names in Go's order, the values given,
 *     and the fields nobody could know left out, with a note saying why.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "sampler/heap/heap_memstats.h"
#include "sampler/model/profile.h"

#define MiB (1ull << 20)

/* AddressSanitizer keeps a shadow byte per 8 bytes of memory, anonymous
 * and read-write like a heap: under it, touching n bytes may touch n / 8
 * more, which this process's HeapInuse rightly counts. Whether it does
 * depends on the shadow's state before (one CI run counted +18.9 MB for
 * 16 MiB touched, this machine +16.8 MB): under ASan the shadow is a
 * range, not a fixed addition. */
#if defined(__SANITIZE_ADDRESS__)
#define SHADOW(n) ((n) / 8)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHADOW(n) ((n) / 8)
#endif
#endif
#ifndef SHADOW
#define SHADOW(n) 0
#endif

static int64_t delta(uint64_t a, uint64_t b)
{
	return (int64_t)(b - a);
}

static bool near(int64_t got, int64_t want, int64_t slack)
{
	return got >= want - slack && got <= want + slack;
}

static pthread_barrier_t parked;

static void *park(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&parked);	/* started */
	pthread_barrier_wait(&parked);	/* measured */
	return NULL;
}

static void test_proc(void)
{
	struct heap_mem m0, m1, m2, m3;
	pthread_attr_t attr;
	pthread_t th;
	char *r;

	MUST(heap_mem_read(getpid(), &m0));
	r = mmap(NULL, 64 * MiB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED)
		die("mmap", -errno);
	memset(r, 1, 16 * MiB);
	MUST(heap_mem_read(getpid(), &m1));
	CHECK(near(delta(m0.heap_sys, m1.heap_sys), 64 * MiB, MiB),
	      "HeapSys +%lld", (long long)delta(m0.heap_sys, m1.heap_sys));
	CHECK(near(delta(m0.heap_inuse, m1.heap_inuse),
		   16 * MiB + SHADOW(16 * MiB) / 2,
		   MiB + SHADOW(16 * MiB) / 2),
	      "HeapInuse +%lld",
	      (long long)delta(m0.heap_inuse, m1.heap_inuse));
	CHECK(near(delta(m0.sys, m1.sys), 64 * MiB, MiB), "Sys +%lld",
	      (long long)delta(m0.sys, m1.sys));
	CHECK(m1.max_rss >= 16 * MiB && m1.stack_sys && m1.stack_inuse &&
	      m1.stack_inuse <= m1.stack_sys, "MaxRSS %llu, Stack %llu / %llu",
	      (unsigned long long)m1.max_rss,
	      (unsigned long long)m1.stack_inuse,
	      (unsigned long long)m1.stack_sys);
	madvise(r, 8 * MiB, MADV_DONTNEED);
	MUST(heap_mem_read(getpid(), &m2));
	CHECK(near(delta(m1.heap_inuse, m2.heap_inuse), -8 * (int64_t)MiB,
		   MiB), "released: HeapInuse %lld",
	      (long long)delta(m1.heap_inuse, m2.heap_inuse));
	CHECK(near(delta(m1.heap_sys, m2.heap_sys), 0, MiB), "HeapSys %lld",
	      (long long)delta(m1.heap_sys, m2.heap_sys));
	/* a thread's stack, above its guard page: Stack, not heap */
	pthread_barrier_init(&parked, NULL, 2);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 4 * MiB);
	if (pthread_create(&th, &attr, park, NULL))
		die("pthread_create", -1);
	pthread_barrier_wait(&parked);
	MUST(heap_mem_read(getpid(), &m3));
	pthread_barrier_wait(&parked);
	pthread_join(th, NULL);
	CHECK(near(delta(m2.stack_sys, m3.stack_sys), 4 * MiB, 128 << 10),
	      "Stack +%lld", (long long)delta(m2.stack_sys, m3.stack_sys));
	CHECK(near(delta(m2.heap_sys, m3.heap_sys), 0, MiB), "HeapSys %lld",
	      (long long)delta(m2.heap_sys, m3.heap_sys));
	munmap(r, 64 * MiB);
	CHECK(heap_mem_read(0x7fffffff, &m0) == -ESRCH, "no such process");
}

/* The figures of p, "Name=value " each, and how many notes. */
static void figures(const struct profile *p, char *out, size_t size,
		    unsigned *notes)
{
	size_t n = 0;

	*notes = 0;
	out[0] = '\0';
	for (size_t i = 0; i < profile_nstats(p); i++) {
		const struct pf_stat *st = profile_stat(p, i);

		if (!st->value) {
			(*notes)++;
			continue;
		}
		n += snprintf(out + n, size - n, "%s=%s ",
			      profile_str(p, st->name),
			      profile_str(p, st->value));
	}
}

static bool has_note(const struct profile *p, const char *text)
{
	for (size_t i = 0; i < profile_nstats(p); i++) {
		const struct pf_stat *st = profile_stat(p, i);

		if (!st->value && strstr(profile_str(p, st->name), text))
			return true;
	}
	return false;
}

static struct profile *made(const struct heap_memstats *ms)
{
	struct profile *p;

	MUST(profile_new(&p));
	MUST(heap_memstats_add(p, ms));
	return p;
}

static void test_figures(void)
{
	struct heap_memstats ms = {
		.mallocs = 1000, .frees = 400, .alloc_bytes = 50000,
		.inuse_bytes = 30000, .inuse_objects = 600, .rate = 524288,
		.armed_s = 2.5,
		.mem = { .sys = 9000000, .max_rss = 7000000,
			 .heap_sys = 5000000, .heap_inuse = 3000000,
			 .stack_sys = 139264, .stack_inuse = 8192 },
	};
	struct profile *p;
	char got[1024];
	unsigned notes;

	p = made(&ms);
	figures(p, got, sizeof(got), &notes);
	CHECK(!strcmp(got, "Alloc=30000 TotalAlloc=50000 Sys=9000000 "
		      "Mallocs=1000 Frees=400 HeapAlloc=30000 HeapSys=5000000 "
		      "HeapIdle=2000000 HeapInuse=3000000 "
		      "HeapReleased=2000000 HeapObjects=600 "
		      "Stack=8192 / 139264 MaxRSS=7000000 "), "%s", got);
	CHECK(notes == 3 && has_note(p, "armed, 2.5 s ago") &&
	      has_note(p, "one per 524288 bytes"), "%u notes", notes);
	profile_free(p);
	/* preloaded: since the start; the counts unknown */
	ms.armed_s = -1;
	ms.counts_err = -EAGAIN;
	p = made(&ms);
	figures(p, got, sizeof(got), &notes);
	CHECK(!strstr(got, "Mallocs") && !strstr(got, "Frees") &&
	      strstr(got, "HeapAlloc=30000"), "%s", got);
	CHECK(has_note(p, "since the process started") &&
	      has_note(p, "Mallocs and Frees are unknown"), "notes");
	profile_free(p);
	/* no agent, and /proc refused: nothing but notes */
	ms.no_agent = "it cannot be loaded into this process";
	ms.mem_err = -EACCES;
	p = made(&ms);
	figures(p, got, sizeof(got), &notes);
	CHECK(!got[0] && notes == 2 &&
	      has_note(p, "no heap agent (it cannot be loaded") &&
	      has_note(p, "unknown: /proc: Permission denied"), "%s", got);
	profile_free(p);
}

int main(void)
{
	test_proc();
	test_figures();
	return failures ? 1 : 0;
}
