// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * threads.c - a snapshot of every thread's stack: stop one thread, copy its
 * registers and stack top, release it, unwind the copy; symbolize at the
 * end.
 *
 * A thread is waited for without blocking: one in an uninterruptible sleep
 * only stops when its system call ends, which may be never. After a short
 * wait it is set aside (still seized, its interrupt pending) and polled
 * again on every turn of the wait for each next thread, so a late stop is
 * released as soon as it is seen; whatever has not stopped at the end is
 * released by the kernel when the ptrace thread exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/unwind/kallsyms.h"
#include "sampler/unwind/kframes.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/proc.h"
#include "sampler/model/profile.h"
#include "sampler/unwind/stackctx.h"
#include "sampler/unwind/symbolize.h"
#include "sampler/syscalls.h"
#include "sampler/threads/threads.h"
#include "sampler/threads/threads_i.h"
#include "sampler/tracee.h"
#include "sampler/turns.h"
#include "sampler/unwind/unwind.h"

static const struct {
	char letter;
	const char *name;
} state_names[] = {
	{ 'R', "running" }, { 'S', "sleeping" }, { 'D', "disk sleep" },
	{ 'T', "stopped" }, { 't', "tracing stop" }, { 'X', "dead" },
	{ 'Z', "zombie" }, { 'P', "parked" }, { 'I', "idle" },
	{ 'W', "waking" }, { 'K', "wakekill" },
};

static const char *state_name(char letter)
{
	for (size_t i = 0; i < sizeof(state_names) / sizeof(state_names[0]);
	     i++)
		if (state_names[i].letter == letter)
			return state_names[i].name;
	return "unknown";
}

/* Name and state from one read of /proc/PID/task/TID/stat. */
static int read_stat(pid_t pid, struct thread_rec *t)
{
	char what[64], buf[512], *open, *close;
	size_t len;
	int ret;

	snprintf(what, sizeof(what), "task/%d/stat", (int)t->tid);
	ret = proc_read(pid, what, buf, sizeof(buf) - 1, &len);
	if (ret)
		return ret;
	buf[len] = '\0';
	open = strchr(buf, '(');
	close = strrchr(buf, ')');
	if (!open || !close || close < open || close[1] != ' ' || !close[2])
		return -EINVAL;
	*close = '\0';
	snprintf(t->name, sizeof(t->name), "%s", open + 1);
	t->state = close[2];
	return 0;
}

static void sweep_late(struct dump *d);

/*
 * The kernel stack of t, asleep in a system call, as /proc shows it
 * (root only: -EACCES otherwise, after which no more are tried). Its
 * frames are the kernel's own names.
 */
static void read_kstack(struct dump *d, struct thread_rec *t)
{
	char what[64];
	size_t len;
	int ret;

	free(t->kstack);
	t->kstack = NULL;
	if (!d->kernel || !d->kbuf)
		return;
	snprintf(what, sizeof(what), "task/%d/stack", (int)t->tid);
	ret = proc_read(d->pid, what, d->kbuf, KSTACK_MAX, &len);
	if (ret == -EACCES || ret == -EPERM)
		d->kernel = false;
	if (!ret && len)
		t->kstack = strndup(d->kbuf, len);
}

/* A stop that interrupted a system call the thread was blocked in: it
 * returns one of the kernel's restart codes, or EINTR. */
static bool interrupted_call(const struct user_regs_struct *u)
{
	long rax = (long)u->rax;

	return (long)u->orig_rax >= 0 &&
	       (rax == -EINTR || (rax <= -512 && rax >= -516));
}

/*
 * Wait a little for t's stop: spin on waitpid first (a stop usually comes
 * within microseconds), then short sleeps; threads set aside earlier are
 * looked at on every turn, so none waits long for us. running_ns, set
 * before the interrupt, moves to the start of each poll that still finds
 * t running: the stop came after it, so release - running_ns bounds the
 * time t was held.
 */
