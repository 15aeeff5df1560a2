// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * safepoint.c - decide, by address, whether a stopped thread may hold
 * something an injected call needs. The rules are in safepoint.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sampler/unwind/dso.h"
#include "sampler/unwind/maps.h"
#include "sampler/heap/safepoint.h"

/*
 * Functions an injected dlopen, the agent's arming or the agent's hooks
 * would wait on, grouped by what they hold. Every alias counts: the
 * ranges come from all symbols with these names. Names glibc keeps in
 * .symtab only (the internals) count when a debug file is installed;
 * without one the neighbour rule below covers them.
 */
static const char *const unsafe_exact[] = {
	/* the heap: arena locks, and a heap halfway through a change */
	"malloc", "free", "cfree", "calloc", "realloc", "reallocarray",
	"posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
	"malloc_usable_size", "malloc_trim", "malloc_stats", "malloc_info",
	"mallinfo", "mallinfo2", "mallopt", "sysmalloc", "systrim",
	"malloc_consolidate", "arena_get2", "arena_get_retry",
	"ptmalloc_init", "malloc_printerr", "munmap_chunk", "mremap_chunk",
	"__posix_memalign",
	/* other allocators' own interfaces (jemalloc, tcmalloc) */
	"mallocx", "rallocx", "xallocx", "sallocx", "dallocx", "sdallocx",
	"nallocx", "mallctl", "mallctlnametomib", "mallctlbymib",
	"malloc_stats_print",
	/* fork: every arena lock and the atfork list lock */
	"fork", "_Fork", "__fork", "__libc_fork",
	"__run_fork_handlers", "__register_atfork", "pthread_atfork",
	/* the loader: dl_load_lock, dl_load_write_lock, the error state */
	"dlopen", "dlmopen", "dlclose", "dlsym", "dlvsym", "dladdr",
	"dladdr1", "dlinfo", "dlerror", "dl_iterate_phdr",
	"__libc_dlopen_mode", "__libc_dlsym", "__libc_dlvsym",
	"__libc_dlclose", "_dl_catch_error", "_dl_catch_exception",
	"_dl_signal_error", "__cxa_finalize", "__cxa_thread_atexit_impl",
	"backtrace",
	/* threads: the stack cache lock, the thread list (join: below) */
	"pthread_create", "pthread_tryjoin_np", "pthread_detach",
	"pthread_exit", "__pthread_exit", "__nptl_deallocate_stack",
	"__nptl_free_stacks", "allocate_stack", "__libc_thread_freeres",
	/* exit: the atexit list lock, then every destructor */
	"exit", "quick_exit", "_exit", "__run_exit_handlers",
	"__call_tls_dtors", "atexit", "__cxa_atexit", "on_exit",
};

/*
 * Functions that spend their life waiting in one system call, holding
 * nothing, but do unsafe work around it: unsafe except in that wait.
 * pthread_join frees the joined thread's stack under the stack cache lock
 * (which a dlopen of the agent's initial-exec TLS takes too) and waits in
 * futex; vfork and posix_spawn wait in the system call that made the
 * child until it execs or exits. Refusing every program whose main
 * thread joins its workers, or that keeps a vfork child, would make the
 * agent useless for most of them.
 */
enum wait_class { WAIT_JOIN, WAIT_SPAWN, WAIT__COUNT };

static const struct {
	const char *name;
	enum wait_class class;
} wait_fns[] = {
	{ "pthread_join", WAIT_JOIN },
	{ "pthread_timedjoin_np", WAIT_JOIN },
	{ "pthread_clockjoin_np", WAIT_JOIN },
	{ "__pthread_clockjoin_ex", WAIT_JOIN },
	{ "vfork", WAIT_SPAWN },
	{ "__vfork", WAIT_SPAWN },
	{ "posix_spawn", WAIT_SPAWN },
	{ "posix_spawnp", WAIT_SPAWN },
};

static bool waiting_in(enum wait_class c, long sysno)
{
	if (c == WAIT_JOIN)
		return sysno == SYS_futex;
	return sysno == SYS_vfork || sysno == SYS_clone ||
	       sysno == SYS_clone3;
}

