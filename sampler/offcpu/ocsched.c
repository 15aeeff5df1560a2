// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ocsched.c - offcpu=sched: each thread's time off the CPU, exactly,
 * from the scheduler's own records (perf_switch.h): every interval from
 * a switch out to the next switch in, charged to the user stack the
 * thread left the CPU with.
 *
 * At each switch out, as the rings are read (every few milliseconds),
 * the sample's stack is unwound and the place it names is found or
 * added among the thread's places (octhreads.h). A thread that went to
 * sleep inside a system call has ax = -ENOSYS in its user registers and
 * the call's arguments in the others (the futex operation is the
 * second), but not the call's number, which perf's registers lack: it is
 * known by the user pc the call returns to, learnt from the thread's
 * /proc syscall file read while it still sleeps there (a pc of a
 * syscall instruction makes one call, but for the generic syscall()
 * function: a pc seen with two numbers is read each time). A place whose
 * call was never seen is named at the end if its pc was learnt later;
 * else its frames alone classify it (waitclass_of_frames()).
 *
 * Then, in time order, the switches pair up: the interval from a
 * switch out to the thread's next switch in goes to the place of the
 * switch out, a sleep (the thread went to sleep, and was woken, and
 * waited for a CPU) or a preemption (runnable all along). A thread off
 * the CPU since before the events were there has its stack from a look
 * at /proc (offcpu.c) just before the window (looks()). The rest of a
 * thread's life in the window is its time on a CPU (ocshare.c shares it
 * out among wall's cpu-clock samples).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/clock.h"
#include "sampler/unwind/kallsyms.h"
#include "sampler/offcpu/octhreads.h"
#include "sampler/offcpu/offcpu_i.h"
#include "sampler/perf/perf.h"
#include "sampler/perf/perf_switch.h"
#include "sampler/model/profile.h"
#include "sampler/offcpu/pseudoloc.h"
#include "sampler/unwind/symbolize.h"
#include "sampler/offcpu/taskstat.h"
#include "sampler/unwind/unwind.h"
#include "sampler/offcpu/waitclass.h"

#define MAX_FRAMES 128
#define NO_PLACE UINT32_MAX	/* a token that names no place */
#define PC_AMBIGUOUS (-3L)

/* user pc of a system call -> its number (or PC_AMBIGUOUS): open
 * addressing, pc 0 marks an empty slot. */
struct calls {
	uint64_t *pc;
	long *sysno;
	size_t n, cap;		/* cap a power of two, at least 2n */
};

struct oc_sched {
	struct perf_switch *w;
	struct calls calls;
	uint64_t pcs[MAX_FRAMES];
	uint64_t kpcs[OC_MAX_KFRAMES];
	struct kallsyms *ksyms;		/* NULL: no kernel frames; held */
};

/* ---- system calls by pc ---- */

static size_t call_slot(const struct calls *c, uint64_t pc)
{
	size_t i = (pc * 0x9e3779b97f4a7c15ull) >> 20 & (c->cap - 1);

	while (c->pc[i] && c->pc[i] != pc)
		i = (i + 1) & (c->cap - 1);
	return i;
}

static long call_get(const struct calls *c, uint64_t pc)
{
	size_t i;

	if (!c->cap || !pc)
		return OC_SYSNO_UNKNOWN;
	i = call_slot(c, pc);
	return c->pc[i] ? c->sysno[i] : OC_SYSNO_UNKNOWN;
}

static int call_grow(struct calls *c)
{
	struct calls g = { .cap = c->cap ? 2 * c->cap : 64 };

	g.pc = calloc(g.cap, sizeof(*g.pc));
	g.sysno = calloc(g.cap, sizeof(*g.sysno));
	if (!g.pc || !g.sysno) {
		free(g.pc);
		free(g.sysno);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->cap; i++) {
		size_t k;

		if (!c->pc[i])
			continue;
		k = call_slot(&g, c->pc[i]);
		g.pc[k] = c->pc[i];
		g.sysno[k] = c->sysno[i];
	}
	g.n = c->n;
	free(c->pc);
	free(c->sysno);
	*c = g;
	return 0;
}