static int wait_stop(struct dump *d, struct thread_rec *t, int *sig)
{
	uint64_t start = t->running_ns, before, now;
	struct timespec nap = { 0, 20000 };
	int ret, event;

	for (;;) {
		before = now_ns();
		ret = tracee_poll_stop(t->tid, sig, &event);
		if (ret != -EAGAIN)
			return ret;
		t->running_ns = before;
		sweep_late(d);
		now = now_ns();
		if (now - start >= STOP_WAIT_NS)
			return -EAGAIN;
		if (now - start >= SPIN_NS)
			nanosleep(&nap, NULL);
	}
}

static void unwind_copy(struct dump *d, struct thread_rec *t,
			const void *stack, size_t len)
{
	unwind_stack(d->sc.unw, &t->regs, stack, len, t->pcs, MAX_FRAMES,
		     &t->npcs);
}

/* Unwind a copy kept for later (see read_stopped). */
static void unwind_kept(struct dump *d, struct thread_rec *t)
{
	if (!t->copy)
		return;
	unwind_copy(d, t, t->copy, t->copy_len);
	free(t->copy);
	t->copy = NULL;
}

/*
 * t is stopped: take its registers and stack, release it, then unwind
 * the copy - or, with keep (some other thread may be stopping meanwhile),
 * keep the copy for unwind_kept().
 */
static void read_stopped(struct dump *d, struct thread_rec *t, int sig,
			 bool keep)
{
	struct user_regs_struct u;
	uint64_t released, hold;
	size_t len = 0;
	bool ok;

	if (!d->first_stop_ns)
		d->first_stop_ns = t->running_ns;
	ok = ptrace(PTRACE_GETREGS, t->tid, NULL, &u) == 0;
	if (ok)
		len = tracee_copy_stack(d->pid, d->sc.maps, u.rsp, d->stack,
					STACK_MAX);
	/* Python's frames, as they are while the stack is: -ENOMEM only
	 * loses them (read after the release instead) */
	if (ok)
		symbolizer_hold(d->sc.sym, t->tid);
	ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(long)sig);
	released = now_ns();
	d->last_release_ns = released;
	hold = released - t->running_ns;
	d->st->sum_hold_ns += hold;
	if (hold > d->st->max_hold_ns) {
		d->st->max_hold_ns = hold;
		d->st->max_hold_tid = t->tid;
	}
	if (t->late)
		d->nlate--;
	t->late = false;
	if (!ok) {		/* it died while stopped */
		t->tid = 0;
		return;
	}
	/* Stopped out of a system call, orig_rax still names it. */
	t->sysno = (long)u.orig_rax;
	if (!interrupted_call(&u)) {	/* it ran between: stale */
		free(t->kstack);
		t->kstack = NULL;
	}
	tracee_regs(&u, &t->regs);
	if (keep && len) {
		t->copy = malloc(len);
		if (t->copy) {
			memcpy(t->copy, d->stack, len);
			t->copy_len = len;
		}
		return;
	}
	unwind_copy(d, t, d->stack, len);
}

/* Look again at the threads set aside; read those that stopped since. */
static void sweep_late(struct dump *d)
{
	for (size_t i = 0; i < d->n && d->nlate; i++) {
		struct thread_rec *t = &d->t[i];
		uint64_t before;
		int sig = 0, event, ret;

		if (!t->late)
			continue;
		before = now_ns();
		ret = tracee_poll_stop(t->tid, &sig, &event);
		if (ret == -EAGAIN) {
			t->running_ns = before;
		} else if (ret) {
			t->late = false;
			d->nlate--;
			t->tid = 0;
		} else {
			read_stopped(d, t, sig, true);
		}
	}
}

