// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * inject_call.c - call a function in a process whose threads inject.c
 * holds, so that the process survives the daemon dying in the middle.
 *
 * The call runs on one held thread. Below its stack pointer (past the red
 * zone and the strings pushed for the call) goes a signal frame of the
 * kernel's own layout holding everything the thread had: registers,
 * extended state (XSAVE), signal mask. The function is entered with the
 * address of the process's rt_sigreturn stub (libc's __restore_rt: mov
 * $15, %rax; syscall) as its return address, so when it returns the
 * kernel puts the thread back where it was - whether or not the daemon is
 * still there. While the daemon is, the thread runs under PTRACE_SYSCALL:
 * the exit of that rt_sigreturn ends the call (ptrace then puts back the
 * exact state, a system call to restart included), and the system calls
 * on the way tell what the call did (the function's own return value is
 * gone by then: mov $15 took rax). A daemon killed at random moments of
 * loads left 4 targets of 60 dead of SIGSEGV when calls returned to
 * address 0, as they did before; test_stress.py kills it inside the
 * agent's dlopen.
 *
 * Where no stub is found (not glibc or musl), a call returns to address 0
 * and the fault there ends it, as before; a dying daemon then kills the
 * target, and the load says so in the log.
 */
#include <cpuid.h>
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>

#include "sampler/heap/inject.h"
#include "sampler/heap/inject_i.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/proc.h"
#include "sampler/tracee.h"

#define XSTATE_MAX 16384
#define UC_FP_XSTATE 0x1
#define SW_BYTES 464		/* the XSAVE area's software-reserved bytes */
#define RESTART_BLOCK 516	/* ERESTART_RESTARTBLOCK */
#define XSAVE_HDR 512		/* the XSAVE header: XSTATE_BV first */
#define XTILEDATA 18		/* AMX tile data: a feature a task asks for */

/* mov $15, %rax; syscall */
static const uint8_t restorer_code[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00,
					 0x00, 0x00, 0x0f, 0x05 };

int inject_find_restorer(pid_t pid, struct proc_maps *maps, uint64_t in_fn,
			 uint64_t *out)
{
	struct map_entry *e = maps_find(maps, in_fn);
	size_t len, chunk = 1 << 20;
	uint8_t *buf;
	int ret = -ENOENT;

	if (!e || !e->exec)
		return -ENOENT;
	buf = malloc(chunk + sizeof(restorer_code));
	if (!buf)
		return -ENOMEM;
	for (uint64_t a = e->start; a < e->end && ret == -ENOENT; a += chunk) {
		int err;

		len = e->end - a < chunk + sizeof(restorer_code) ?
		      e->end - a : chunk + sizeof(restorer_code);
		err = proc_mem_read(pid, a, buf, len);
		if (err) {
			/* ESRCH: the process is gone, as a load can find */
			ret = err == -ESRCH ? err : -ENOENT;
			break;
		}
		for (size_t i = 0; i + sizeof(restorer_code) <= len; i++)
			if (!memcmp(buf + i, restorer_code,
				    sizeof(restorer_code))) {
				*out = a + i;
				ret = 0;
				break;
			}
	}
	free(buf);
	return ret;
}

/* ---- what a call changes, and the frame that undoes it ---- */

struct saved {
	struct user_regs_struct regs;
	uint8_t xstate[XSTATE_MAX];
	struct iovec xiov;
	uint64_t sigmask;
};

/* The kernel's struct ucontext on x86-64 (its sigset is one word). */
struct kucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	stack_t uc_stack;
	struct sigcontext uc_mcontext;
	uint64_t uc_sigmask;
};

static int save(pid_t tid, struct saved *s)
{
	if (ptrace(PTRACE_GETREGS, tid, NULL, &s->regs))
		return -errno;
	/* room for the frame's second magic after it; whole words */
	s->xiov = (struct iovec){ s->xstate, sizeof(s->xstate) - 64 };
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &s->xiov))
		return -errno;
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(s->sigmask),
		   &s->sigmask))
		return -errno;
	return 0;
}

static void restore(pid_t tid, struct saved *s)
{
	if (ptrace(PTRACE_SETREGS, tid, NULL, &s->regs) ||
	    ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &s->xiov) ||
	    ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(s->sigmask),
		   &s->sigmask)) {
		/* Killed meanwhile: nothing left to restore. */
		if (errno == ESRCH)
			pr_info("inject: thread %d died during a call",
				(int)tid);
		else
			pr_err("inject: thread %d: state not restored: %s",
			       (int)tid, strerror(errno));
	}
}

