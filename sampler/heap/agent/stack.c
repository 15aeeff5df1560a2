// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * stack.c - copying the top of the calling thread's stack into a sample,
 * and the registers to unwind it from (ph_capture).
 *
 * A copy must stop at the end of the stack's mapping, or it would fault.
 * Each thread learns its stack's bounds once, from /proc/self/maps (read
 * with raw open/read: no allocation), and copies with memcpy from then
 * on. A thread whose stack pointer keeps leaving the known mapping (green
 * threads, coroutines on stacks of their own) falls back to
 * process_vm_readv of itself, which stops at the first unmapped page by
 * itself, at the price of a system call per sample.
 */
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sampler/heap/agent/agent_i.h"

#define PAGE 4096
#define MAX_REFRESH 8	/* bounds looked up again, then the syscall */

struct stack_tls {
	uintptr_t lo, hi;	/* the mapping holding this thread's stack */
	uint32_t refresh;
};

static __thread struct stack_tls stk
	__attribute__((tls_model("initial-exec")));

/* A streaming parse of "start-end ..." lines, chunk by chunk. */
struct maps_parse {
	uintptr_t sp;
	uintptr_t v[2];
	int field;		/* 0 start, 1 end, 2 the rest of the line */
	bool found;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void parse_chunk(struct maps_parse *m, const char *p, ssize_t n)
{
	for (ssize_t i = 0; i < n && !m->found; i++) {
		int h = hexval(p[i]);

		if (p[i] == '\n') {
			if (m->field == 2 && m->sp >= m->v[0] &&
			    m->sp < m->v[1])
				m->found = true;
			else
				m->field = m->v[0] = m->v[1] = 0;
		} else if (m->field < 2 && h >= 0) {
			m->v[m->field] = m->v[m->field] << 4 | h;
		} else if (m->field == 0 && p[i] == '-') {
			m->field = 1;
		} else if (m->field == 1) {
			m->field = 2;
		}
	}
}

static bool lookup(uintptr_t sp)
{
	struct maps_parse m = { .sp = sp };
	char buf[512];
	ssize_t n;
	int fd;

	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (!m.found && (n = read(fd, buf, sizeof(buf))) > 0)
		parse_chunk(&m, buf, n);
	close(fd);
	if (!m.found)
		return false;
	stk.lo = m.v[0];
	stk.hi = m.v[1];
	return true;
}

uint32_t stack_room(uintptr_t sp, uint32_t max)
{
	if (sp < stk.lo || sp >= stk.hi) {
		if (stk.refresh >= MAX_REFRESH)
			return 0;
		stk.refresh++;
		if (!lookup(sp))
			return 0;
	}
	return stk.hi - sp < max ? (uint32_t)(stk.hi - sp) : max;
}

uint32_t stack_copy_syscall(uint8_t *dst, uintptr_t sp, uint32_t max)
{
	struct iovec local = { dst, max };
	struct iovec remote[PH_STACK_BYTES / PAGE + 1];
	uintptr_t a = sp, end = sp + max;
	unsigned n = 0;
	ssize_t got;

	/* One iovec per page: a transfer stops at the first unreadable
	 * one, so a copy that runs off the stack ends there. */
	while (a < end && n < sizeof(remote) / sizeof(remote[0])) {
		uintptr_t next = (a & ~(uintptr_t)(PAGE - 1)) + PAGE;

		if (next > end)
			next = end;
		remote[n].iov_base = (void *)a;
		remote[n].iov_len = next - a;
		n++;
		a = next;
	}
	got = process_vm_readv(getpid(), &local, 1, remote, n, 0);
	return got > 0 ? (uint32_t)got : 0;
}

/*
 * ph_capture(regs): the registers of its caller as they are after the
 * call returns - callee-saved ones, rsp and rip - so the daemon can unwind
 * from there with the caller's CFI. Offsets are libunwind register
 * numbers * 8 (RBX 3, RBP 6, RSP 7, R12-R15 12-15, RIP 16).
 */
__asm__(".text\n"
	".globl ph_capture\n.hidden ph_capture\n"
	".type ph_capture,@function\n"
	"ph_capture:\n"
	".cfi_startproc\n"
	"	movq %rbx, 24(%rdi)\n"
	"	movq %rbp, 48(%rdi)\n"
	"	leaq 8(%rsp), %rax\n"
	"	movq %rax, 56(%rdi)\n"
	"	movq %r12, 96(%rdi)\n"
	"	movq %r13, 104(%rdi)\n"
	"	movq %r14, 112(%rdi)\n"
	"	movq %r15, 120(%rdi)\n"
	"	movq (%rsp), %rax\n"
	"	movq %rax, 128(%rdi)\n"
	"	ret\n"
	".cfi_endproc\n"
	".size ph_capture, .-ph_capture\n");