/* Seize, interrupt and, if it stops soon, read one thread: 0, or -errno. */
static int grab(struct dump *d, struct thread_rec *t)
{
	int sig = 0, ret;

	if (read_stat(d->pid, t) || t->state == 'Z' || t->state == 'X')
		goto gone;
	if (t->state == 'S' || t->state == 'D')
		read_kstack(d, t);
	if (ptrace(PTRACE_SEIZE, t->tid, NULL, NULL)) {
		ret = errno == EPERM ? tracee_seize_refused(d->pid, t->tid) :
				       -errno;
		if (ret == -ESRCH)
			goto gone;	/* exited, or exiting */
		return ret;
	}
	t->running_ns = now_ns();
	if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL))
		goto gone;	/* only fails when it has gone */
	ret = wait_stop(d, t, &sig);
	if (ret == -EAGAIN) {
		t->late = true;
		d->nlate++;
		return 0;
	}
	if (ret)
		goto gone;
	read_stopped(d, t, sig, d->nlate > 0);
	return 0;
gone:
	t->tid = 0;
	return 0;
}

/*
 * A thread that never stopped, in an uninterruptible sleep: the kernel
 * gives the sp and pc it will return to, and the system call's argument
 * registers, through /proc/.../syscall; a thread asleep in the kernel
 * does not touch its user stack, so the copy is consistent.
 */
static void read_unstopped(struct dump *d, struct thread_rec *t)
{
	size_t len;

	t->late = false;
	d->nlate--;
	d->st->unstopped++;
	t->npcs = 0;
	if (tracee_syscall_regs(d->pid, t->tid, &t->sysno, &t->regs))
		return;
	read_kstack(d, t);	/* still in the call: read it again */
	len = tracee_copy_stack(d->pid, d->sc.maps, t->regs.r[UREG_RSP],
				d->stack, STACK_MAX);
	symbolizer_hold(d->sc.sym, t->tid);
	unwind_copy(d, t, d->stack, len);
}

/*
 * Is a set-aside thread runnable? Then it stops as soon as it gets a CPU:
 * on a busy machine that can take longer than LATE_WAIT_NS (a spinning
 * thread was dumped as "[not stopped]" beside two CPU hogs), unlike one
 * asleep in the kernel, which may never stop.
 */
static bool late_runnable(const struct dump *d)
{
	char path[64], buf[512];
	const char *st;
	ssize_t n;
	int fd;

	for (size_t i = 0; i < d->n; i++) {
		if (!d->t[i].late)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat",
			 (int)d->pid, (int)d->t[i].tid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		st = strrchr(buf, ')');
		if (st && st[1] == ' ' && st[2] == 'R')
			return true;
	}
	return false;
}

static int dump_all(struct dump *d)
{
	struct timespec nap = { 0, 20000 };
	uint64_t deadline, start;
	int ret;

	for (size_t i = 0; i < d->n; i++) {
		ret = grab(d, &d->t[i]);
		if (ret)
			return ret;
		sweep_late(d);
	}
	start = now_ns();
	deadline = start + LATE_WAIT_NS;
	while (d->nlate && (now_ns() < deadline ||
			    (now_ns() - start < RUNNABLE_WAIT_NS &&
			     late_runnable(d)))) {
		nanosleep(&nap, NULL);
		sweep_late(d);
	}
	for (size_t i = 0; i < d->n; i++) {
		if (d->t[i].late)
			read_unstopped(d, &d->t[i]);
		unwind_kept(d, &d->t[i]);
	}
	return 0;
}

/* The tracer: its exit detaches whatever it still holds. */
static void *dump_thread(void *arg)
{
	struct dump *d = arg;

	d->ret = dump_all(d);
	return NULL;
}

static int setup_profile(struct profile **out, pid_t pid)
{
	struct profile *p;
	int ret;

	ret = profile_new(&p);
	if (ret)
		return ret;
	ret = -ENOMEM;
	if (profile_add_sample_type(p, "goroutine", "count") ||
	    profile_set_period(p, "goroutine", "count", 1))
		goto fail;
	if (proc_name_profile(p, pid, "goroutine"))
		goto fail;
	*out = p;
	return 0;
fail:
	profile_free(p);
	return ret;
}