/*
 * The registers the frame gives back. sigreturn restarts nothing: a
 * thread interrupted in a system call that is to restart gets, as the
 * kernel does when no handler runs, the call's number in rax and the
 * syscall instruction again. One whose restart is a restart block
 * (nanosleep, poll, futex with a timeout) cannot: sigreturn resets that
 * block, so it sees EINTR, as after a handled signal. (Only when the
 * daemon died: else ptrace puts back the exact state.)
 */
static void frame_regs(const struct user_regs_struct *r, struct sigcontext *sc)
{
	int64_t rax = (int64_t)r->rax;

	*sc = (struct sigcontext){
		.r8 = r->r8, .r9 = r->r9, .r10 = r->r10, .r11 = r->r11,
		.r12 = r->r12, .r13 = r->r13, .r14 = r->r14, .r15 = r->r15,
		.rdi = r->rdi, .rsi = r->rsi, .rbp = r->rbp, .rbx = r->rbx,
		.rdx = r->rdx, .rax = r->rax, .rcx = r->rcx, .rsp = r->rsp,
		.rip = r->rip, .eflags = r->eflags, .cs = r->cs,
		.__pad0 = r->ss,	/* the kernel's ss */
	};
	if ((int64_t)r->orig_rax < 0)
		return;
	if (rax == -512 || rax == -513 || rax == -514) {
		sc->rax = r->orig_rax;	/* ERESTARTSYS, NOINTR, NOHAND */
		sc->rip -= 2;
	} else if (rax == -RESTART_BLOCK) {
		sc->rax = -EINTR;
	}
}

size_t inject_frame_xstate_len(const uint8_t *x, size_t len)
{
	uint64_t xcr0, bv;
	size_t end = XSAVE_HDR + 64;

	if (len < end)
		return len;
	memcpy(&xcr0, x + SW_BYTES, 8);
	memcpy(&bv, x + XSAVE_HDR, 8);
	if (!(bv & 1ull << XTILEDATA))
		xcr0 &= ~(1ull << XTILEDATA);
	/* CPUID leaf 0xd: each user feature's offset (ebx) and size (eax)
	 * in the standard format ptrace gives */
	for (unsigned i = 2; i < 63; i++) {
		unsigned a, b, c, d;

		if (!(xcr0 & 1ull << i) || !__get_cpuid_count(0xd, i, &a, &b,
							      &c, &d) ||
		    (c & 1))
			continue;
		if ((size_t)b + a > end)
			end = (size_t)b + a;
	}
	return end < len ? end : len;
}

/*
 * Lay the frame out below top: the XSAVE image (64-byte aligned, with
 * the software bytes and the second magic the kernel checks), then the
 * ucontext (16-byte aligned: the return address below it starts the
 * call's stack). *sp: where the return address goes.
 */
static int write_frame(pid_t pid, const struct saved *s, uint64_t top,
		       uint64_t restorer, uint64_t *sp)
{
	size_t xlen = inject_frame_xstate_len(s->xstate, s->xiov.iov_len);
	uint64_t xfeatures;
	uint8_t x[XSTATE_MAX];
	struct kucontext uc = { .uc_flags = UC_FP_XSTATE };
	uint64_t xaddr, ucaddr, ret_at;
	uint32_t sw[12] = { 0 };
	uint32_t magic2 = FP_XSTATE_MAGIC2;
	int ret;

	memcpy(x, s->xstate, xlen);
	/* ptrace keeps XCR0 where a frame keeps the software bytes */
	sw[0] = FP_XSTATE_MAGIC1;
	sw[1] = xlen + sizeof(magic2);	/* extended_size */
	memcpy(&xfeatures, x + SW_BYTES, 8);	/* XCR0 */
	if (xlen < s->xiov.iov_len)	/* no tile data in the image */
		xfeatures &= ~(1ull << XTILEDATA);
	memcpy(&sw[2], &xfeatures, 8);
	sw[4] = xlen;			/* xstate_size */
	memcpy(x + SW_BYTES, sw, sizeof(sw));
	memcpy(x + xlen, &magic2, sizeof(magic2));

	xaddr = (top - xlen - sizeof(magic2)) & ~63ull;
	ucaddr = (xaddr - sizeof(uc)) & ~15ull;
	ret_at = ucaddr - 8;
	frame_regs(&s->regs, &uc.uc_mcontext);
	uc.uc_mcontext.fpstate = (void *)(uintptr_t)xaddr;
	/* a mode sigaltstack refuses: the thread's own stays as it is */
	uc.uc_stack.ss_flags = 4;
	uc.uc_sigmask = s->sigmask;
	ret = proc_mem_write(pid, xaddr, x, xlen + sizeof(magic2));
	if (!ret)
		ret = proc_mem_write(pid, ucaddr, &uc, sizeof(uc));
	if (!ret)
		ret = proc_mem_write(pid, ret_at, &restorer, sizeof(restorer));
	*sp = ret_at;
	return ret;
}

