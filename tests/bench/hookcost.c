// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hookcost - what each instruction of the heap agent's malloc and free
 * fast paths (sampler/heap/agent/fast.c) costs a malloc-heavy loop, timed
 * in turn in one process, so that a machine whose speed drifts between
 * seconds (a shared VM) slows every shape alike: the figure behind
 * docs/performance.md's "Where the agent's cost is".
 *
 *   hookcost [ROUNDS [SLICE_MS [pointer]]]      (40, 20)
 *
 * The loop is the mallocs target's (tests/targets/mallocs.c): 64 blocks
 * of 16-256 bytes, one byte written in each, freed in reverse order,
 * calling malloc and free as a program does, through a PLT-like stub
 * (`jmp *GOT`), or with "pointer" by an indirect call. Each shape is
 * a pair of hooks copied into a page within 2 GiB of libc, ending in a
 * direct jump to libc's malloc or free as fast_direct() makes the agent's.
 * The budget never runs out and the filter is all zeros, so no shape
 * ever leaves its fast path: sampling is not in these figures. Each round
 * runs every shape for SLICE_MS of thread CPU time, in turn; printed is
 * the median over rounds of each shape's speed over the unhooked loop's
 * in the same round, and its quartiles. HOOKCOST_SHIFT=N places the
 * copies N bytes into their page (their alignment and lines).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

struct budget {
	uint64_t left, mallocs, frees;
};

/* Not static: the assembly names it (GCC may rename a static). */
__thread struct budget hc_tls
	__attribute__((tls_model("initial-exec"), aligned(64), used));
static uint8_t filter[1u << 16] __attribute__((aligned(64)));

#define MARK_FILTER "0x1122334455667788"
#define EXIT ".byte 0xe9; .long 0\n"	/* jmp rel32, set when copied */

/*
 * Each shape: NAME_m (malloc's hook) and NAME_f (free's), each up to its
 * _end label, ending in EXIT. The slow branches go to a ud2 of their
 * own: taken, they would be a bug of this program.
 */