/* pc was seen to make call sysno. */
static int call_learn(struct calls *c, uint64_t pc, long sysno)
{
	size_t i;
	int ret;

	if (!pc || sysno < 0)
		return 0;
	if (2 * (c->n + 1) > c->cap) {
		ret = call_grow(c);
		if (ret)
			return ret;
	}
	i = call_slot(c, pc);
	if (!c->pc[i]) {
		c->pc[i] = pc;
		c->sysno[i] = sysno;
		c->n++;
	} else if (c->sysno[i] != sysno) {
		c->sysno[i] = PC_AMBIGUOUS;
	}
	return 0;
}

/*
 * The system call of th, asleep in a call at the user sp and pc of regs:
 * known by its pc, else from its syscall file if it still sleeps there.
 */
static long call_of(struct oc_run *run, struct oc_thread *th,
		    const struct unwind_regs *regs)
{
	struct oc_sched *sc = run->sched;
	uint64_t pc = regs->r[UREG_RIP];
	long sysno = call_get(&sc->calls, pc);
	struct unwind_regs now;
	bool asleep;

	if (sysno >= 0)
		return sysno;
	run->st->calls_read++;
	if (task_read_syscall(run->o->pid, th->tid, &th->files, &asleep,
			      &sysno, &now) || !asleep || sysno < 0 ||
	    now.r[UREG_RIP] != pc || now.r[UREG_RSP] != regs->r[UREG_RSP])
		return OC_SYSNO_UNKNOWN;
	if (call_learn(&sc->calls, pc, sysno))
		run->err = -ENOMEM;
	return sysno;
}

/* ---- at each switch out, as it is read ---- */

static struct oc_thread *thread_of(struct oc_run *run, uint32_t tid)
{
	struct oc_thread *th = octhreads_find(run->threads, tid);
	int ret;

	if (th)
		return th;
	ret = oc_thread_new(run, tid, &th);
	if (ret) {
		run->err = ret;
		return NULL;
	}
	th->gone = false;	/* its records say when it ends */
	return th;
}

/*
 * What the stack holds from sp up to the outermost frame unwound: its
 * return addresses, saved registers and the callers' locals. A sleep
 * where the last one of the thread was, with the same stack, is the same
 * call sleeping again (woken, it found the lock taken again): the same
 * wait. A call made anew has a caller whose locals moved on, mostly.
 */
static uint32_t stack_hash(const void *stack, size_t len)
{
	const uint8_t *p = stack;
	uint64_t h = 1469598103934665603ull ^ len, w;

	for (size_t i = 0; i + sizeof(w) <= len; i += sizeof(w)) {
		memcpy(&w, p + i, sizeof(w));
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	return (uint32_t)(h ^ h >> 32);
}

/*
 * The kernel frames of a sleep, innermost first, without the scheduler's
 * and the lock functions: the frames /proc/PID/task/TID/stack shows
 * (procfs), where the callchain taken in the scheduler starts inside it.
 */
static uint32_t kernel_frames(const struct oc_sched *sc,
			      const struct perf_sample *s, uint64_t *kpcs)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->nkernel && n < OC_MAX_KFRAMES; i++)
		if (!kallsyms_in_sched(sc->ksyms, s->kernel[i]))
			kpcs[n++] = s->kernel[i];
	return n;
}

/* The token of a switch out: the place, and the stack's hash above it. */
static uint64_t token(uint32_t place, uint32_t hash)
{
	return (uint64_t)hash << 32 | place;
}

static uint64_t on_out(uint32_t tid, bool preempted,
		       const struct perf_sample *s, void *arg)
{
	struct oc_run *run = arg;
	struct oc_sched *sc = run->sched;
	struct oc_thread *th;
	struct oc_place want = { .pcs = sc->pcs, .kpcs = sc->kpcs };
	uint32_t place = NO_PLACE, hash = 0;
	bool short_copy;
	size_t used = 0;
	int n = 0, ret;

	if (run->err)
		return NO_PLACE;
	th = thread_of(run, tid);
	if (!th)
		return NO_PLACE;
	run->st->preempted += preempted;
	if (s) {
		unwind_stack(run->sc.unw, &s->regs, s->stack, s->stack_len,
			     sc->pcs, MAX_FRAMES, &n);
		if (!unwind_last_complete(run->sc.unw))
			run->st->incomplete++;
		unwind_last_stack_use(run->sc.unw, &used, &short_copy);
		hash = stack_hash(s->stack, used);
	}
	want.npcs = n;
	/* A preemption is charged where the thread ran: its stack alone. */
	want.in_call = s && !preempted &&
		       s->regs.r[UREG_RAX] == (uint64_t)-ENOSYS;
	want.pc = want.in_call ? s->regs.r[UREG_RIP] : 0;
	want.sysno = want.in_call ? call_of(run, th, &s->regs) : -1;
	if (s && !preempted && sc->ksyms)
		want.nkpcs = kernel_frames(sc, s, sc->kpcs);
	ret = octhread_place(th, &want, &place);
	if (ret) {
		run->err = ret;
		return NO_PLACE;
	}
	th->places[place].arg1 = want.in_call ? s->regs.r[UREG_RSI] : 0;
	return token(place, hash);
}

