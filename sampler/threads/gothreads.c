// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * gothreads.c - a Go program's goroutines in its thread dump: read from
 * runtime.allgs (gort.h) once the threads were let go, without stopping
 * anything. A goroutine running on a thread (or in a system call on it)
 * is that thread's sample, with the thread's stack; a parked one is a
 * sample of its own, unwound from its saved context over a copy of its
 * stack, kept only if the g did not move while it was copied. The
 * runtime's own goroutines are left out, as Go's dump leaves them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampler/clock.h"
#include "sampler/log.h"
#include "sampler/model/profile.h"
#include "sampler/proc.h"
#include "sampler/runtime/gort.h"
#include "sampler/threads/threads_i.h"
#include "sampler/unwind/symbolize.h"

#define MAX_GOROUTINES 10000	/* shown in one dump (~11 MB of stacks) */
#define NOT_HERE "[running on another thread: stack unavailable]"

static int thread_of(const struct dump *d, pid_t tid)
{
	for (size_t i = 0; i < d->n; i++)
		if (tid && d->t[i].tid == tid)
			return (int)i;
	return -1;
}

/* A parked goroutine's stack, from g.sched, over a copy of the stack
 * from sp up to its top (at most STACK_MAX). false: it moved. */
static bool unwind_parked(struct dump *d, struct gorec *r)
{
	struct unwind_regs regs = { { 0 } };
	uint64_t len = r->g.stack_hi - r->g.sp;
	size_t got;

	if (len > STACK_MAX)
		len = STACK_MAX;
	got = proc_mem_copy(d->pid, r->g.sp, d->stack, len);
	if (!got)
		return false;
	regs.r[UREG_RIP] = r->g.pc;
	regs.r[UREG_RSP] = r->g.sp;
	regs.r[UREG_RBP] = r->g.bp;
	unwind_stack(d->sc.unw, &regs, d->stack, got, r->pcs, MAX_FRAMES,
		     &r->npcs);
	return gort_unchanged(d->pid, &r->g);
}

/* Leave out of pcs the frames Go's traceback hides (gort_wrapper()). */
static void elide_wrappers(struct dump *d, const struct gort_g *g,
			   uint64_t *pcs, int *n)
{
	int k = 0;

	for (int i = 0; i < *n; i++)
		if (!i || !gort_wrapper(g, d->sc.maps, pcs[i]))
			pcs[k++] = pcs[i];
	*n = k;
}

/* Goroutine r's pprof labels into r->labels (NULL: none); those that
 * cannot be read consistently are counted and left out. */
static void read_labels(struct dump *d, struct gorec *r)
{
	int ret = gort_labels(d->pid, &r->g, &r->labels);

	if (ret && ret != -ENOENT) {
		d->gst.labels_bad++;
		pr_debug("gothreads: %d: goroutine %" PRId64 "'s labels not "
			 "read: %s", (int)d->pid, r->g.goid, strerror(-ret));
	}
}

