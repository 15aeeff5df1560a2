// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-agent-resolve.c - how the heap agent finds the functions its hooks
 * go on to (sampler/heap/agent/resolve.c), in a non-PIE executable that
 * takes malloc's and free's addresses: the case of Debian's python3.11
 * and node (issue 25). Here dlsym(RTLD_DEFAULT, "malloc") gives this
 * executable's own PLT stub - the canonical PLT entry - checked first, so
 * the test proves something; resolve_real() must give the definition in
 * a shared object instead, one that works. And real_leads_back(), the
 * check that a real function does not lead back into the agent, must
 * follow PLT stubs through their GOT entries and jumps of every form, and
 * say yes for anything it cannot read.
 *
 * Built with -fno-pie and without sanitizers (tests/meson.build).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "sampler/heap/agent/agent_i.h"

/* This program's own code: the "agent" a lookup skips. */
static void self_anchor(void)
{
}

#define SELF ((void *)self_anchor)

/* Taken as addresses by non-PIC code (movl $malloc): canonical PLT
 * entries. */
static void *(*volatile addr_malloc)(size_t);
static void (*volatile addr_free)(void *);

static const void *object_of(const void *p)
{
	Dl_info info;

	return dladdr(p, &info) ? info.dli_fbase : NULL;
}

static void test_definition(void)
{
	void *stub = dlsym(RTLD_DEFAULT, "malloc");
	void *(*m)(size_t) = (void *(*)(size_t))resolve_real("malloc",
							      SELF);
	void (*f)(void *) = (void (*)(void *))resolve_real("free",
							   SELF);
	const void *exe = object_of(SELF);
	char *p;

	CHECK(object_of(stub) == exe && (void *)addr_malloc == stub,
	      "dlsym(malloc) %p is not this executable's PLT stub", stub);
	CHECK(m && object_of((void *)m) != exe,
	      "malloc resolved to %p, in the executable", (void *)m);
	CHECK(f && object_of((void *)f) != exe && (void *)f != (void *)addr_free,
	      "free resolved to %p", (void *)f);
	if (m && f) {
		p = m(100);
		CHECK(p, "the real malloc");
		if (p) {
			memset(p, 1, 100);
			f(p);
		}
	}
	CHECK(!resolve_real("proffs_no_such_function", SELF),
	      "a name nobody defines");
	/* the object holding self is skipped: libc's own, asked from libc */
	CHECK(resolve_real("malloc", (void *)m) != (void *)m,
	      "found in the object it was told to skip");
}

/* A page of code to chase: each case at its own 64 bytes. */
static uint8_t *code;
#define slot (*(void **)(code + 512))	/* a "GOT entry", within reach */

static void put(size_t at, const void *bytes, size_t len)
{
	memcpy(code + at, bytes, len);
}

static void put_rel32(size_t at, size_t next, uintptr_t to)
{
	int32_t rel = (int32_t)(to - (uintptr_t)(code + next));

	memcpy(code + at, &rel, 4);
}

static void test_chase(void)
{
	void *m = resolve_real("malloc", SELF);
	uintptr_t lo = (uintptr_t)m, hi = lo + 1;
	uintptr_t agent_lo, agent_hi;

	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		CHECK(0, "mmap");
		return;
	}
	/* the real malloc is code: it leads nowhere */
	CHECK(!real_leads_back(m, 0x1000, 0x2000), "libc's malloc");
	/* the executable's stub goes, through its GOT entry, to malloc:
	 * were malloc the agent, the stub leads back (once the entry is
	 * bound: lazily, at the first call) */
	addr_free(addr_malloc(8));
	CHECK(real_leads_back((void *)addr_malloc, lo, hi),
	      "the PLT stub was not followed to %p", m);
	CHECK(!real_leads_back((void *)addr_malloc, 0x1000, 0x2000),
	      "the PLT stub leads elsewhere");
	/* 0: ret. 64: jmp rel32 to 0. 128: endbr64; bnd jmp *slot.
	 * 192: jmp rel8 to 128. 256: jmp *slot, slot NULL. */
	code[0] = 0xc3;
	put(64, "\xe9", 1);
	put_rel32(65, 69, (uintptr_t)code);
	put(128, "\xf3\x0f\x1e\xfa\xf2\xff\x25", 7);
	put_rel32(135, 139, (uintptr_t)&slot);
	put(192, "\xeb\xbe", 2);	/* 194 - 66 = 128 */
	resolve_self(SELF, &agent_lo, &agent_hi);
	CHECK(agent_lo <= (uintptr_t)SELF && (uintptr_t)SELF < agent_hi,
	      "this program's span %#lx-%#lx", (unsigned long)agent_lo,
	      (unsigned long)agent_hi);
	slot = code;
	lo = (uintptr_t)code;
	CHECK(real_leads_back(code + 64, lo, lo + 1), "jmp rel32");
	CHECK(real_leads_back(code + 128, lo, lo + 1), "endbr64; bnd jmp *m");
	CHECK(real_leads_back(code + 192, lo, lo + 1), "jmp rel8");
	CHECK(!real_leads_back(code + 192, 0x1000, 0x2000), "ret reached");
	slot = NULL;
	CHECK(real_leads_back(code + 128, 0x1000, 0x2000), "a NULL entry");
	slot = (void *)(code + 128);	/* a loop of its own */
	CHECK(real_leads_back(code + 128, 0x1000, 0x2000), "a loop");
	CHECK(real_leads_back((void *)16, 0x1000, 0x2000), "unreadable");
	CHECK(real_leads_back(NULL, 0x1000, 0x2000), "NULL");
	munmap(code, 4096);
}

int main(void)
{
	addr_malloc = malloc;
	addr_free = free;
	test_definition();
	test_chase();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-agent-resolve: all checks passed\n");
	return 0;
}