/* ---- in time order ---- */

static uint64_t clamp(const struct oc_run *run, uint64_t t)
{
	return t < run->start_ns ? run->start_ns :
	       t > run->end_ns ? run->end_ns : t;
}

/*
 * th was off the CPU from a to b, from the switch out of token (ended:
 * it came back in the window). A wait ends with the last sleep of its
 * call: counted there, once, so a wait whose call sleeps again after the
 * window's end (woken, the lock taken again) did not end in it, and one
 * that began sleeping before the window's start and ends in it did.
 */
static void interval(struct oc_run *run, struct oc_thread *th,
		     uint64_t tok, bool preempted, uint64_t a, uint64_t b,
		     bool ended)
{
	uint32_t place = (uint32_t)tok;
	struct oc_place *pl;
	bool again;
	uint64_t d;

	/* a preemption between two sleeps of a call does not end it */
	again = !preempted && th->slept && th->last_sleep == tok;
	if (!preempted) {
		if (again && th->wait_counted && place < th->nplaces)
			th->places[place].waits--;	/* it went on */
		th->wait_counted = false;
		th->last_sleep = tok;
		th->slept = true;
	}
	a = clamp(run, a);
	b = clamp(run, b);
	if (b <= a || place >= th->nplaces)
		return;
	d = b - a;
	th->sched_off_ns += d;
	pl = &th->places[place];
	if (preempted) {
		pl->preempts++;
		pl->preempt_ns += d;
		return;
	}
	pl->sleeps++;
	pl->waits += ended;
	th->wait_counted = ended;
	pl->off_ns += d;
}

/* A thread off the CPU since before the events were there, back at t:
 * where the last look before the window found it. */
static void first_interval(struct oc_run *run, struct oc_thread *th,
			   uint64_t t)
{
	uint64_t b = clamp(run, t);

	if (th->first_ns > run->start_ns || b <= run->start_ns)
		return;		/* born in the window: it had not run */
	th->start_off_ns = b - run->start_ns;
	th->start_waited = t <= run->end_ns;
	th->sched_off_ns += th->start_off_ns;
}

static void on_event(struct oc_run *run, const struct perf_switch_ev *ev)
{
	struct oc_thread *th = thread_of(run, ev->tid);

	if (!th)
		return;
	switch (ev->type) {
	case PSW_START:	/* made in the window: known since it was read */
		if (th->first_ns > run->start_ns)
			th->first_ns = clamp(run, ev->time);
		break;
	case PSW_END:
		th->gone = true;
		th->last_ns = clamp(run, ev->time);
		break;
	case PSW_OUT:
		/* an out after an out: the switch in between was lost */
		th->out = true;
		th->out_ns = ev->time;
		th->out_token = ev->token;
		th->out_preempted = ev->preempted;
		th->switched = true;
		break;
	case PSW_IN:
		if (th->out)
			interval(run, th, th->out_token, th->out_preempted,
				 th->out_ns, ev->time, ev->time <= run->end_ns);
		else if (!th->switched)
			first_interval(run, th, ev->time);
		th->out = false;
		th->switched = true;
		break;
	}
}

static void pair(struct oc_run *run, bool all)
{
	struct perf_switch_ev ev;

	while (!run->err && perf_switch_next(run->sched->w, all, &ev))
		on_event(run, &ev);
}

/* ---- the window ---- */

/*
 * Where thread th is, from /proc; what a look finds asleep teaches the
 * pc of its call.
 */