/*
 * Idle points of allocator libraries, which are unsafe as a whole (their
 * internals have no names). Some allocators keep a thread of their own
 * that spends its life asleep in a condition wait: jemalloc's background
 * thread (opt.background_thread, redis's default "jemalloc-bg-thread
 * yes"). In jemalloc (5.x, src/background_thread.c) pthread_cond_wait
 * and pthread_cond_timedwait are called from one place only,
 * background_thread_cond_wait(), whose caller holds one lock, its own
 * info->mtx, which the wait releases; every other jemalloc path takes
 * that lock by trylock (arena_maybe_do_deferred_work), or is the
 * background-thread control (mallctl, fork) an injected call never
 * makes. So a thread of jemalloc's own (its stack is libc's thread start,
 * jemalloc, then libc's condition wait, nothing else) asleep in futex
 * holds nothing an injected call needs. Known by the symbol only that
 * allocator defines. gperftools' tcmalloc (2.10) and mimalloc (2.x)
 * start no thread and wait on no condition: they have no idle point, and
 * a stack in them stays unsafe.
 */
static const char *const idle_allocators[] = {
	"mallctl",		/* jemalloc */
};

/* In libc: the condition waits an idle allocator thread sleeps in. */
static bool cond_wait_name(void *arg, const char *name)
{
	(void)arg;
	return !strcmp(name, "pthread_cond_wait") ||
	       !strcmp(name, "pthread_cond_timedwait") ||
	       !strcmp(name, "pthread_cond_clockwait") ||
	       !strcmp(name, "__pthread_cond_wait") ||
	       !strcmp(name, "__pthread_cond_timedwait") ||
	       !strcmp(name, "__pthread_cond_clockwait64") ||
	       !strcmp(name, "__pthread_cond_timedwait64");
}

static const char *const unsafe_prefix[] = {
	"__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc",
	"__libc_memalign", "__libc_valloc", "__libc_pvalloc",
	"__libc_mallinfo", "__libc_mallopt", "__malloc_", "_int_", "tcache_",
	/* operator new and delete, every variant: in tcmalloc and jemalloc
	 * they are the allocator */
	"_Znw", "_Zna", "_Zdl", "_Zda",
	"je_", "tc_", "mi_",
};

struct obj_rule {
	struct dso *dso;	/* reference */
	const char *whole;	/* unsafe as a whole: why */
	bool base;		/* libc or the loader: not the program's own */
	bool neighbours;	/* unnamed code beside unsafe code is unsafe */
	bool idle;		/* whole, but has an idle point (above) */
	struct dso_range *unsafe, *named, *waits[WAIT__COUNT], *cond_waits;
	size_t nunsafe, nnamed, nwaits[WAIT__COUNT], ncond_waits;
};

struct safepoint {
	pid_t pid;
	struct proc_maps *maps;
	char exe[PATH_MAX];
	struct obj_rule *rules;
	size_t n, cap;
};

int safepoint_new(pid_t pid, struct proc_maps *maps, struct safepoint **out)
{
	struct safepoint *sp = calloc(1, sizeof(*sp));
	char path[64];
	ssize_t len;

	if (!sp)
		return -ENOMEM;
	sp->pid = pid;
	sp->maps = maps;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	len = readlink(path, sp->exe, sizeof(sp->exe) - 1);
	sp->exe[len > 0 ? len : 0] = '\0';
	*out = sp;
	return 0;
}

static void rule_drop(struct obj_rule *r)
{
	dso_put(r->dso);
	free(r->unsafe);
	free(r->named);
	free(r->cond_waits);
	for (int c = 0; c < WAIT__COUNT; c++)
		free(r->waits[c]);
}

