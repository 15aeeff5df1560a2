// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * heap_uprobe.c - the uprobe fallback (heap_uprobe.h): the allocator's
 * functions found in the process's objects and probed through three
 * tracefs events (uprobe_group.h), their records read for every thread
 * (uprobe_rec.h) and paired in time order (heap_pair.h) into the
 * caller's heap model, under the breaker (heap_breaker.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "sampler/unwind/dso.h"
#include "sampler/heap/heap_breaker.h"
#include "sampler/heap/heap_model.h"
#include "sampler/heap/heap_pair.h"
#include "sampler/heap/uprobe/heap_uprobe.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/proc.h"
#include "sampler/model/profile.h"
#include "sampler/heap/uprobe/uprobe_group.h"
#include "sampler/heap/uprobe/uprobe_rec.h"
#include "sampler/window.h"

/* perf's default copy: the kernel makes it at every hit of an
 * allocating function; the rest of a deeper stack is read from the
 * process when a sample needs it (heap_model_read_live()). */
#define STACK_BYTES 8192
#define MAX_LOCS 64		/* 9 functions per object defining them */
#define POLL_MS 10		/* breaker checks, when idle */
#define WORK_NS 2000000ull	/* pairing and unwinding between checks */
#define CAP_SYS_ADMIN_BIT 21

/* The three tracefs events: entries of the allocating functions (with a
 * stack copy), entries of free, returns. */
enum kind { K_ALLOC, K_FREE, K_RET, K__COUNT };

static const char *const kind_names[K__COUNT] = { "alloc", "free", "ret" };

/* A probed function in one object of the process. */
struct loc {
	enum heap_fn fn;
	char *seen;		/* the object, as the process maps it */
	uint64_t offset;	/* in the file */
	uint64_t addr;		/* in the process: an entry's rip */
};

struct run {
	const struct heap_uprobe_opts *o;
	pid_t pid;
	struct loc locs[MAX_LOCS];
	unsigned nlocs;
	struct uprobe_group *group;
	uint64_t tp_id[K__COUNT];	/* 0: no such event */
	struct uprobe_rec *rec;
	uint64_t on_ns, off_ns;	/* placing and removing the probes */
	struct heap_pair *pair;
	struct heap_model *m;
	struct heap_uprobe_stats *st;
	uint64_t model_errors;
	struct proc_maps *maps;	/* the model's */
};

/* The process's CPU time: its CPU clock (ns, every thread, the ended
 * ones too), else /proc/PID/stat's utime + stime (clock ticks); 0 when
 * it is gone. */
static uint64_t cpu_ns(pid_t pid)
{
	unsigned long long ut = 0, st = 0;
	char buf[1024], *p;
	uint64_t ns;
	size_t len;

	if (!clock_process_cpu_ns(pid, &ns))
		return ns;
	if (proc_read(pid, "stat", buf, sizeof(buf) - 1, &len))
		return 0;
	buf[len] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%llu %llu", &ut, &st) != 2)
		return 0;
	return (ut + st) * (1000000000ull / sysconf(_SC_CLK_TCK));
}

/* Keep the last reading when the process is gone. */
static void cpu_now(pid_t pid, uint64_t *cpu)
{
	uint64_t c = cpu_ns(pid);

	if (c > *cpu)
		*cpu = c;
}

int heap_uprobe_allowed(void)
{
	struct proc_creds c;

	/* uprobe_events in tracefs: root's, written with CAP_SYS_ADMIN. */
	if (proc_creds(getpid(), &c))
		return -EPERM;
	return c.cap_eff & 1ull << CAP_SYS_ADMIN_BIT ? 0 : -EPERM;
}

/* ---- the probes ---- */

static bool deleted(const char *path)
{
	size_t n = strlen(path), k = strlen(" (deleted)");

	return n > k && !strcmp(path + n - k, " (deleted)");
}

static bool probed(const struct run *r, const char *seen, uint64_t offset)
{
	for (unsigned i = 0; i < r->nlocs; i++)
		if (r->locs[i].offset == offset &&
		    !strcmp(r->locs[i].seen, seen))
			return true;
	return false;
}

