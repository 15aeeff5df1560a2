// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-perf-parse.c - perf_parse_sample() (sampler/perf/perf.h) on
 * sample bodies laid out by hand as the kernel writes them: every field
 * in the kernel's order, the callchain's kernel part with its context
 * markers dropped, a short body at each field, an unknown bit, a sample
 * without user registers.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "sampler/perf/perf.h"

#define TYPE (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN | \
	      PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)

struct body {
	uint64_t w[64];
	size_t n;
};

static void put(struct body *b, uint64_t v)
{
	b->w[b->n++] = v;
}

/* A switch-out sample: tid, time, a callchain of nk kernel addresses
 * after the kernel context marker, user registers (rsp at index 7, rip
 * at 8 in perf's order) and a 16-byte stack copy of which 8 are used. */
static size_t build(struct body *b, int nk, uint64_t abi)
{
	int nregs = __builtin_popcountll(perf_user_regs_mask());

	b->n = 0;
	put(b, 7ull << 32 | 42);		/* pid 42, tid 7 */
	put(b, 123456789);			/* time */
	put(b, nk + 1);
	put(b, (uint64_t)PERF_CONTEXT_KERNEL);
	for (int i = 0; i < nk; i++)
		put(b, 0xffffffff81000000ull + i);
	put(b, abi);
	for (int i = 0; abi && i < nregs; i++)
		put(b, 0x1000 + i);
	put(b, 16);				/* stack size */
	put(b, 0x1111111111111111ull);
	put(b, 0x2222222222222222ull);
	put(b, 8);				/* dyn_size */
	return b->n * sizeof(uint64_t);
}

static void test_fields(void)
{
	struct body b;
	struct perf_sample s;
	uint64_t id = 99;
	size_t len = build(&b, 3, PERF_SAMPLE_REGS_ABI_64);

	memset(&s, 0xff, sizeof(s));
	CHECK(!perf_parse_sample(TYPE, b.w, len, &s, &id), "not parsed");
	CHECK(s.pid == 42 && s.tid == 7, "pid %u tid %u", s.pid, s.tid);
	CHECK(s.time == 123456789, "time %llu", (unsigned long long)s.time);
	CHECK(id == 0 && s.period == 0, "id %llu period %llu",
	      (unsigned long long)id, (unsigned long long)s.period);
	CHECK(s.nkernel == 3, "%u kernel frames", s.nkernel);
	for (uint32_t i = 0; i < s.nkernel && i < 3; i++)
		CHECK(s.kernel[i] == 0xffffffff81000000ull + i, "frame %u",
		      i);
	CHECK(s.regs.r[UREG_RAX] == 0x1000, "rax %llx",
	      (unsigned long long)s.regs.r[UREG_RAX]);
	CHECK(s.regs.r[UREG_RSP] == 0x1007 && s.regs.r[UREG_RIP] == 0x1008,
	      "rsp %llx rip %llx", (unsigned long long)s.regs.r[UREG_RSP],
	      (unsigned long long)s.regs.r[UREG_RIP]);
	CHECK(s.stack_len == 8, "stack_len %zu", s.stack_len);
	CHECK(s.stack && *(const uint64_t *)s.stack == 0x1111111111111111ull,
	      "stack");

	/* the same without the callchain: no kernel frames */
	build(&b, 0, PERF_SAMPLE_REGS_ABI_64);
	memmove(&b.w[2], &b.w[4], (b.n - 4) * sizeof(uint64_t));
	b.n -= 2;
	memset(&s, 0xff, sizeof(s));
	CHECK(!perf_parse_sample(TYPE & ~PERF_SAMPLE_CALLCHAIN, b.w,
				 b.n * sizeof(uint64_t), &s, &id),
	      "not parsed without a callchain");
	CHECK(s.nkernel == 0, "%u kernel frames", s.nkernel);
	CHECK(s.regs.r[UREG_RIP] == 0x1008, "rip %llx",
	      (unsigned long long)s.regs.r[UREG_RIP]);
}

/* More frames than perf_sample holds: the first PERF_KERNEL_FRAMES. */
static void test_long_chain(void)
{
	static uint64_t w[PERF_KERNEL_FRAMES + 64];
	struct perf_sample s;
	uint64_t id;
	size_t n = 0;

	w[n++] = 1;
	w[n++] = 2;
	w[n++] = PERF_KERNEL_FRAMES + 10;
	for (int i = 0; i < PERF_KERNEL_FRAMES + 10; i++)
		w[n++] = 0xffffffff82000000ull + i;
	CHECK(!perf_parse_sample(PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				 PERF_SAMPLE_CALLCHAIN, w,
				 n * sizeof(uint64_t), &s, &id),
	      "not parsed");
	CHECK(s.nkernel == PERF_KERNEL_FRAMES, "%u frames", s.nkernel);
	CHECK(s.kernel[PERF_KERNEL_FRAMES - 1] ==
	      0xffffffff82000000ull + PERF_KERNEL_FRAMES - 1, "last frame");
}

static void test_bad_bodies(void)
{
	struct body b;
	struct perf_sample s;
	uint64_t id;
	size_t len = build(&b, 3, PERF_SAMPLE_REGS_ABI_64);

	/* every cut short of the end fails (the stack's dyn_size is its
	 * last word) */
	for (size_t cut = 0; cut < len; cut += 8)
		CHECK(perf_parse_sample(TYPE, b.w, cut, &s, &id) == -EINVAL,
		      "a body cut at %zu parsed", cut);
	/* a callchain longer than the body */
	b.w[2] = 1000;
	CHECK(perf_parse_sample(TYPE, b.w, len, &s, &id) == -EINVAL,
	      "an overlong callchain parsed");
	build(&b, 3, PERF_SAMPLE_REGS_ABI_64);
	CHECK(perf_parse_sample(TYPE | PERF_SAMPLE_RAW, b.w, len, &s, &id) ==
	      -EINVAL, "an unknown field parsed");
	len = build(&b, 2, PERF_SAMPLE_REGS_ABI_NONE);
	CHECK(perf_parse_sample(TYPE, b.w, len, &s, &id) == -ENODATA,
	      "a kernel thread's sample parsed");
}

int main(void)
{
	test_fields();
	test_long_chain();
	test_bad_bodies();
	return failures ? 1 : 0;
}