int gothreads_read(struct dump *d)
{
	struct gort_g *gs;
	size_t n;
	int ret;

	ret = gort_read(d->pid, d->sc.maps, MAX_GOROUTINES, &d->gctx, &gs,
			&n, &d->gst);
	if (ret) {
		d->gret = ret;
		return ret == -ENOMEM ? ret : 0;
	}
	d->gor = calloc(n ? n : 1, sizeof(*d->gor));
	if (!d->gor) {
		free(gs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct gorec *r = &d->gor[d->ngor];

		if (gs[i].system) {
			d->ghidden++;
			continue;
		}
		r->g = gs[i];
		r->thread = -1;
		read_labels(d, r);
		if (gs[i].status == GORT_RUNNING ||
		    gs[i].status == GORT_SYSCALL) {
			r->thread = thread_of(d, gs[i].tid);
			if (r->thread >= 0 && d->t[r->thread].gor < 0) {
				struct thread_rec *t = &d->t[r->thread];

				t->gor = (int)d->ngor;
				elide_wrappers(d, &r->g, t->pcs, &t->npcs);
			} else {
				r->thread = -1;
			}
		} else if (!unwind_parked(d, r)) {
			d->gst.dropped++;
			golabels_free(r->labels);
			r->labels = NULL;
			continue;
		} else {
			elide_wrappers(d, &r->g, r->pcs, &r->npcs);
		}
		d->ngor++;
	}
	free(gs);
	return 0;
}

/* Label values of goroutine r: its id and minutes waited, into the
 * caller's buffers. */
static void go_values(const struct gorec *r, char id[24], char mins[24])
{
	int64_t m = gort_wait_minutes(&r->g, clock_ns(CLOCK_MONOTONIC));

	snprintf(id, 24, "%" PRId64, r->g.goid);
	mins[0] = '\0';
	if (m >= 1)
		snprintf(mins, 24, "%" PRId64, m);
}

static int add_label(struct profile *p, int64_t key, const char *val,
		     struct pf_label *labels, int *n)
{
	labels[*n] = (struct pf_label){ .key = key,
					.str = profile_intern(p, val) };
	return labels[(*n)++].str < 0 ? -ENOMEM : 0;
}

int gothreads_labels(const struct dump *d, int gi, struct profile *p,
		     const int64_t *keys, struct pf_label *labels, int *n,
		     const char **state)
{
	const struct gorec *r;
	const char *func, *file;
	char id[24], mins[24], at[512];
	int line, ret;

	if (gi < 0 || (size_t)gi >= d->ngor)
		return 0;
	r = &d->gor[gi];
	go_values(r, id, mins);
	*state = gort_status(&r->g);
	ret = add_label(p, keys[GK_GOROUTINE], id, labels, n);
	for (size_t i = 0; !ret && r->labels && i < r->labels->n; i++) {
		int64_t key = profile_intern(p, r->labels->kv[i].key);

		ret = key < 0 ? -ENOMEM : add_label(p, key,
						    r->labels->kv[i].value,
						    labels, n);
	}
	if (!ret && mins[0])
		ret = add_label(p, keys[GK_WAIT], mins, labels, n);
	if (!ret && r->g.locked)
		ret = add_label(p, keys[GK_LOCKED], "true", labels, n);
	if (ret || gort_created_by(&r->g, d->sc.maps, &func, &file, &line))
		return ret;
	snprintf(at, sizeof(at), "%s:%d", file, line);
	ret = add_label(p, keys[GK_CREATED_BY], func, labels, n);
	return ret ? ret : add_label(p, keys[GK_CREATED_AT], at, labels, n);
}

static int add_parked(struct dump *d, struct profile *p, const int64_t *keys,
		      int gi)
{
	uint64_t locs[MAX_FRAMES + RUNTIME_FRAMES];
	struct gorec *r = &d->gor[gi];
	struct pf_label labels[GK_LABELS_MAX];
	struct pf_line line = { 0 };
	const char *state = NULL;
	int64_t one = 1;
	int ret, n = 0, nl = 0;

	if (r->npcs) {
		ret = symbolizer_stack(d->sc.sym, 0, r->pcs, r->npcs, locs,
				       MAX_FRAMES + RUNTIME_FRAMES, &n, NULL);
		if (ret)
			return ret;
	}
	if (!n) {	/* running, on a thread the dump did not see */
		ret = profile_add_function(p, NOT_HERE, NULL, NULL, 0,
					   &line.function_id);
		if (!ret)
			ret = profile_add_location(p, 0, 0, &line, 1, &locs[0]);
		if (ret)
			return ret;
		n = 1;
	}
	ret = gothreads_labels(d, gi, p, keys, labels, &nl, &state);
	if (ret)
		return ret;
	labels[nl] = (struct pf_label){ .key = keys[GK_STATE],
					.str = profile_intern(p, state) };
	if (labels[nl++].str < 0)
		return -ENOMEM;
	return profile_add_sample(p, locs, n, labels, nl, &one);
}

int gothreads_add(struct dump *d, struct profile *p, const int64_t *keys)
{
	int ret = 0;

	for (size_t i = 0; i < d->ngor && !ret; i++)
		if (d->gor[i].thread < 0)
			ret = add_parked(d, p, keys, (int)i);
	return ret;
}

int gothreads_comment(struct dump *d, struct profile *p)
{
	char text[512], more[128] = "";
	const char *how = "";

	size_t k = 0;

	if (d->gst.unread)
		k = (size_t)snprintf(more, sizeof(more), "; %u past the first "
				     "%u not read", d->gst.unread,
				     MAX_GOROUTINES);
	if (d->gst.labels_bad && k < sizeof(more))
		snprintf(more + k, sizeof(more) - k, "; the pprof labels of %u "
			 "not read (changed while read)", d->gst.labels_bad);
	/* whether .bss was searched (once per program: gort.h) */
	if (d->gst.searched)
		how = "; .bss searched for runtime.allgs";
	else if (d->gst.remembered)
		how = "; runtime.allgs where an earlier read found it";
	if (d->gret == -ENOENT && !d->gst.version[0])
		return 0;	/* not a Go program */
	if (d->gret == -EPROTONOSUPPORT)
		snprintf(text, sizeof(text), "goroutines: not read: %s's "
			 "runtime.g layout is not known to proffs; threads "
			 "only", d->gst.version);
	else if (d->gret)
		snprintf(text, sizeof(text), "goroutines: not read (%s): "
			 "runtime.allgs not found%s; threads only",
			 d->gst.version, d->gst.stripped ?
			 " in a stripped program's .bss" : "");
	else
		snprintf(text, sizeof(text), "goroutines: %zu of %s read "
			 "from runtime.allgs%s%s without stopping the world; "
			 "%u runtime goroutines not shown; %u dropped "
			 "(changed while read)%s%s", d->ngor, d->gst.version,
			 d->gst.stripped ? " (found in .bss: stripped)" : "",
			 d->gst.dwarf ? " (layout from DWARF)" : "",
			 d->ghidden, d->gst.dropped, more, how);
	return profile_add_comment(p, text);
}

void gothreads_free(struct dump *d)
{
	for (size_t i = 0; d->gor && i < d->ngor; i++)
		golabels_free(d->gor[i].labels);
	free(d->gor);
	gort_free(d->gctx);
	d->gor = NULL;
	d->gctx = NULL;
}