static int add_thread(struct dump *d, struct profile *p, struct kframes *kf,
		      const int64_t keys[GK__COUNT],
		      const struct thread_rec *t)
{
	uint64_t locs[MAX_KFRAMES + MAX_FRAMES + RUNTIME_FRAMES];
	struct symbolizer *sym = d->sc.sym;
	struct pf_label labels[GK_LABELS_MAX];
	char tid[16], sysname[32];
	const char *vals[4] = { tid, t->name, state_name(t->state), sysname };
	const char *rt_name;
	struct pf_line line = { 0 };
	int64_t one = 1;
	int ret, nk = 0, n = 0, nl = 4;

	if (t->kstack) {
		ret = kframes_proc_stack(kf, t->kstack, locs, MAX_KFRAMES,
					 &nk);
		if (ret)
			return ret;
	}
	ret = symbolizer_stack(sym, t->tid, t->pcs, t->npcs, &locs[nk],
			       MAX_FRAMES + RUNTIME_FRAMES, &n, NULL);
	if (ret)
		return ret;
	if (!n) {	/* never stopped, and /proc had nothing either */
		ret = profile_add_function(p, "[not stopped]", NULL, NULL, 0,
					   &line.function_id);
		if (!ret)
			ret = profile_add_location(p, 0, 0, &line, 1,
						   &locs[nk]);
		if (ret)
			return ret;
		n = 1;
	}
	n += nk;
	rt_name = symbolizer_thread_name(sym, t->tid);
	if (rt_name)
		vals[1] = rt_name;
	snprintf(tid, sizeof(tid), "%d", (int)t->tid);
	syscall_name_fmt(t->sysno, sysname, sizeof(sysname));
	/* the goroutine it runs: Go's status for it */
	ret = gothreads_labels(d, t->gor, p, keys, labels, &nl, &vals[2]);
	if (ret)
		return ret;
	for (int i = 0; i < 4; i++) {
		labels[i] = (struct pf_label){ .key = keys[i] };
		labels[i].str = profile_intern(p, vals[i]);
		if (labels[i].str < 0)
			return -ENOMEM;
	}
	return profile_add_sample(p, locs, n, labels, nl, &one);
}

static int build_profile(struct dump *d, struct profile *p)
{
	static const char *const key_names[GK__COUNT] = {
		"thread", "thread_name", "state", "syscall", "goroutine",
		"wait_minutes", "created_by", "created_at", "locked_to_thread",
	};
	struct kframes *kf;
	int64_t keys[GK__COUNT];
	char text[160];
	int ret;

	for (int i = 0; i < GK__COUNT; i++) {
		keys[i] = profile_intern(p, key_names[i]);
		if (keys[i] < 0)
			return -ENOMEM;
	}
	/* The table's first read (100-150 ms) comes after the threads
	 * ran again, and only for a dump that has kernel stacks. */
	ret = kframes_new(p, d->kernel && d->ksyms &&
			  kallsyms_ready(d->ksyms) ? d->ksyms : NULL, &kf);
	for (size_t i = 0; i < d->n && !ret; i++) {
		if (!d->t[i].tid)
			continue;
		ret = add_thread(d, p, kf, keys, &d->t[i]);
		d->st->threads++;
	}
	if (!ret)
		ret = gothreads_add(d, p, keys);
	if (!ret)
		ret = symbolizer_note(d->sc.sym);
	kframes_free(kf);
	if (ret)
		return ret;
	snprintf(text, sizeof(text), "proffs: %u threads stopped one at a "
		 "time, each for at most %.1f us; %u skipped, %u not stopped",
		 d->st->threads, d->st->max_hold_ns / 1e3, d->st->skipped,
		 d->st->unstopped);
	ret = profile_add_comment(p, text);
	return ret ? ret : gothreads_comment(d, p);
}