/* The path the kernel opens for the object of e: through the process's
 * root (containers), or map_files/ for a file replaced since it was
 * mapped (an upgraded libc), one whose name the definition would split
 * at a space, or one not found through the root (a chroot). */
static void kernel_path(pid_t pid, const struct map_entry *e, char *buf,
			size_t size)
{
	snprintf(buf, size, "/proc/%d/root%s", (int)pid, e->path);
	/* A chroot's maps name files from our root, not its own: there
	 * root+path names nothing, and map_files/ is the way in. */
	if (deleted(e->path) || strpbrk(e->path, " \t\n") ||
	    access(buf, F_OK))
		snprintf(buf, size, "/proc/%d/map_files/%llx-%llx", (int)pid,
			 (unsigned long long)e->start,
			 (unsigned long long)e->end);
}

/* Define the probes of fn at offset of e's file: its entry, and its
 * return unless it is free. */
static int add_loc(struct run *r, enum heap_fn fn, const struct map_entry *e,
		   uint64_t offset)
{
	struct loc *l = &r->locs[r->nlocs];
	char path[PATH_MAX + 64];
	int ret;

	if (r->nlocs == MAX_LOCS)
		return 0;	/* many allocators: the first ones will do */
	kernel_path(r->pid, e, path, sizeof(path));
	ret = uprobe_group_add(r->group, kind_names[fn == HEAP_FN_FREE ?
						    K_FREE : K_ALLOC],
			       false, path, offset);
	if (!ret && fn != HEAP_FN_FREE)
		ret = uprobe_group_add(r->group, kind_names[K_RET], true, path,
				       offset);
	if (ret)
		return ret;
	*l = (struct loc){ .fn = fn, .offset = offset, .seen = strdup(e->path),
			   .addr = e->start + offset - e->pgoff };
	if (!l->seen)
		return -ENOMEM;
	r->nlocs++;
	return 0;
}

/* fn in every object that defines it; aliases (memalign is
 * aligned_alloc in glibc) probed once, under the first name. */
static int find_fn(struct run *r, struct proc_maps *maps, enum heap_fn fn)
{
	for (size_t i = 0; i < maps_count(maps); i++) {
		struct map_entry *e = maps_at(maps, i), *at;
		uint64_t v, off;
		int ret;

		if (!e->exec || e->path[0] != '/' || !e->dso ||
		    strstr(e->path, "proffs-heap") ||
		    dso_symbol_vaddr(e->dso, heap_fn_name(fn), &v))
			continue;
		at = maps_find(maps, v + e->bias);
		if (!at || !at->exec || strcmp(at->path, e->path))
			continue;
		off = v + e->bias - at->start + at->pgoff;
		if (probed(r, at->path, off))
			continue;
		ret = add_loc(r, fn, at, off);
		if (ret)
			return ret;
	}
	return 0;
}

static int define_probes(struct run *r, struct proc_maps *maps)
{
	bool have_malloc = false;
	int ret;

	ret = uprobe_group_new(&r->group);
	for (int fn = 0; fn < HEAP_FN__COUNT && !ret; fn++)
		ret = find_fn(r, maps, fn);
	if (ret == -EPERM)
		pr_notice("heap: pid %d: tracefs refused the uprobe "
			  "definitions: the uprobe fallback needs root: EPERM",
			  (int)r->pid);
	else if (ret && ret != -ENOTSUP)	/* ENOTSUP: logged */
		pr_notice("heap: pid %d: uprobes not defined: %s",
			  (int)r->pid, strerror(-ret));
	if (ret)
		return ret;
	for (unsigned i = 0; i < r->nlocs; i++)
		have_malloc |= r->locs[i].fn == HEAP_FN_MALLOC;
	if (!have_malloc) {
		pr_notice("heap: pid %d: no malloc found in the process's "
			  "objects: nothing to probe", (int)r->pid);
		return -ENOTSUP;
	}
	for (int k = 0; k < K__COUNT && !ret; k++)
		if (uprobe_group_id(r->group, kind_names[k], &r->tp_id[k]))
			r->tp_id[k] = 0;	/* no free, say */
	return 0;
}

