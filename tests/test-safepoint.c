// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-safepoint - the rules of safepoint.h on stacks made of this test's
 * own addresses: libc's calloc by address whatever its name, pthread_join
 * and vfork safe only in their wait, a stack that never leaves libc, and
 * the return address an unsafe thread is let run to, and jemalloc's
 * background thread asleep in its condition wait (its library loaded
 * here, RTLD_LOCAL: it allocates nothing of ours).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/maps.h"
#include "sampler/heap/safepoint.h"

static struct safepoint *sp;

__attribute__((noinline)) static void own_code(void)
{
	__asm__ volatile("");
}

/* Judge a stack of fn + 4 (the leaf) called from own_code. */
static bool judge(void *fn, bool complete, long sysno, uint64_t *resume,
		  char *why)
{
	uint64_t pcs[2] = { (uintptr_t)fn + 4, (uintptr_t)own_code + 1 };

	return safepoint_unsafe(sp, pcs, 2, complete, sysno, resume, why,
				128);
}

/*
 * libc's own definition, not the first in lookup order: under ASan,
 * RTLD_DEFAULT finds libasan's interceptor of read, pthread_join or vfork,
 * and libasan defines malloc, so the whole library is (rightly) unsafe.
 */
static void *libc_fn(const char *name)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *p = libc ? dlsym(libc, name) : NULL;

	if (!p)
		die(name, -1);
	dlclose(libc);
	return p;
}

static void test_by_address(void)
{
	uint64_t resume = 0;
	char why[128] = "";

	/* calloc is named __libc_calloc by the symbol table's choice */
	CHECK(judge(libc_fn("calloc"), true, -1, &resume, why),
	      "calloc safe");
	CHECK(resume == (uintptr_t)own_code + 2, "resume at 0x%llx",
	      (unsigned long long)resume);
	CHECK(strstr(why, "libc"), "why: %s", why);
	CHECK(judge(libc_fn("reallocarray"), true, -1, &resume, why),
	      "reallocarray safe");
	CHECK(judge(libc_fn("fork"), true, -1, &resume, why), "fork safe");
	CHECK(judge(libc_fn("dlopen"), true, -1, &resume, why),
	      "dlopen safe");
	CHECK(!judge(libc_fn("read"), true, SYS_read, &resume, why),
	      "read unsafe: %s", why);
	CHECK(!judge(libc_fn("nanosleep"), true, SYS_nanosleep, &resume,
		     why), "nanosleep unsafe: %s", why);
}

static void test_waits(void)
{
	uint64_t resume;
	char why[128];

	CHECK(judge(libc_fn("pthread_join"), true, -1, &resume, why),
	      "pthread_join outside its wait safe");
	CHECK(!judge(libc_fn("pthread_join"), true, SYS_futex, &resume, why),
	      "pthread_join in futex unsafe: %s", why);
	CHECK(judge(libc_fn("vfork"), true, SYS_futex, &resume, why),
	      "vfork outside its wait safe");
	CHECK(!judge(libc_fn("vfork"), true, SYS_vfork, &resume, why),
	      "vfork in vfork unsafe: %s", why);
}

static void test_incomplete(void)
{
	uint64_t pcs[1] = { (uintptr_t)libc_fn("read") + 4 };
	uint64_t resume;
	char why[128];

	CHECK(safepoint_unsafe(sp, pcs, 1, false, SYS_read, &resume, why,
			       sizeof(why)), "libc only, incomplete: safe");
	CHECK(resume == 0, "nothing to resume at");
	CHECK(!safepoint_unsafe(sp, pcs, 1, true, SYS_read, &resume, why,
				sizeof(why)), "libc only, complete: %s", why);
}

/*
 * A stack as jemalloc's background thread has it: libc's condition wait
 * (leaf), two frames of libjemalloc, libc's thread start (here: clone).
 * Safe only all of it, complete, in futex.
 */
static void test_allocator_idle(void *je)
{
	uint64_t in_je = (uintptr_t)dlsym(je, "mallctl") + 16;
	uint64_t idle[4] = {
		(uintptr_t)libc_fn("pthread_cond_wait") + 4, in_je, in_je + 64,
		(uintptr_t)libc_fn("clone") + 4,
	};
	uint64_t s[4], resume;
	char why[128];

	CHECK(!safepoint_unsafe(sp, idle, 4, true, SYS_futex, &resume, why,
				sizeof(why)), "idle jemalloc thread: %s", why);
	CHECK(safepoint_unsafe(sp, idle, 4, true, -1, &resume, why,
			       sizeof(why)), "not in futex: safe");
	CHECK(strstr(why, "allocator library in libjemalloc"), "why: %s",
	      why);
	CHECK(safepoint_unsafe(sp, idle, 4, false, SYS_futex, &resume, why,
			       sizeof(why)), "incomplete: safe");
	memcpy(s, idle, sizeof(s));
	s[0] = (uintptr_t)libc_fn("pthread_mutex_lock") + 4;
	CHECK(safepoint_unsafe(sp, s, 4, true, SYS_futex, &resume, why,
			       sizeof(why)), "a lock wait in jemalloc: safe");
	memcpy(s, idle, sizeof(s));
	s[3] = (uintptr_t)own_code + 1;	/* called by the program */
	CHECK(safepoint_unsafe(sp, s, 4, true, SYS_futex, &resume, why,
			       sizeof(why)), "program above jemalloc: safe");
	CHECK(safepoint_unsafe(sp, idle + 1, 3, true, SYS_futex, &resume,
			       why, sizeof(why)), "jemalloc leaf: safe");
}

int main(void)
{
	void *je = dlopen("libjemalloc.so.2", RTLD_NOW | RTLD_LOCAL);
	struct dso_cache *cache;
	struct proc_maps *maps;

	MUST(dso_cache_new(NULL, &cache));
	MUST(maps_load(getpid(), cache, &maps));
	MUST(safepoint_new(getpid(), maps, &sp));
	test_by_address();
	test_waits();
	test_incomplete();
	if (je)
		test_allocator_idle(je);
	else
		CHECK(getenv("CI") == NULL, "libjemalloc.so.2: %s", dlerror());
	safepoint_free(sp);
	maps_free(maps);
	dso_cache_free(cache);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all safepoint checks passed\n");
	return 0;
}