static int first_look(struct oc_run *run, struct oc_thread *th)
{
	uint64_t pc;
	long sysno;
	int ret;

	ret = oc_look_first(run, th, &th->first_off, &sysno, &pc);
	if (!ret && th->first_off)
		ret = call_learn(&run->sched->calls, pc, sysno);
	return ret;
}

/*
 * Where each thread is, before the events are there (first), then
 * again, once they are, for those that ran since (else the first look
 * holds: a thread that has not run since is in the same call, asleep or
 * woken, until its first switch in, which is then its first record).
 * The looks before take the time of the first unwinds, which read the
 * objects' tables; those after are quick.
 */
static int looks(struct oc_run *run, bool first)
{
	size_t n = octhreads_count(run->threads);
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++) {
		struct oc_thread *th = octhreads_at(run->threads, i);
		struct task_sched now;

		if (th->gone)
			continue;
		if (!first &&
		    !task_read_sched(run->o->pid, th->tid, &th->files, &now) &&
		    task_sched_equal(&now, &th->last))
			continue;
		ret = first_look(run, th);
	}
	return ret;
}

int oc_sched_open(struct oc_run *run)
{
	size_t n = octhreads_count(run->threads);
	struct oc_sched *sc = calloc(1, sizeof(*sc));
	int ret;

	if (!sc)
		return -ENOMEM;
	run->sched = sc;
	ret = perf_switch_probe(run->o->pid);
	if (!ret)
		ret = looks(run, true);
	if (!ret)
		ret = perf_switch_open(run->o->pid, run->o->ksyms &&
				       kallsyms_ready(run->o->ksyms), &sc->w);
	if (!ret && perf_switch_kernel_frames(sc->w) &&
	    kallsyms_hold(run->o->ksyms))
		sc->ksyms = run->o->ksyms;
	if (ret) {	/* /proc alone, then: as if never looked at */
		for (size_t i = 0; i < n; i++)
			octhreads_at(run->threads, i)->have_stack = false;
		oc_sched_free(run);
		return ret;
	}
	ret = looks(run, false);
	if (ret)
		return ret;
	run->start_ns = now_ns();
	run->end_ns = run->start_ns + run->o->window_ms * 1000000ull;
	for (size_t i = 0; i < n; i++)
		octhreads_at(run->threads, i)->first_ns = run->start_ns;
	return 0;
}

int oc_sched_poll(struct oc_run *run, int timeout_ms)
{
	int ret = perf_switch_poll(run->sched->w, timeout_ms, on_out, run);

	if (!ret)
		pair(run, false);
	return ret ? ret : run->err;
}

int oc_sched_end(struct oc_run *run)
{
	size_t n = octhreads_count(run->threads);
	uint64_t outs, lost;
	int ret;

	ret = perf_switch_poll(run->sched->w, 0, on_out, run);
	if (!ret)
		pair(run, true);
	if (ret || run->err)
		return ret ? ret : run->err;
	for (size_t i = 0; i < n; i++) {
		struct oc_thread *th = octhreads_at(run->threads, i);

		if (!th->gone)
			th->last_ns = run->end_ns;
		if (th->out)	/* off the CPU at the end */
			interval(run, th, th->out_token, th->out_preempted,
				 th->out_ns, th->last_ns, false);
		else if (!th->switched && th->first_off)	/* all off */
			first_interval(run, th, UINT64_MAX);
	}
	perf_switch_counts(run->sched->w, &outs, &lost);
	run->st->switches = outs;
	run->st->switch_lost = lost;
	return 0;
}

void oc_sched_free(struct oc_run *run)
{
	if (!run->sched)
		return;
	perf_switch_close(run->sched->w);
	if (run->sched->ksyms)
		kallsyms_put(run->sched->ksyms);
	free(run->sched->calls.pc);
	free(run->sched->calls.sysno);
	free(run->sched);
	run->sched = NULL;
}

/* ---- the samples ---- */

/* The class of the sleeps at pl, its call known or not. */
static enum wait_class place_class(struct oc_run *run,
				   const struct oc_place *pl, long sysno)
{
	struct unwind_regs regs = { 0 };

	if (!pl->in_call)
		return WAIT_OTHER;
	if (sysno < 0)
		return waitclass_of_frames(run->wc, pl->pcs, pl->npcs);
	regs.r[UREG_RSI] = pl->arg1;
	return waitclass_of(run->wc, sysno, &regs, pl->pcs, pl->npcs);
}