void safepoint_free(struct safepoint *sp)
{
	if (!sp)
		return;
	for (size_t i = 0; i < sp->n; i++)
		rule_drop(&sp->rules[i]);
	free(sp->rules);
	free(sp);
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

static bool is_loader(const char *path)
{
	const char *b = base_name(path);

	return !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-musl", 7) ||
	       !strncmp(b, "ld.so", 5);
}

static bool is_agent(const char *path)
{
	return strstr(path, "proffs-heap") != NULL;
}

static bool unsafe_name(void *arg, const char *name)
{
	(void)arg;
	for (size_t i = 0; i < sizeof(unsafe_exact) / sizeof(*unsafe_exact);
	     i++)
		if (!strcmp(name, unsafe_exact[i]))
			return true;
	for (size_t i = 0;
	     i < sizeof(unsafe_prefix) / sizeof(*unsafe_prefix); i++)
		if (!strncmp(name, unsafe_prefix[i],
			     strlen(unsafe_prefix[i])))
			return true;
	return false;
}

static bool wait_name(void *arg, const char *name)
{
	const enum wait_class *c = arg;

	for (size_t i = 0; i < sizeof(wait_fns) / sizeof(*wait_fns); i++)
		if (wait_fns[i].class == *c && !strcmp(name, wait_fns[i].name))
			return true;
	return false;
}


static bool any_name(void *arg, const char *name)
{
	(void)arg;
	(void)name;
	return true;
}

static bool defines(struct dso *d, const char *name)
{
	uint64_t v;

	return !dso_symbol_vaddr(d, name, &v);
}

static int rule_make(struct safepoint *sp, const struct map_entry *e,
		     struct obj_rule *r)
{
	bool libc, alloc;
	int ret = 0;

	*r = (struct obj_rule){ .dso = dso_get(e->dso) };
	libc = defines(e->dso, "__libc_start_main");
	alloc = defines(e->dso, "malloc") || defines(e->dso, "free");
	r->base = libc;
	if (alloc && !libc && strcmp(e->path, sp->exe)) {
		r->whole = "an allocator library";
		for (size_t i = 0; i < sizeof(idle_allocators) /
				       sizeof(*idle_allocators); i++)
			r->idle |= defines(e->dso, idle_allocators[i]);
		return 0;
	}
	r->neighbours = alloc;
	if (libc)
		ret = dso_symbol_ranges(e->dso, cond_wait_name, NULL,
					&r->cond_waits, &r->ncond_waits);
	if (ret)
		return ret;
	ret = dso_symbol_ranges(e->dso, unsafe_name, NULL, &r->unsafe,
				&r->nunsafe);
	for (enum wait_class c = 0; c < WAIT__COUNT && !ret; c++)
		ret = dso_symbol_ranges(e->dso, wait_name, &c, &r->waits[c],
					&r->nwaits[c]);
	if (!ret && alloc)
		ret = dso_symbol_ranges(e->dso, any_name, NULL, &r->named,
					&r->nnamed);
	return ret;
}

/* The rule of e's object, made on first sight; NULL on failure (then the
 * object is taken as unsafe). */
static struct obj_rule *rule_for(struct safepoint *sp,
				 const struct map_entry *e)
{
	struct obj_rule *r;

	for (size_t i = 0; i < sp->n; i++)
		if (sp->rules[i].dso == e->dso)
			return &sp->rules[i];
	if (sp->n == sp->cap) {
		size_t cap = sp->cap ? 2 * sp->cap : 16;

		r = realloc(sp->rules, cap * sizeof(*r));
		if (!r)
			return NULL;
		sp->rules = r;
		sp->cap = cap;
	}
	r = &sp->rules[sp->n];
	if (rule_make(sp, e, r)) {
		rule_drop(r);
		return NULL;
	}
	sp->n++;
	return r;
}

/*
 * Code no symbol names, in an object that defines the allocator: glibc's
 * _int_malloc, sysmalloc and the rest of malloc.c's static functions
 * (absent from .dynsym) lie between the exported malloc functions. If
 * the named code next to it on either side is unsafe, so is it.
 */
static bool unsafe_neighbour(const struct obj_rule *r, uint64_t v)
{
	ssize_t i;

	if (!r->neighbours || dso_ranges_hold(r->named, r->nnamed, v))
		return false;
	i = dso_range_below(r->named, r->nnamed, v);
	if (i >= 0 &&
	    dso_ranges_hold(r->unsafe, r->nunsafe, r->named[i].start))
		return true;
	return (size_t)(i + 1) < r->nnamed &&
	       dso_ranges_hold(r->unsafe, r->nunsafe, r->named[i + 1].start);
}

static bool unsafe_wait(const struct obj_rule *r, uint64_t v, long sysno)
{
	for (enum wait_class c = 0; c < WAIT__COUNT; c++)
		if (dso_ranges_hold(r->waits[c], r->nwaits[c], v) &&
		    !waiting_in(c, sysno))
			return true;
	return false;
}

static void say(char *why, size_t len, const char *what,
		const struct map_entry *e, uint64_t vaddr)
{
	struct dso_frame f[8];
	int n = 0;

	if (!why)
		return;
	if (!what && e->dso && !dso_symbolize(e->dso, vaddr, f, 8, &n) && n)
		what = f[n - 1].system_name;
	snprintf(why, len, "%s in %s", what ? what : "unnamed code",
		 base_name(e->path));
}

/* Why frame e/v is unsafe, in why; false when it is safe. *own is set
 * when the frame is the program's own (neither libc nor the loader). */
static bool frame_unsafe(struct safepoint *sp, const struct map_entry *e,
			 uint64_t pc, long sysno, const struct dso *idle,
			 bool *own, char *why, size_t why_len)
{
	const struct obj_rule *r;
	uint64_t v = pc - e->bias;

	if (is_loader(e->path) || is_agent(e->path)) {
		say(why, why_len, is_agent(e->path) ? "the heap agent" :
				  "the dynamic loader", e, 0);
		return true;
	}
	if (!e->dso) {
		*own = true;
		return false;
	}
	r = rule_for(sp, e);
	if (r && r->whole && r->dso == idle)
		return false;	/* its idle thread, asleep (idle_thread()) */
	if (!r || r->whole) {
		say(why, why_len, r ? r->whole : "an unreadable object", e, 0);
		return true;
	}
	if (dso_ranges_hold(r->unsafe, r->nunsafe, v) ||
	    unsafe_neighbour(r, v) || unsafe_wait(r, v, sysno)) {
		say(why, why_len, NULL, e, v);
		return true;
	}
	*own |= !r->base;
	return false;
}

/* The rule of the object pc is in, or NULL (with *e NULL if none). */
static const struct obj_rule *rule_at(struct safepoint *sp, uint64_t pc,
				      struct map_entry **e)
{
	*e = maps_find(sp->maps, pc);
	if (!*e && !maps_reload(sp->maps))
		*e = maps_find(sp->maps, pc);
	if (!*e || !(*e)->dso || is_loader((*e)->path) ||
	    is_agent((*e)->path))
		return NULL;
	return rule_for(sp, *e);
}

/*
 * Is this stack an allocator's own idle thread, asleep (see
 * idle_allocators)? Leaf first: libc frames, the innermost inside one of
 * libc's condition waits; then frames of one allocator library that has
 * an idle point; then libc frames only (the thread's start), to the
 * outermost frame. The thread is in futex. Anything else, or a stack not
 * unwound to its end, is not. The allocator's object, or NULL.
 */
static const struct dso *idle_thread(struct safepoint *sp,
				     const uint64_t *pcs, int n,
				     bool complete, long sysno)
{
	/* A rule pointer lasts only to the next rule_at(): the table may
	 * grow. What is needed of one is taken at once. */
	const struct obj_rule *r = NULL;
	const struct dso *alloc;
	bool in_wait = false;
	struct map_entry *e;
	int i = 0;

	if (!complete || sysno != SYS_futex)
		return NULL;
	for (; i < n && (r = rule_at(sp, pcs[i], &e)) && r->base; i++)
		in_wait = dso_ranges_hold(r->cond_waits, r->ncond_waits,
					  pcs[i] - e->bias);
	if (i == 0 || i == n || !in_wait || !r || !r->whole || !r->idle)
		return NULL;
	alloc = r->dso;
	while (i < n && (r = rule_at(sp, pcs[i], &e)) && r->dso == alloc)
		i++;
	if (i == n)
		return NULL;	/* a thread not started by libc */
	for (; i < n; i++) {
		r = rule_at(sp, pcs[i], &e);
		if (!r || !r->base)
			return NULL;
	}
	return alloc;
}

bool safepoint_unsafe(struct safepoint *sp, const uint64_t *pcs, int n,
		      bool complete, long sysno, uint64_t *resume_at,
		      char *why, size_t why_len)
{
	const struct dso *idle = idle_thread(sp, pcs, n, complete, sysno);
	int outermost = -1;
	bool own = false;

	*resume_at = 0;
	for (int i = 0; i < n; i++) {
		struct map_entry *e = maps_find(sp->maps, pcs[i]);

		if (!e && !maps_reload(sp->maps))
			e = maps_find(sp->maps, pcs[i]);
		if (!e)
			own = true;	/* JIT code, or a wild pc */
		else if (frame_unsafe(sp, e, pcs[i], sysno, idle, &own,
				      outermost < 0 ? why : NULL,
				      outermost < 0 ? why_len : 0))
			outermost = i;
	}
	if (outermost >= 0) {
		/* Frames other than the leaf hold return address - 1. */
		if (outermost + 1 < n)
			*resume_at = pcs[outermost + 1] + 1;
		return true;
	}
	if (!own && !complete) {
		snprintf(why, why_len, "a stack that does not unwind out of "
			 "libc");
		return true;
	}
	return false;
}
