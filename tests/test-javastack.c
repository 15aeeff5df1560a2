// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-javastack.c - a JVM's frames as javastack.h steps them, on a JVM
 * made up in this process: a file named libjvm.so mapped (what makes a
 * JVM), anonymous executable memory as its code cache with call
 * instructions of each kind, a perf map naming an "Interpreter" and a
 * "StubRoutines (1)" in it, and stacks of made-up words. A compiled
 * frame's caller is the first word returning after a call (a code
 * pointer after no call, a word outside code, are passed over), or
 * into the interpreter; an interpreted frame's by RBP, with its Method.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "sampler/runtime/javastack.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/maps.h"

#define CODE 0x4000

struct fake_stack {
	uint64_t base;		/* the address of w[0] */
	uint64_t w[32];
};

static bool word(void *arg, uint64_t addr, uint64_t *v)
{
	struct fake_stack *s = arg;
	uint64_t i = (addr - s->base) / 8;

	if (addr < s->base || addr & 7 || i >= 32)
		return false;
	*v = s->w[i];
	return true;
}

int main(void)
{
	char dir[] = "/tmp/test-javastack-XXXXXX", path[256], map[64];
	uint64_t ra, sp, bp, method;
	struct fake_stack st = { .base = 0x7000000 };
	struct dso_cache *cache;
	struct proc_maps *maps;
	struct javastack *js;
	uint8_t *code, *meta;
	bool bp_known;
	FILE *f;
	int fd;

	if (!mkdtemp(dir))
		die("mkdtemp", -errno);
	snprintf(path, sizeof(path), "%s/libjvm.so", dir);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, 4096))
		die("libjvm.so", -errno);
	if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) ==
	    MAP_FAILED)
		die("mmap libjvm.so", -errno);
	code = mmap(NULL, CODE, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	meta = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED || meta == MAP_FAILED)
		die("mmap", -errno);
	memset(code, 0x90, CODE);
	/* returns after: call rel32 (0x105), call *%rax (0x202), call
	 * *0x10(%rbx) (0x303), call *0x12345678(%rip) (0x406) */
	code[0x100] = 0xe8;
	code[0x200] = 0xff, code[0x201] = 0xd0;
	code[0x300] = 0xff, code[0x301] = 0x53, code[0x302] = 0x10;
	code[0x400] = 0xff, code[0x401] = 0x15;
	/* the perf map: the interpreter and the call stub */
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(map, "w");
	if (!f)
		die("perf map", -errno);
	fprintf(f, "%lx 1000 Interpreter\n%lx 1000 StubRoutines (1)\n",
		(unsigned long)(code + 0x2000), (unsigned long)(code + 0x3000));
	fclose(f);

	MUST(dso_cache_new(NULL, &cache));
	MUST(maps_load(getpid(), cache, &maps));
	MUST(javastack_new(maps, &js));
	CHECK(js, "a process mapping libjvm.so is a JVM");
	if (!js)
		return 1;
	CHECK(javastack_code(js, (uint64_t)code + 0x50), "code cache");
	CHECK(!javastack_code(js, (uint64_t)meta), "not code");

	/* a compiled frame: spills, a code pointer after no call, then
	 * the return address and the caller's RBP below it */
	st.w[0] = 42;
	st.w[1] = (uint64_t)code + 0x50;	/* an entry point */
	st.w[2] = (uint64_t)meta;
	st.w[3] = 0x7000100;			/* saved RBP */
	st.w[4] = (uint64_t)code + 0x105;
	CHECK(javastack_step(js, word, &st, (uint64_t)code + 0x10,
			     st.base, 0x1111, &ra, &sp, &bp, &bp_known,
			     &method), "compiled frame");
	CHECK(ra == (uint64_t)code + 0x105 && sp == st.base + 40 &&
	      bp == 0x7000100 && bp_known && !method,
	      "ra %#lx sp %#lx bp %#lx", (long)ra, (long)sp, (long)bp);
	/* each kind of call */
	for (int i = 0; i < 3; i++) {
		static const int after[3] = { 0x202, 0x303, 0x406 };

		st.w[4] = (uint64_t)code + after[i];
		CHECK(javastack_step(js, word, &st, (uint64_t)code + 0x10,
				     st.base, 0, &ra, &sp, &bp, &bp_known,
				     &method) &&
		      ra == (uint64_t)code + after[i], "call %d", i);
	}
	/* into the interpreter, after no call: a bytecode's return entry */
	st.w[4] = (uint64_t)code + 0x2345;
	CHECK(javastack_step(js, word, &st, (uint64_t)code + 0x10,
			     st.base, 0, &ra, &sp, &bp, &bp_known, &method) &&
	      ra == (uint64_t)code + 0x2345, "into the interpreter");
	/* the frame not built yet: the return address at sp, RBP kept */
	st.w[0] = (uint64_t)code + 0x105;
	CHECK(javastack_step(js, word, &st, (uint64_t)code + 0x10,
			     st.base, 0x2222, &ra, &sp, &bp, &bp_known,
			     &method) && sp == st.base + 8 && bp == 0x2222,
	      "prologue");
	/* no return address at all */
	memset(st.w, 0, sizeof(st.w));
	CHECK(!javastack_step(js, word, &st, (uint64_t)code + 0x10,
			      st.base, 0, &ra, &sp, &bp, &bp_known, &method),
	      "nothing to return to");

	/* an interpreted frame: RBP at w[8], its Method at RBP - 24, its
	 * bytecode pointer at RBP - 64 */
	st.w[0] = 0x7f0012345678;
	st.w[5] = (uint64_t)meta + 64;
	st.w[8] = 0x7000200;
	st.w[9] = (uint64_t)code + 0x3105;
	CHECK(javastack_step(js, word, &st, (uint64_t)code + 0x2100,
			     st.base, st.base + 64, &ra, &sp, &bp, &bp_known,
			     &method), "interpreted frame");
	CHECK(ra == (uint64_t)code + 0x3105 && sp == st.base + 80 &&
	      bp == 0x7000200 &&
	      method == javastack_interp_pc((uint64_t)meta + 64, st.w[0]),
	      "ra %#lx sp %#lx method %#lx", (long)ra, (long)sp,
	      (long)method);
	{
		uint64_t m = 0;
		uint16_t bcp16 = 0;

		CHECK(javastack_interp_split(method, &m, &bcp16) &&
		      m == (uint64_t)meta + 64 && bcp16 == 0x5678,
		      "split %#lx %#x", (long)m, bcp16);
		CHECK(!javastack_interp_split(m, &m, &bcp16) &&
		      javastack_interp_pc(1ull << 47, 0x5678) == 1ull << 47,
		      "no tag, no room");
	}
	/* its bytecode pointer not readable (below the stack copy): the
	 * bare Method */
	st.w[2] = (uint64_t)meta + 64;
	st.w[6] = (uint64_t)code + 0x3105;
	CHECK(javastack_step(js, word, &st, (uint64_t)code + 0x2100,
			     st.base, st.base + 40, &ra, &sp, &bp, &bp_known,
			     &method) && method == (uint64_t)meta + 64,
	      "no bcp: method %#lx", (long)method);
	st.w[2] = st.w[6] = 0;
	/* the call stub: by RBP too, no Method */
	CHECK(javastack_step(js, word, &st, (uint64_t)code + 0x3100,
			     st.base, st.base + 64, &ra, &sp, &bp, &bp_known,
			     &method) && ra == (uint64_t)code + 0x3105 &&
	      !method, "call stub");
	/* an RBP below sp is no frame */
	CHECK(!javastack_step(js, word, &st, (uint64_t)code + 0x2100,
			      st.base + 64, st.base, &ra, &sp, &bp,
			      &bp_known, &method), "RBP below sp");

	javastack_free(js);
	maps_free(maps);
	dso_cache_free(cache);
	unlink(map);
	unlink(path);
	rmdir(dir);
	if (failures)
		return 1;
	printf("all javastack checks passed\n");
	return 0;
}