/* A kernel return address as a "[k] name" frame, as procfs names them
 * (the function of its call: the byte before). */
static int kernel_loc(struct oc_run *run, uint64_t ret_addr, uint64_t *loc)
{
	uint64_t start;
	char hex[24], buf[KALLSYMS_NAME_MAX];
	const char *name = kallsyms_name(run->sched->ksyms, ret_addr - 1,
					 buf, sizeof(buf), &start);

	if (!name) {
		snprintf(hex, sizeof(hex), "0x%llx",
			 (unsigned long long)ret_addr);
		name = hex;
	}
	return pseudoloc(run->ps, "[k] ", name, loc);
}

static int place_samples(struct oc_run *run, const struct oc_thread *th,
			 const struct oc_place *pl)
{
	enum wait_class need = run->o->kind == OFFCPU_MUTEX ? WAIT_LOCK :
			       WAIT_SYNC;
	bool wall = run->o->kind == OFFCPU_WALL;
	/* leaf first: kernel frames, the call, the user stack */
	uint64_t locs[OC_MAX_KFRAMES + 1 + MAX_FRAMES + 1];
	uint32_t call = pl->nkpcs, k = call + 1;
	long sysno = -1;
	int ret = 0;

	if (pl->in_call) {	/* a call learnt later names it now */
		sysno = pl->sysno >= 0 ? pl->sysno :
			call_get(&run->sched->calls, pl->pc);
		if (sysno < 0)
			sysno = OC_SYSNO_UNKNOWN;
	}
	if (!pl->npcs)
		ret = pseudoloc(run->ps, "", "[stack lost]", &locs[k++]);
	for (uint32_t i = 0; i < pl->npcs && !ret; i++)
		ret = symbolizer_location(run->sc.sym, pl->pcs[i], &locs[k++]);
	if (!ret && wall && pl->preempts)
		ret = oc_add(run, th, locs + call + 1, k - call - 1, "running",
			     pl->preempts, pl->preempt_ns);
	if (ret || !pl->sleeps ||
	    (!wall && place_class(run, pl, sysno) < need))
		return ret;
	for (uint32_t i = 0; i < pl->nkpcs && !ret; i++)
		ret = kernel_loc(run, pl->kpcs[i], &locs[i]);
	if (!ret)
		ret = oc_syscall_loc(run, sysno, 'S', &locs[call]);
	if (ret)
		return ret;
	if (!locs[call]) {	/* no frame for the call */
		memmove(&locs[call], &locs[call + 1],
			(k - call - 1) * sizeof(*locs));
		k--;
	}
	return oc_add(run, th, locs, k, "sleeping",
		      wall ? pl->sleeps : pl->waits, pl->off_ns);
}

/* The first interval of a thread off the CPU as the window started. */
static int first_samples(struct oc_run *run, const struct oc_thread *th)
{
	enum wait_class need = run->o->kind == OFFCPU_MUTEX ? WAIT_LOCK :
			       WAIT_SYNC;
	bool wall = run->o->kind == OFFCPU_WALL;
	const struct oc_stack *st;
	uint64_t loc;
	int ret;

	if (!th->start_off_ns)
		return 0;
	if (!th->first_off) {	/* it had woken before the look */
		if (!wall)
			return 0;
		ret = pseudoloc(run->ps, "", "[off the CPU as the window "
				"began]", &loc);
		return ret ? ret : oc_add(run, th, &loc, 1, "sleeping", 1,
					  th->start_off_ns);
	}
	st = &th->stacks[th->cur];
	if (!wall && st->class < need)
		return 0;
	return oc_add(run, th, st->locs, st->nlocs, oc_state_label(th->state),
		      wall ? 1 : th->start_waited, th->start_off_ns);
}

int oc_sched_add(struct oc_run *run)
{
	size_t n = octhreads_count(run->threads);
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++) {
		const struct oc_thread *th = octhreads_at(run->threads, i);

		ret = first_samples(run, th);
		for (uint32_t k = 0; k < th->nplaces && !ret; k++)
			ret = place_samples(run, th, &th->places[k]);
	}
	return ret;
}