/* Ptrace on its own thread; fills d->t and the hold times. */
static int run_tracer(struct dump *d)
{
	pthread_t th;
	int ret;

	ret = pthread_create(&th, NULL, dump_thread, d);
	if (ret)
		return -ret;
	pthread_join(th, NULL);
	for (size_t i = 0; i < d->n; i++)
		if (!d->t[i].tid)
			d->st->skipped++;
	if (d->first_stop_ns)
		d->st->stop_ns = d->last_release_ns - d->first_stop_ns;
	return d->ret;
}

static int load_tasks(struct dump *d)
{
	pid_t *tids;
	size_t n;
	int ret;

	ret = proc_tasks(d->pid, &tids, &n);
	if (ret)
		return ret;
	d->t = calloc(n ? n : 1, sizeof(*d->t));
	if (!d->t) {
		free(tids);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		d->t[i].tid = tids[i];
		d->t[i].sysno = -1;
		d->t[i].gor = -1;
	}
	d->n = n;
	free(tids);
	return 0;
}

static int check_target(pid_t pid)
{
	if (pid <= 0)
		return -EINVAL;
	if (pid == getpid())
		return -EPERM;	/* no process may trace its own threads */
	/* a debugger's target is refused before anything is set up */
	return tracee_await_untraced(pid, "threads");
}

static void drop_tasks(struct dump *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->t[i].copy);
		free(d->t[i].kstack);
	}
	free(d->t);
	d->t = NULL;
	d->n = d->nlate = 0;
	d->first_stop_ns = d->last_release_ns = 0;
	d->ret = 0;
}

/* The threads listed and read, in the target's turn (turns.h): 0, or
 * -errno. */
static int dump_tasks(struct dump *d, const struct threads_opts *o)
{
	int ret;

	ret = turns_take(o->turns, o->pid, TRACEE_OWN_WAIT_MS);
	if (ret)
		return ret;
	/* a heap agent load that had the turn: its tracer thread may
	 * still be letting go */
	ret = tracee_await_untraced(o->pid, "threads");
	if (!ret)
		ret = load_tasks(d);
	if (!ret)
		ret = run_tracer(d);
	turns_give(o->turns, o->pid);
	return ret;
}

int threads_profile(const struct threads_opts *o, struct profile **out,
		    struct threads_stats *st)
{
	struct dump d = { .pid = o->pid, .st = st, .kernel = o->kernel,
			  .ksyms = o->ksyms };
	struct profile *p = NULL;
	uint64_t start = now_ns();
	int64_t wall = wall_ns();
	int ret;

	memset(st, 0, sizeof(*st));
	ret = check_target(o->pid);
	if (ret)
		goto out;
	ret = setup_profile(&p, o->pid);
	if (ret)
		goto out;
	ret = stackctx_open(&d.sc, o->pid, o->cache, p, STACKCTX_ATTACH);
	if (ret)
		goto out_profile;
	d.stack = malloc(STACK_MAX);
	d.kbuf = o->kernel ? malloc(KSTACK_MAX) : NULL;
	ret = d.stack ? dump_tasks(&d, o) : -ENOMEM;
	/* a JVM's own view, once every thread runs again */
	if (!ret)
		ret = symbolizer_dump(d.sc.sym);
	/* a Go program's goroutines, read as they run */
	if (!ret)
		ret = gothreads_read(&d);
	if (!ret && !st->threads && !proc_alive(o->pid))
		ret = -ESRCH;
	if (!ret)
		ret = build_profile(&d, p);
	if (!ret && !st->threads)
		ret = -ESRCH;	/* every thread went away under us */
	drop_tasks(&d);
	gothreads_free(&d);
	free(d.stack);
	free(d.kbuf);
	stackctx_close(&d.sc);
out_profile:
	if (ret) {
		profile_free(p);
		p = NULL;
	}
out:
	if (ret == -ENOENT)
		ret = -ESRCH;
	if (ret == -EACCES)
		ret = -EPERM;
	st->total_ns = now_ns() - start;
	if (p) {
		profile_header(p)->time_nanos = wall;
		*out = p;
	}
	return ret;
}