#define SHAPE(name, mbody, fbody)                                           \
	__asm__(".text\n"                                                    \
		".p2align 4\n"                                               \
		#name "_m:\n" mbody EXIT "1: ud2\n" #name "_m_end:\n"          \
		".p2align 4\n"                                               \
		#name "_f:\n" fbody EXIT "1: ud2\n" #name "_f_end:\n")

#define TLS "	movq $hc_tls@tpoff, %rdx\n"

/* only the TLS offset's load and the jump on */
SHAPE(floor, TLS, TLS);
/* fast.c as on main */
SHAPE(main,
      TLS "	subq %rdi, %fs:(%rdx)\n	jbe 1f\n	addq $1, %fs:8(%rdx)\n",
      "	movq %rdi, %rax\n	shrq $4, %rax\n	movzwl %ax, %eax\n"
      "	movabsq $" MARK_FILTER ", %rdx\n	cmpb $0, (%rdx,%rax)\n	jne 1f\n"
      TLS "	subq $1, %fs:16(%rdx)\n	jc 1f\n");
/* main without the counts */
SHAPE(nocount, TLS "	subq %rdi, %fs:(%rdx)\n	jbe 1f\n",
      "	movq %rdi, %rax\n	shrq $4, %rax\n	movzwl %ax, %eax\n"
      "	movabsq $" MARK_FILTER ", %rdx\n	cmpb $0, (%rdx,%rax)\n	jne 1f\n");
/* main without free's filter */
SHAPE(nofilter,
      TLS "	subq %rdi, %fs:(%rdx)\n	jbe 1f\n	addq $1, %fs:8(%rdx)\n",
      TLS "	subq $1, %fs:16(%rdx)\n	jc 1f\n");
/* malloc's count folded into its one subtraction (count in the low 24
 * bits); free: an address range of its own, no load, and its count */
SHAPE(oneword,
      TLS "	movq %rdi, %rax\n	shlq $24, %rax\n	addq $0xffffff, %rax\n"
      "	subq %rax, %fs:(%rdx)\n	jbe 1f\n",
      "	movq %rdi, %rax\n	shrq $40, %rax\n	cmpl $0x3f, %eax\n	je 1f\n"
      TLS "	subq $1, %fs:16(%rdx)\n	jc 1f\n");
/* the same without free's count: one memory operation per pair */
SHAPE(onlymalloc,
      TLS "	movq %rdi, %rax\n	shlq $24, %rax\n	addq $0xffffff, %rax\n"
      "	subq %rax, %fs:(%rdx)\n	jbe 1f\n",
      "	movq %rdi, %rax\n	shrq $40, %rax\n	cmpl $0x3f, %eax\n	je 1f\n");

/* What a caller's PLT does: a jump through its GOT entry. */
void *hc_got_m, *hc_got_f;
__asm__(".text\n.p2align 4\n"
	"hc_plt_m: jmp *hc_got_m(%rip)\n.p2align 4\n"
	"hc_plt_f: jmp *hc_got_f(%rip)\n");
void *hc_plt_m(size_t n);
void hc_plt_f(void *p);

#define DECL(name) extern uint8_t name##_m[], name##_m_end[], name##_f[],  \
		   name##_f_end[]
DECL(floor);
DECL(main);
DECL(nocount);
DECL(nofilter);
DECL(oneword);
DECL(onlymalloc);

struct shape {
	const char *name;
	uint8_t *m, *m_end, *f, *f_end;
	void *(*malloc)(size_t);
	void (*free)(void *);
	double ratios[1000];
};

#define S(n) { #n, n##_m, n##_m_end, n##_f, n##_f_end, 0, 0, { 0 } }
static struct shape shapes[] = {
	{ "unhooked", 0, 0, 0, 0, 0, 0, { 0 } },
	S(floor), S(main), S(nocount), S(nofilter), S(oneword), S(onlymalloc),
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* A page within 2 GiB of fn, or NULL. */
static uint8_t *near_page(void *fn, size_t len)
{
	uintptr_t at = ((uintptr_t)fn & ~(uintptr_t)0xfff) - (64u << 20);

	for (int i = 0; i < 16; i++, at -= 64u << 20) {
		void *p = mmap((void *)at, len, PROT_READ | PROT_WRITE |
			       PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS |
			       MAP_FIXED_NOREPLACE, -1, 0);

		if (p != MAP_FAILED)
			return p;
	}
	return NULL;
}

/* Copy code [from, end) to *at, its last jump aimed at to; the copy. */
static void *place(uint8_t **at, const uint8_t *from, const uint8_t *end,
		   void *to)
{
	static const uint8_t ud2_tail[2] = { 0x0f, 0x0b };
	uint64_t mark = 0x1122334455667788ull, fp = (uintptr_t)filter;
	size_t len = end - from;
	uint8_t *code = *at, *jmp = code + len - 2 - 5;
	int32_t rel;

	memcpy(code, from, len);
	if (jmp[0] != 0xe9 || memcmp(code + len - 2, ud2_tail, 2)) {
		fprintf(stderr, "hookcost: a shape does not end as expected\n");
		exit(1);
	}
	rel = (int32_t)((intptr_t)to - (intptr_t)(jmp + 5));
	memcpy(jmp + 1, &rel, 4);
	for (uint8_t *p = code; p + 8 <= code + len; p++)
		if (!memcmp(p, &mark, 8))
			memcpy(p, &fp, 8);
	*at = code + ((len + 63) & ~(size_t)63);
	return code;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int by_pointer;	/* call through a pointer, not a PLT */

/* Blocks per CPU second for slice seconds of the loop through s. */
static double run(struct shape *s, double slice)
{
	void *(*volatile m)(size_t) = s->malloc;
	void (*volatile f)(void *) = s->free;
	void *p[64];
	unsigned long blocks = 0;
	unsigned seed = 0;
	double t0 = cpu_now(), t;

	hc_got_m = (void *)s->malloc;
	hc_got_f = (void *)s->free;
	do {
		for (int k = 0; k < 64; k++, seed += 3) {
			for (int i = 0; i < 64; i++) {
				size_t n = 16 + ((seed + i * 7u) & 15) * 16;

				p[i] = by_pointer ? m(n) : hc_plt_m(n);
				*(volatile char *)p[i] = 1;
			}
			for (int i = 63; i >= 0; i--)
				if (by_pointer)
					f(p[i]);
				else
					hc_plt_f(p[i]);
		}
		blocks += 64 * 64;
		t = cpu_now() - t0;
	} while (t < slice);
	return blocks / t;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 40;
	double slice = (argc > 2 ? atoi(argv[2]) : 20) / 1000.0;

	by_pointer = argc > 3 && !strcmp(argv[3], "pointer");
	void *real_m = dlsym(RTLD_NEXT, "malloc");
	void *real_f = dlsym(RTLD_NEXT, "free");
	uint8_t *page = near_page(real_m, 1 << 16), *at = page;
	const char *shift = getenv("HOOKCOST_SHIFT");	/* bytes into the page */

	if (page && shift)
		at += strtoul(shift, NULL, 0) % 4096;

	if (rounds < 1 || rounds > 1000 || slice <= 0 || !real_m || !real_f ||
	    !page) {
		fprintf(stderr, "usage: hookcost [ROUNDS (1-1000) [SLICE_MS]]"
				" (or no page within 2 GiB of libc)\n");
		return 1;
	}
	hc_tls.left = UINT64_MAX / 2;
	hc_tls.frees = UINT64_MAX / 2;	/* no borrow out of 0 */
	shapes[0].malloc = (void *(*)(size_t))real_m;
	shapes[0].free = (void (*)(void *))real_f;
	for (size_t i = 1; i < NSHAPES; i++) {
		shapes[i].malloc = (void *(*)(size_t))place(
			&at, shapes[i].m, shapes[i].m_end, real_m);
		shapes[i].free = (void (*)(void *))place(
			&at, shapes[i].f, shapes[i].f_end, real_f);
	}
	for (int r = 0; r < rounds; r++) {
		double base = run(&shapes[0], slice);

		for (size_t i = 1; i < NSHAPES; i++)
			shapes[i].ratios[r] = run(&shapes[i], slice) / base;
		/* and the unhooked loop against itself: the noise */
		shapes[0].ratios[r] = run(&shapes[0], slice) / base;
	}
	printf("shape       speed vs unhooked: median (quartiles), %d rounds "
	       "of %.0f ms\n", rounds, slice * 1000);
	for (size_t i = 0; i < NSHAPES; i++) {
		double *v = shapes[i].ratios;

		qsort(v, rounds, sizeof(*v), cmp);
		printf("%-11s %.3f (%+.1f%%)  %.3f-%.3f\n", shapes[i].name,
		       v[rounds / 2], (v[rounds / 2] - 1) * 100,
		       v[rounds / 4], v[rounds * 3 / 4]);
	}
	return 0;
}
