// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fast.c - the hooks of malloc and free on their fast path, and the jumps
 * that leave them for the allocator.
 *
 * On a loop that does nothing but malloc and free, the hooks' own work (a
 * thread-local subtraction, a filter byte) measured nearly free; what cost
 * was the second indirect jump each call took, the hook's into the real
 * function after the caller's PLT into the hook: 7-8% of the speed of an
 * 8-9 ns malloc + free pair on this machine's cores (AMD Zen 5), against
 * 3-4% with a direct jump there (both shapes timed in turn in one
 * process; a hook that only jumps on costs as much as the whole one). So
 * these two hooks are written here in assembly, each ending in a jump
 * through its pointer that fast_direct() rewrites, at load, into a direct
 * jump to the allocator: only possible where the allocator is within
 * 2 GiB of this code (libc always is, the dynamic loader maps the two
 * side by side; an executable's own malloc is not) and where the process
 * may write its own code (a policy may refuse: then the indirect jump
 * stays, correct and slower). It is done once, before any GOT entry
 * points here, so no thread can be running the bytes being changed.
 *
 * Anything but the fast path goes on, by a direct jump and with the
 * arguments untouched, to the C hooks' slow paths in agent.c.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sampler/heap/agent/agent_i.h"

_Static_assert(offsetof(struct ph_budget, left) == 0,
	       "the assembly reads the budget at the start of ph_tls");
_Static_assert(offsetof(struct ph_budget, mallocs) == 8 &&
	       offsetof(struct ph_budget, frees) == 16,
	       "the assembly counts at 8 and 16 of ph_tls");
_Static_assert(LIVE_FILTER_BITS == 16,
	       "the assembly indexes the filter with 16 bits of p >> 4");

/* Where the exits go while they are indirect jumps (the assembly's). */
PH_HIDDEN void *ph_exit_malloc, *ph_exit_free;

#if defined(__CET__) && (__CET__ & 1)
#define ENDBR "	endbr64\n"	/* reached by indirect jumps: the PLTs */
#else
#define ENDBR ""
#endif

/*
 * ph_h_malloc: left -= size in place; no borrow and not zero (size <
 * left)? Then mallocs += 1 and on to malloc, as the C hooks' skip() does;
 * else ph_malloc_over puts size back and goes to ph_malloc_slow(size),
 * which counts. One read-modify-write instead of a load, a compare and a
 * store.
 * ph_h_free: the filter byte of p set? ph_free_slow(p), which counts.
 * The byte of NULL's bucket always is (live.c): free(NULL) counts
 * nothing, and the path here needs no test for it. Else frees -= 1, and a
 * borrow out of 0 - the thread's first free, or any once its counts are
 * folded - goes to ph_free_first(p), counted; else on to free.
 * The exits, ph_*_exit, are `jmp *ph_exit_*(%rip)`: six bytes
 * fast_direct() may turn into `jmp rel32; nop`.
 */
__asm__(".text\n"
	".p2align 4\n"
	".globl ph_h_malloc\n.hidden ph_h_malloc\n"
	".type ph_h_malloc,@function\n"
	"ph_h_malloc:\n"
	".cfi_startproc\n"
	ENDBR
	".globl ph_malloc_tls\n.hidden ph_malloc_tls\n"
	"ph_malloc_tls:\n"
	"	movq ph_tls@gottpoff(%rip), %rdx\n"
	"	subq %rdi, %fs:(%rdx)\n"
	"	jbe ph_malloc_over\n"
	"	addq $1, %fs:8(%rdx)\n"
	".globl ph_malloc_exit\n.hidden ph_malloc_exit\n"
	"ph_malloc_exit:\n"
	"	jmp *ph_exit_malloc(%rip)\n"
	"ph_malloc_over:\n"
	"	addq %rdi, %fs:(%rdx)\n"
	"	jmp ph_malloc_slow\n"
	".cfi_endproc\n"
	".size ph_h_malloc, .-ph_h_malloc\n"

	".p2align 4\n"
	".globl ph_h_free\n.hidden ph_h_free\n"
	".type ph_h_free,@function\n"
	"ph_h_free:\n"
	".cfi_startproc\n"
	ENDBR
	"	movq %rdi, %rax\n"
	"	shrq $4, %rax\n"
	"	movzwl %ax, %eax\n"
	"	leaq live_filter(%rip), %rdx\n"
	"	cmpb $0, (%rdx,%rax)\n"
	"	jne ph_free_slow\n"
	".globl ph_free_tls\n.hidden ph_free_tls\n"
	"ph_free_tls:\n"
	"	movq ph_tls@gottpoff(%rip), %rdx\n"
	"	subq $1, %fs:16(%rdx)\n"
	"	jc ph_free_first\n"
	".globl ph_free_exit\n.hidden ph_free_exit\n"
	"ph_free_exit:\n"
	"	jmp *ph_exit_free(%rip)\n"
	".cfi_endproc\n"
	".size ph_h_free, .-ph_h_free\n");

extern uint8_t ph_malloc_exit[], ph_free_exit[];
extern uint8_t ph_malloc_tls[], ph_free_tls[];

/* Write len bytes of code at site, if the page may be written. */
static bool patch(uint8_t *site, const uint8_t *code, size_t len)
{
	uintptr_t page = (uintptr_t)site & -(uintptr_t)sysconf(_SC_PAGESIZE);
	size_t span = (uintptr_t)site + len - page;

	if (mprotect((void *)page, span, PROT_READ | PROT_WRITE | PROT_EXEC))
		return false;
	memcpy(site, code, len);
	mprotect((void *)page, span, PROT_READ | PROT_EXEC);
	return true;
}

/* `jmp *disp32(%rip)` at site becomes `jmp rel32; nop` to the function
 * the pointer holds, when within reach and the page may be written. */
static bool make_direct(uint8_t *site, void *const *ptr)
{
	static const uint8_t jmp_ind[2] = { 0xff, 0x25 };
	intptr_t rel = (intptr_t)*ptr - (intptr_t)(site + 5);
	int32_t disp, rel32 = (int32_t)rel;
	uint8_t code[6] = { 0xe9, 0, 0, 0, 0, 0x90 };

	memcpy(&disp, site + 2, 4);
	if (memcmp(site, jmp_ind, 2) || site + 6 + disp != (uint8_t *)ptr ||
	    rel != rel32)
		return false;
	memcpy(code + 1, &rel32, 4);
	return patch(site, code, sizeof(code));
}

/*
 * `movq disp32(%rip), %rdx` at site - the load of ph_tls's offset from
 * the thread pointer, out of its GOT slot - becomes `movq $offset, %rdx`,
 * the same seven bytes: the offset is fixed for the process's life
 * (static TLS) and the same in every thread. Each hook then loads nothing
 * before its budget; on the bare malloc/free loop that paid for the
 * counts' memory operations (perf: the loads were a third of the hooks'
 * samples). A linker has done it already in an executable.
 */
static bool make_immediate(uint8_t *site)
{
	static const uint8_t mov_got[3] = { 0x48, 0x8b, 0x15 };
	uint8_t code[7] = { 0x48, 0xc7, 0xc2 };
	int64_t off;
	int32_t disp, off32;

	if (!memcmp(site, code, 3))
		return true;
	if (memcmp(site, mov_got, 3))
		return false;
	memcpy(&disp, site + 3, 4);
	memcpy(&off, site + 7 + disp, 8);
	off32 = (int32_t)off;
	if (off32 != off)
		return false;
	memcpy(code + 3, &off32, 4);
	return patch(site, code, sizeof(code));
}

unsigned fast_direct(void *malloc_fn, void *free_fn)
{
	ph_exit_malloc = malloc_fn;
	ph_exit_free = free_fn;
	make_immediate(ph_malloc_tls);
	make_immediate(ph_free_tls);
	return make_direct(ph_malloc_exit, &ph_exit_malloc) +
	       make_direct(ph_free_exit, &ph_exit_free);
}
