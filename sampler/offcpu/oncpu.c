// SPDX-License-Identifier: GPL-2.0-or-later
/* oncpu.c - wall's stacks on the CPU: perf cpu-clock samples, unwound. */
#include <errno.h>
#include <string.h>

#include "sampler/log.h"
#include "sampler/offcpu/octhreads.h"
#include "sampler/offcpu/offcpu_i.h"
#include "sampler/perf/perf.h"
#include "sampler/unwind/symbolize.h"
#include "sampler/unwind/unwind.h"

#define MAX_FRAMES 128
#define RUNTIME_FRAMES 128	/* a stack may gain: Python's frames */

/*
 * Per-cpu events where allowed: events attached to each of the target's
 * threads are switched in and out with them, and a 100-thread target
 * that wakes 10,000 times a second ran 6% slower under them (the cpu
 * kind's way, tests/bench/offcpu.py), against no measurable cost for
 * events on the cpus.
 */
int oc_open_cpu(struct oc_run *run)
{
	/* every task's samples: oc_cpu_sample keeps the target's */
	int ret = perf_open_system(run->o->hz, false, &run->rec);

	run->perf_cpus = !ret;
	if (ret == -EACCES || ret == -EPERM)
		ret = perf_open(run->o->pid, run->o->hz, false, &run->rec);

	if (ret == -EACCES || ret == -EPERM) {
		pr_info("offcpu: pid %d: perf refuses cpu-clock events (%s): "
			"running time shows as [running]", (int)run->o->pid,
			strerror(-ret));
		run->perf_refused = true;
		run->rec = NULL;
		return 0;
	}
	return ret;
}

void oc_cpu_sample(const struct perf_sample *s, void *arg)
{
	struct oc_run *run = arg;
	uint64_t pcs[MAX_FRAMES], locs[MAX_FRAMES + RUNTIME_FRAMES];
	struct oc_thread *th;
	int npcs, n, ret;

	if (run->err || s->pid != (uint32_t)run->o->pid)
		return;
	/* A thread born since the last look at /proc: known from now. */
	th = octhreads_find(run->threads, s->tid);
	if (!th || th->gone)
		return;
	unwind_stack(run->sc.unw, &s->regs, s->stack, s->stack_len, pcs,
		     MAX_FRAMES, &npcs);
	ret = symbolizer_stack(run->sc.sym, s->tid, pcs, npcs, locs,
			       MAX_FRAMES + RUNTIME_FRAMES, &n, NULL);
	if (!ret)
		ret = oc_add(run, th, locs, n, "running", 1, s->period);
	if (ret) {
		run->err = ret;
		return;
	}
	th->on_ns += s->period;
	run->st->cpu_samples++;
}