/* ---- records into the pairing ---- */

/* The function an entry is at, from its rip. */
static enum heap_fn fn_at(const struct run *r, uint64_t rip)
{
	for (unsigned i = 0; i < r->nlocs; i++)
		if (r->locs[i].addr == rip)
			return r->locs[i].fn;
	return HEAP_FN__COUNT;
}

static void feed(struct run *r, const struct uprobe_rec_sample *s)
{
	enum heap_fn fn;

	if (s->event == K_RET) {
		heap_pair_return(r->pair, s->tid, s->regs.r[UREG_RSP],
				 s->regs.r[UREG_RAX]);
		return;
	}
	fn = s->event == K_FREE ? HEAP_FN_FREE : fn_at(r, s->regs.r[UREG_RIP]);
	if (fn != HEAP_FN__COUNT &&
	    heap_pair_entry(r->pair, s->tid, fn, &s->regs, s->stack,
			    s->stack_len))
		r->model_errors++;
}

/* Hand on the records due (all: every one left), in time order, for
 * about budget_ns; true if some are left. */
static bool process(struct run *r, bool all, uint64_t budget_ns)
{
	struct uprobe_rec_sample s;
	uint64_t t0 = now_ns();

	for (unsigned n = 1; uprobe_rec_peek(r->rec, all, &s); n++) {
		feed(r, &s);
		uprobe_rec_pop(r->rec);
		if (!(n & 15) && now_ns() - t0 > budget_ns)
			return true;
	}
	return false;
}

/* ---- pairs into the model ---- */

static void on_alloc(void *arg, const struct heap_pair_call *c,
		     uint64_t addr, uint64_t size)
{
	struct run *r = arg;
	struct heap_alloc_sample s = {
		.regs = &c->regs, .stack = c->stack,
		.stack_len = c->stack_len, .addr = addr, .size = size,
		.rate = 1, .tracked = addr != 0,
		.drop_leaf = 1,		/* malloc itself, at its entry */
	};

	if (heap_model_alloc(r->m, &s))
		r->model_errors++;
	else
		r->st->samples++;
}

static void on_free(void *arg, uint64_t addr)
{
	struct run *r = arg;

	if (heap_model_free_addr(r->m, addr))
		r->st->frees++;
}

/* posix_memalign's *pp, read from the process after the fact: the
 * caller has it in its variable still, as a rule. */
static int read_ptr(void *arg, uint64_t where, uint64_t *val)
{
	struct run *r = arg;

	return proc_mem_read(r->pid, where, val, sizeof(*val));
}

/*
 * Whether a return address is the uretprobe trampoline's. The kernel
 * maps that page ([uprobes]) at the first hit, after the maps were read,
 * and the process may be gone by the time its records are paired: so
 * anything but code of a mapped file counts as the trampoline. (A real
 * return address outside one - JIT code - only matters after a dropped
 * record, when it meets a pending call at the same stack pointer.)
 */
static bool trampoline(void *arg, uint64_t addr)
{
	struct run *r = arg;
	const struct map_entry *e = maps_find(r->maps, addr);

	return !e || !e->exec || e->path[0] != '/';
}

/* ---- the window ---- */

/* Why the window ends: 0 (its end, the breaker, the exit) or an errno. */
static int watch(struct run *r, struct window *w, uint64_t *cpu)
{
	struct timespec nap = { 0, POLL_MS * 1000000l };
	struct heap_breaker b;
	bool backlog = false, on;
	int ret;

	heap_breaker_init(&b, *cpu, 0);
	for (;;) {
		uint64_t records, lost;

		ret = window_on(w, now_ns(), &on);
		if (ret || !on) {
			r->st->exited = w->exited;
			return ret;
		}
		if (!backlog)
			nanosleep(&nap, NULL);
		uprobe_rec_counts(r->rec, &records, &lost);
		cpu_now(r->pid, cpu);
		if (heap_breaker_update(&b, *cpu, records + lost)) {
			r->st->tripped = true;
			return 0;
		}
		backlog = process(r, false, WORK_NS);
	}
}

