// SPDX-License-Identifier: GPL-2.0-or-later
/* tracee.c - stops, registers and stacks of seized threads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/proc.h"
#include "sampler/tracee.h"

int tracee_poll_stop(pid_t tid, int *sig, int *event)
{
	int status;
	pid_t r;

	r = waitpid(tid, &status, __WALL | WNOHANG);
	if (r == 0 || (r < 0 && errno == EINTR))
		return -EAGAIN;
	if (r < 0 || !WIFSTOPPED(status))
		return -ESRCH;
	*event = (unsigned)status >> 16;
	/* A signal-delivery stop took the place of ours: the signal must
	 * still be delivered. Event stops (ours, group-stop) carry none. */
	*sig = *event ? 0 : WSTOPSIG(status);
	return 0;
}

void tracee_regs(const struct user_regs_struct *u, struct unwind_regs *r)
{
	memset(r, 0, sizeof(*r));
	r->r[UREG_RAX] = u->rax;
	r->r[UREG_RDX] = u->rdx;
	r->r[UREG_RCX] = u->rcx;
	r->r[UREG_RBX] = u->rbx;
	r->r[UREG_RSI] = u->rsi;
	r->r[UREG_RDI] = u->rdi;
	r->r[UREG_RBP] = u->rbp;
	r->r[UREG_RSP] = u->rsp;
	r->r[UREG_R8] = u->r8;
	r->r[UREG_R9] = u->r9;
	r->r[UREG_R10] = u->r10;
	r->r[UREG_R11] = u->r11;
	r->r[UREG_R12] = u->r12;
	r->r[UREG_R13] = u->r13;
	r->r[UREG_R14] = u->r14;
	r->r[UREG_R15] = u->r15;
	r->r[UREG_RIP] = u->rip;
}

size_t tracee_copy_stack(pid_t pid, struct proc_maps *maps, uint64_t sp,
			 void *buf, size_t max)
{
	struct map_entry *e = maps ? maps_find(maps, sp) : NULL;

	if (e && e->end < sp + max)
		max = e->end - sp;
	return proc_mem_copy(pid, sp, buf, max);
}

int tracee_tracer_of(pid_t pid, const char *what, pid_t *tracer)
{
	char path[64], buf[2048];
	const char *l;
	int ret;

	snprintf(path, sizeof(path), "%s/status", what);
	ret = proc_read_text(pid, path, buf, sizeof(buf));
	if (ret)
		return ret;
	l = strstr(buf, "\nTracerPid:");
	*tracer = l ? (pid_t)atoi(l + 11) : 0;
	return 0;
}

bool tracee_own_thread(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	return !access(path, F_OK);
}

/* Waiting for our own tracer covers the moment after one of the
 * daemon's ptrace users (a dump, a heap agent load: they take turns,
 * turns.h) has joined its tracer thread and before the kernel has let go
 * of the threads it never saw stop. */
int tracee_await_untraced(pid_t pid, const char *who)
{
	uint64_t until = now_ns() + TRACEE_OWN_WAIT_MS * 1000000ull;
	pid_t tracer;
	int ret;

	ret = tracee_tracer_of(pid, ".", &tracer);
	while (!ret && tracer && tracee_own_thread(tracer) &&
	       now_ns() < until) {
		usleep(5000);
		ret = tracee_tracer_of(pid, ".", &tracer);
	}
	if (ret)
		return ret == -ENOENT ? -ESRCH : ret;
	if (tracer) {
		pr_info("%s: %d is traced by %d", who, (int)pid,
			(int)tracer);
		return -EBUSY;
	}
	return 0;
}

int tracee_seize_refused(pid_t pid, pid_t tid)
{
	char what[64], buf[2048];
	const char *l;
	pid_t tracer;
	int ret;

	/* The kernel will not attach to a thread that has begun to exit
	 * (a zombie until it is reaped): EPERM, where ESRCH is meant. */
	snprintf(what, sizeof(what), "task/%d/status", (int)tid);
	ret = proc_read_text(pid, what, buf, sizeof(buf));
	if (ret)
		return ret == -ENOENT || ret == -ESRCH ? -ESRCH : -EPERM;
	l = strstr(buf, "\nState:\t");
	if (l && (l[8] == 'Z' || l[8] == 'X'))
		return -ESRCH;
	l = strstr(buf, "\nTracerPid:");
	tracer = l ? (pid_t)atoi(l + 11) : 0;
	if (tracer) {
		pr_info("ptrace: thread %d of %d is traced by %d", (int)tid,
			(int)pid, (int)tracer);
		return -EBUSY;
	}
	return -EPERM;
}

int tracee_syscall_parse(const char *text, long *sysno,
			 struct unwind_regs *r)
{
	static const enum unwind_reg args[6] = {
		UREG_RDI, UREG_RSI, UREG_RDX, UREG_R10, UREG_R8, UREG_R9,
	};
	unsigned long long v[9];
	int n;

	n = sscanf(text, "%lli %llx %llx %llx %llx %llx %llx %llx %llx",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
		   &v[8]);
	if (n != 9 && n != 3)	/* "running", or "-1 sp pc" outside one */
		return -ENODATA;
	*sysno = (long)v[0];
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < 6 && n == 9; i++)
		r->r[args[i]] = v[1 + i];
	r->r[UREG_RSP] = v[n - 2];
	r->r[UREG_RIP] = v[n - 1];
	return 0;
}

int tracee_syscall_regs(pid_t pid, pid_t tid, long *sysno,
			struct unwind_regs *r)
{
	char what[64], buf[256];
	int ret;

	snprintf(what, sizeof(what), "task/%d/syscall", (int)tid);
	ret = proc_read_text(pid, what, buf, sizeof(buf));
	return ret ? ret : tracee_syscall_parse(buf, sysno, r);
}