/* ---- running the call ---- */

/* A call that never came back: stop the thread where it is, so its
 * state can at least be put back. */
static int abandon(struct injector *in, pid_t tid)
{
	uint64_t start = now_ns();
	int sig, event;

	pr_err("inject: pid %d: call did not return in %llu s; abandoned",
	       (int)in->pid, CALL_WAIT_NS / 1000000000ull);
	ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
	while (now_ns() - start < STOP_WAIT_NS) {
		if (tracee_poll_stop(tid, &sig, &event) != -EAGAIN)
			break;
		nap(50000);
	}
	return -ETIMEDOUT;
}

/* A system call stop of the call: note what it says; true at the entry
 * of the sigreturn that ends the call. */
static bool syscall_stop(struct injector *in, pid_t tid,
			 struct inject_seen *seen)
{
	struct __ptrace_syscall_info si;

	if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(si), &si) <
	    0)
		return false;
	if (si.op == PTRACE_SYSCALL_INFO_ENTRY) {
		seen->last_sysno = (long)si.entry.nr;
		return in->restorer && si.entry.nr == SYS_rt_sigreturn &&
		       si.instruction_pointer ==
		       in->restorer + sizeof(restorer_code);
	}
	if (si.op != PTRACE_SYSCALL_INFO_EXIT || seen->last_sysno < 0)
		return false;
	if (seen->last_sysno == seen->sysno) {
		seen->ret = si.exit.rval;
		seen->called = true;
	}
	if (si.exit.is_error) {
		seen->failed_sysno = seen->last_sysno;
		seen->failed_errno = (int)-si.exit.rval;
	}
	return false;
}

/*
 * The call's sigreturn has put the thread back (its exit stop): take an
 * interrupt stop before it runs an instruction. The daemon dying from
 * here on leaves the thread where it was, as before the call.
 */
static int stop_after_sigreturn(pid_t tid)
{
	uint64_t start = now_ns();
	int sig, event, r;

	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) ||
	    ptrace(PTRACE_CONT, tid, NULL, NULL))
		return -errno;
	while ((r = tracee_poll_stop(tid, &sig, &event)) == -EAGAIN &&
	       now_ns() - start < STOP_WAIT_NS)
		nap(20000);
	return r == -EAGAIN ? -ETIMEDOUT : r;
}

/*
 * Run the call to its end: the exit of its sigreturn (or, without a
 * stub, the fault at address 0). System call stops are noted and passed;
 * an interrupt or group stop is resumed; any other signal (an abort, a
 * fault) is the call's own and ends it with -EIO. Then the target's state
 * is not what it was: the call may have changed its heap or hold a lock
 * halfway. Putting the registers back would resume the thread on that
 * state as if nothing had happened, so the thread is left where the
 * signal stopped it and gets the signal when released: the target fails
 * as it would have failed on its own, not later and somewhere else.
 */
static int wait_return(struct injector *in, pid_t tid,
		       struct inject_seen *seen)
{
	uint64_t start = now_ns();
	struct user_regs_struct u;
	bool ending = false;	/* at the sigreturn */
	int sig, event, r;

	for (;;) {
		r = tracee_poll_stop(tid, &sig, &event);
		if (r == -EAGAIN) {
			if (now_ns() - start > CALL_WAIT_NS)
				return abandon(in, tid);
			nap(20000);
			continue;
		}
		if (r)
			return r;
		if (sig == (SIGTRAP | 0x80)) {
			/* the sigreturn is let run (a daemon that died just
			 * after would leave it to do just that) */
			if (ending)
				return stop_after_sigreturn(tid);
			ending = syscall_stop(in, tid, seen);
			ptrace(PTRACE_SYSCALL, tid, NULL, NULL);
			continue;
		}
		if (event) {	/* not a signal: go on */
			ptrace(PTRACE_SYSCALL, tid, NULL, NULL);
			continue;
		}
		if (ptrace(PTRACE_GETREGS, tid, NULL, &u))
			return -errno;
		if (!in->restorer && sig == SIGSEGV && u.rip == 0)
			return 0;
		pr_err("inject: pid %d: thread %d: the injected call was "
		       "stopped by signal %d (%s) at 0x%llx; the thread gets "
		       "the signal where it stopped", (int)in->pid, (int)tid,
		       sig, strsignal(sig), (unsigned long long)u.rip);
		in->broken_sig = sig;
		return -EIO;
	}
}