static void log_trip(const struct run *r)
{
	const struct heap_uprobe_stats *st = r->st;

	pr_notice("heap: pid %d: uprobe breaker tripped after %.2f s: %llu "
		  "probe hits in %.3f s of its CPU time, ~%.3f s of it in the "
		  "probes (%.0f%% and %.0f ms allowed): probes removed",
		  (int)r->pid, st->elapsed_ns / 1e9,
		  (unsigned long long)st->hits, st->cpu_ns / 1e9,
		  st->hits * HEAP_BREAKER_HIT_NS / 1e9,
		  100 * HEAP_BREAKER_SLOWDOWN, HEAP_BREAKER_BURST_NS / 1e6);
}

static int window(struct run *r)
{
	uint64_t t0 = now_ns(), cpu0 = cpu_ns(r->pid), cpu = cpu0, t_off;
	struct window w;
	int ret;

	window_begin(&w, t0, r->pid, r->o->window_ms, r->o->stop, 0);
	ret = watch(r, &w, &cpu);
	/* The probes leave the process before the backlog is worked off. */
	t_off = now_ns();
	uprobe_rec_stop(r->rec);
	r->off_ns = now_ns() - t_off;
	r->st->elapsed_ns = now_ns() - t0;
	cpu_now(r->pid, &cpu);
	r->st->cpu_ns = cpu - cpu0;
	uprobe_rec_counts(r->rec, &r->st->hits, &r->st->lost);
	r->st->hits += r->st->lost;
	if (r->st->tripped)
		log_trip(r);
	if (!ret)
		process(r, true, UINT64_MAX);
	return ret;
}

static void run_free(struct run *r)
{
	uprobe_rec_free(r->rec);
	uprobe_group_free(r->group);
	for (unsigned i = 0; i < r->nlocs; i++)
		free(r->locs[i].seen);
	heap_pair_free(r->pair);
}

static int setup(struct run *r, struct proc_maps *maps)
{
	static const struct heap_pair_ops ops = {
		.alloc = on_alloc, .free = on_free, .read_ptr = read_ptr,
		.trampoline = trampoline,
	};
	struct uprobe_rec_event ev[K__COUNT] = {
		[K_ALLOC] = { .stack_bytes = STACK_BYTES },
	};
	uint64_t t0 = now_ns();
	int ret;

	ret = define_probes(r, maps);
	if (!ret)
		ret = heap_pair_new(&ops, r, &r->pair);
	for (int k = 0; k < K__COUNT; k++)
		ev[k].tp_id = r->tp_id[k];
	if (!ret)
		ret = uprobe_rec_open(r->pid, ev, K__COUNT, &r->rec);
	r->on_ns = now_ns() - t0;
	if (ret == -EACCES || ret == -EPERM) {
		pr_notice("heap: pid %d: the kernel refused a uprobe perf "
			  "event (%s): the uprobe fallback needs root: EPERM",
			  (int)r->pid, strerrorname_np(-ret));
		return -EPERM;
	}
	if (ret == -EMFILE || ret == -ENFILE)
		pr_warn("heap: pid %d: out of file descriptors for the uprobe "
			"perf events", (int)r->pid);
	else if (ret && ret != -ESRCH && ret != -ENOTSUP)
		pr_notice("heap: pid %d: uprobes not placed: %s", (int)r->pid,
			  strerror(-ret));
	return ret;
}

int heap_uprobe_run(const struct heap_uprobe_opts *o, struct proc_maps *maps,
		    struct heap_model *m, struct heap_uprobe_stats *st)
{
	struct run r = { .o = o, .pid = o->pid, .m = m, .st = st,
			 .maps = maps };
	struct heap_pair_stats ps;
	size_t events = 0, threads = 0;
	uint64_t t_free;
	int ret;

