// SPDX-License-Identifier: GPL-2.0-or-later
/* taskstat.c - a thread's schedstat, syscall, stat and stack files. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sampler/proc.h"
#include "sampler/offcpu/taskstat.h"
#include "sampler/tracee.h"

#define SYS_TEXT 256

void task_files_init(struct task_files *f)
{
	*f = (struct task_files){ .sched = -1, .sys = -1, .stat = -1,
				  .kstack = -1 };
}

void task_files_close(struct task_files *f)
{
	int *fds[] = { &f->sched, &f->sys, &f->stat, &f->kstack };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* The text of /proc/PID/task/TID/<what> through *fd (opened on first
 * use), NUL-terminated; *len is its length. */
static int read_file(pid_t pid, pid_t tid, const char *what, int *fd,
		     char *buf, size_t size, size_t *len)
{
	ssize_t n;

	if (*fd < 0) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid,
			 (int)tid, what);
		*fd = open(path, O_RDONLY | O_CLOEXEC);
		if (*fd < 0)
			return errno == ENOENT ? -ESRCH : -errno;
	}
	do
		n = pread(*fd, buf, size - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	buf[n] = '\0';
	if (len)
		*len = n;
	/* A thread that has exited reads as empty. */
	return n ? 0 : -ESRCH;
}

int task_read_sched(pid_t pid, pid_t tid, struct task_files *f,
		    struct task_sched *out)
{
	char buf[96];
	int ret;

	ret = read_file(pid, tid, "schedstat", &f->sched, buf, sizeof(buf),
			NULL);
	if (ret)
		return ret;
	if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64, &out->run_ns,
		   &out->wait_ns, &out->slices) != 3)
		return -EINVAL;
	return 0;
}

int task_read_state(pid_t pid, pid_t tid, struct task_files *f,
		    char *state)
{
	char buf[512];
	const char *close;
	int ret;

	ret = read_file(pid, tid, "stat", &f->stat, buf, sizeof(buf), NULL);
	if (ret)
		return ret;
	close = strrchr(buf, ')');
	if (!close || close[1] != ' ' || !close[2])
		return -EINVAL;
	*state = close[2];
	return 0;
}

int task_read_switches(pid_t pid, pid_t tid, struct task_switches *out)
{
	char what[64], buf[4096];
	const char *v, *n;
	int ret;

	snprintf(what, sizeof(what), "task/%d/status", (int)tid);
	ret = proc_read_text(pid, what, buf, sizeof(buf));
	if (ret)
		return ret;
	v = strstr(buf, "\nvoluntary_ctxt_switches:");
	n = strstr(buf, "\nnonvoluntary_ctxt_switches:");
	if (!v || !n)
		return -ENODATA;
	out->voluntary = strtoull(v + 25, NULL, 10);
	out->involuntary = strtoull(n + 28, NULL, 10);
	return 0;
}

/* The kernel stack's text, or nothing: only root may read it. */
static void read_kstack(pid_t pid, pid_t tid, struct task_files *f,
			char *kbuf, size_t kmax, size_t *len)
{
	int ret;

	*len = 0;
	if (!kbuf || !kmax || f->no_kstack)
		return;
	ret = read_file(pid, tid, "stack", &f->kstack, kbuf, kmax, len);
	if (ret) {
		*len = 0;
		kbuf[0] = '\0';
		if (ret == -EACCES || ret == -EPERM)
			f->no_kstack = true;
	}
}

/*
 * System calls whose sleeps are always interruptible (state S): their
 * state needs no read of stat, which costs the kernel more than the
 * other files (3.5 us against 2-2.7 here). Others (I/O, vfork's killable
 * wait) may sleep in D.
 */
static bool always_interruptible(long sysno)
{
	static const long calls[] = {
		SYS_futex, SYS_nanosleep, SYS_clock_nanosleep, SYS_poll,
		SYS_ppoll, SYS_select, SYS_pselect6, SYS_epoll_wait,
		SYS_epoll_pwait, SYS_pause, SYS_rt_sigsuspend,
		SYS_rt_sigtimedwait, SYS_wait4, SYS_waitid,
	};

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (calls[i] == sysno)
			return true;
	return false;
}

int task_still_asleep(pid_t pid, pid_t tid, struct task_files *f,
		      bool *asleep)
{
	char sys[SYS_TEXT];
	int ret;

	ret = read_file(pid, tid, "syscall", &f->sys, sys, sizeof(sys), NULL);
	if (!ret)
		*asleep = strncmp(sys, "running", 7) != 0;
	return ret;
}

int task_read_syscall(pid_t pid, pid_t tid, struct task_files *f,
		      bool *asleep, long *sysno, struct unwind_regs *regs)
{
	char sys[SYS_TEXT];
	int ret;

	ret = read_file(pid, tid, "syscall", &f->sys, sys, sizeof(sys), NULL);
	if (!ret)
		*asleep = !tracee_syscall_parse(sys, sysno, regs);
	return ret;
}

int task_snapshot(pid_t pid, pid_t tid, struct task_files *f,
		  struct proc_maps *maps, const struct task_sched *before,
		  void *stack, size_t stack_max, char *kbuf, size_t kmax,
		  const struct task_place *known, struct task_snap *out)
{
	struct task_place here;
	struct task_sched after;
	bool asleep;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = task_read_syscall(pid, tid, f, &asleep, &out->sysno,
				&out->regs);
	if (ret)
		return ret;
	if (!asleep) {
		out->where = TASK_RUNNING;
		return 0;
	}
	/* Not "running": not runnable either (the file says "running" for
	 * both), so asleep; stat tells S from D, where it can be either. */
	out->state = 'S';
	if (!always_interruptible(out->sysno)) {
		ret = task_read_state(pid, tid, f, &out->state);
		if (ret)
			return ret;
	}
	out->stack_len = tracee_copy_stack(pid, maps,
					   out->regs.r[UREG_RSP], stack,
					   stack_max);
	task_snap_place(out, &here);
	out->kstack_known = known && !memcmp(known, &here, sizeof(here));
	if (!out->kstack_known)
		read_kstack(pid, tid, f, kbuf, kmax, &out->kstack_len);
	/* Put on a CPU since before, slices has changed already (the
	 * kernel counts it as the thread arrives); not run, the thread has
	 * written nothing: the registers of the syscall file and the copy
	 * are what they were. */
	ret = task_read_sched(pid, tid, f, &after);
	if (ret)
		return ret;
	if (!task_sched_equal(before, &after))
		out->where = TASK_RACED;
	else
		out->where = out->state == 'R' ? TASK_RUNNABLE : TASK_BLOCKED;
	return 0;
}

void task_snap_place(const struct task_snap *s, struct task_place *out)
{
	memset(out, 0, sizeof(*out));
	out->sysno = s->sysno;
	out->arg0 = s->regs.r[UREG_RDI];
	out->pc = s->regs.r[UREG_RIP];
}