/* The call's registers: fn entered at sp with the arguments. */
static void call_regs(const struct saved *s, uint64_t fn, uint64_t sp,
		      const uint64_t *args, unsigned nargs,
		      struct user_regs_struct *u)
{
	*u = s->regs;
	u->rsp = sp;
	u->rip = fn;
	u->rax = 0;
	u->orig_rax = -1;	/* no system call restart in our frame */
	u->rdi = nargs > 0 ? args[0] : 0;
	u->rsi = nargs > 1 ? args[1] : 0;
	u->rdx = nargs > 2 ? args[2] : 0;
	u->rcx = nargs > 3 ? args[3] : 0;
	u->r8 = nargs > 4 ? args[4] : 0;
	u->r9 = nargs > 5 ? args[5] : 0;
}

/* Where the call's frame goes: below the red zone and the pushes, and a
 * margin. */
static uint64_t frame_top(struct injector *in, const struct saved *s)
{
	return s->regs.rsp - RED_ZONE - in->scratch_used - 64;
}

static int start_call(struct injector *in, struct saved *s, uint64_t fn,
		      const uint64_t *args, unsigned nargs)
{
	pid_t tid = in->caller->tid;
	struct user_regs_struct u;
	uint64_t mask, zero = 0, sp;
	int r;

	if (in->restorer) {
		r = write_frame(in->pid, s, frame_top(in, s), in->restorer,
				&sp);
	} else {
		sp = ((frame_top(in, s) - 64) & ~15ull) - 8;
		r = proc_mem_write(in->pid, sp, &zero, sizeof(zero));
	}
	if (r)
		return r;
	call_regs(s, fn, sp, args, nargs, &u);
	/* Asynchronous signals wait; faults stay deliverable (a blocked
	 * fault would reset its handler). The mask goes in after the call's
	 * registers: a daemon killed between the two leaves the thread
	 * either where it was with its own mask, or in the call, whose
	 * sigreturn puts its mask back - never where it was with every
	 * signal blocked (it would ignore SIGTERM for good). */
	mask = ~0ull & ~((1ull << (SIGSEGV - 1)) | (1ull << (SIGBUS - 1)) |
			 (1ull << (SIGILL - 1)) | (1ull << (SIGFPE - 1)) |
			 (1ull << (SIGTRAP - 1)));
	if (ptrace(PTRACE_SETOPTIONS, tid, NULL,
		   (void *)PTRACE_O_TRACESYSGOOD) ||
	    ptrace(PTRACE_SETREGS, tid, NULL, &u) ||
	    ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(mask), &mask) ||
	    ptrace(PTRACE_SYSCALL, tid, NULL, NULL)) {
		r = -errno;
		restore(tid, s);
		return r;
	}
	return 0;
}

int inject_call(struct injector *in, uint64_t fn, const uint64_t *args,
		unsigned nargs, struct inject_seen *seen)
{
	struct inject_seen ignored = { .sysno = -1 };
	struct saved *s;
	int r;

	if (nargs > 6)
		return -EINVAL;
	if (in->broken_sig)
		return -EIO;
	if (!seen)
		seen = &ignored;
	seen->called = false;
	seen->last_sysno = seen->failed_sysno = -1;
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = save(in->caller->tid, s);
	if (!r)
		r = start_call(in, s, fn, args, nargs);
	if (r)
		goto out;
	in->caller->stopped = false;
	r = wait_return(in, in->caller->tid, seen);
	in->caller->stopped = true;
	if (r == -EIO && in->broken_sig) {
		in->caller->sig = in->broken_sig;	/* see wait_return */
		goto out;
	}
	restore(in->caller->tid, s);
	in->caller->sig = 0;	/* the stop at the end is ours */
out:
	free(s);
	return r;
}

int inject_push(struct injector *in, const void *data, size_t len,
		uint64_t *addr)
{
	struct user_regs_struct u;
	uint64_t a;
	int ret;

	if (in->broken_sig)
		return -EIO;
	if (in->scratch_used + len > SCRATCH)
		return -ENOSPC;
	if (ptrace(PTRACE_GETREGS, in->caller->tid, NULL, &u))
		return -errno;
	in->scratch_used = (in->scratch_used + len + 15) & ~15ull;
	a = u.rsp - RED_ZONE - in->scratch_used;
	ret = proc_mem_write(in->pid, a, data, len);
	if (ret)
		return ret;
	*addr = a;
	return 0;
}