	memset(st, 0, sizeof(*st));
	if (heap_uprobe_allowed()) {
		pr_notice("heap: pid %d: the uprobe fallback needs root "
			  "(CAP_SYS_ADMIN), which this daemon (uid %u) lacks: "
			  "EPERM", (int)o->pid, (unsigned)getuid());
		return -EPERM;
	}
	ret = setup(&r, maps);
	if (!ret) {
		uprobe_rec_size(r.rec, &events, &threads);
		st->probes = r.nlocs;
		st->events = events;
		pr_info("heap: pid %d: uprobes placed on %u functions, %zu "
			"perf events on %zu threads, in %llu ms", (int)o->pid,
			r.nlocs, events, threads,
			(unsigned long long)(r.on_ns / 1000000));
		ret = window(&r);
	}
	if (r.pair) {
		heap_pair_stats(r.pair, &ps);
		st->unpaired = ps.unpaired;
	}
	if (r.model_errors)
		pr_warn("heap: pid %d: out of memory counting %llu uprobe "
			"records", (int)o->pid,
			(unsigned long long)r.model_errors);
	t_free = now_ns();
	run_free(&r);
	if (events)
		pr_info("heap: pid %d: uprobes removed in %llu ms; %llu "
			"records, %llu lost, %llu returns unpaired",
			(int)o->pid,
			(unsigned long long)((r.off_ns + now_ns() - t_free) /
					     1000000),
			(unsigned long long)(st->hits - st->lost),
			(unsigned long long)st->lost,
			(unsigned long long)st->unpaired);
	return ret;
}

/* ---- the profile ---- */

static int add_comments(struct profile *p, const struct heap_uprobe_opts *o,
			const struct heap_uprobe_stats *st)
{
	char text[400];
	int ret;

	snprintf(text, sizeof(text), "proffs: measured by the uprobe fallback "
		 "(%s): every allocator call in the window counted, none "
		 "sampled", o->why ? o->why : "heap=uprobe");
	ret = profile_add_comment(p, text);
	if (!ret && st->lost) {
		snprintf(text, sizeof(text), "proffs: %llu probe records were "
			 "lost (a ring was full): counts are low",
			 (unsigned long long)st->lost);
		ret = profile_add_comment(p, text);
	}
	if (!ret && st->tripped) {
		snprintf(text, sizeof(text), "proffs: the uprobe breaker ended "
			 "the window after %.2f s of %.2f s: %llu probe hits "
			 "(~%.0f us each) in %.3f s of the process's CPU time "
			 "would slow it by more than %.0f%%; this profile is "
			 "partial", st->elapsed_ns / 1e9, o->window_ms / 1e3,
			 (unsigned long long)st->hits,
			 HEAP_BREAKER_HIT_NS / 1e3, st->cpu_ns / 1e9,
			 100 * HEAP_BREAKER_SLOWDOWN);
		ret = profile_add_comment(p, text);
	}
	if (!ret && st->exited) {
		window_exit_text(o->pid, o->window_ms, st->elapsed_ns, text,
				 sizeof(text));
		ret = profile_add_comment(p, text);
	}
	return ret;
}

int heap_uprobe_profile(const struct heap_uprobe_opts *o, struct profile **out,
			struct heap_uprobe_stats *st)
{
	struct heap_profile_info info = { .allocs = o->allocs, .period = 1 };
	struct proc_maps *maps = NULL;
	struct heap_model *m = NULL;
	struct heap_snap *to = NULL;
	int ret;

	memset(st, 0, sizeof(*st));
	ret = maps_load(o->pid, o->cache, &maps);
	if (ret)
		return ret == -ENOENT ? -ESRCH : ret;
	ret = heap_model_new(o->pid, maps, o->max_stacks, &m);
	if (!ret)
		ret = heap_model_read_live(m);
	info.time_nanos = wall_ns();
	if (!ret)
		ret = heap_uprobe_run(o, maps, m, st);
	info.duration_nanos = st->elapsed_ns;
	if (!ret)
		ret = heap_model_snapshot(m, &to);
	if (!ret)
		ret = heap_model_profile(m, NULL, to, &info, out);
	if (!ret) {
		ret = add_comments(*out, o, st);
		if (ret) {
			profile_free(*out);
			*out = NULL;
		}
	}
	heap_snap_free(to);
	heap_model_free(m);
	maps_free(maps);
	return ret;
}
