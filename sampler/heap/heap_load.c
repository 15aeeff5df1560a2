// SPDX-License-Identifier: GPL-2.0-or-later
/* heap_load.c - load or arm the heap agent inside a held process. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sampler/heap/agent/heap_ring.h"
#include "sampler/unwind/dso.h"
#include "sampler/heap/heap_load.h"
#include "sampler/heap/inject.h"
#include "sampler/log.h"
#include "sampler/unwind/maps.h"
#include "sampler/syscalls.h"

/* What the calls need, found in the target's own objects. */
struct target_fns {
	uint64_t memfd_create, dlopen, close, arm;
	uint64_t restorer;	/* rt_sigreturn stub (inject.h) */
};

/* The address of function name in the first mapped object defining it
 * (the one the process itself would call: libc, as a rule); objects
 * whose path contains only_in, if given. */
static int find_fn(struct proc_maps *maps, const char *name,
		   const char *only_in, uint64_t *addr)
{
	for (size_t i = 0; i < maps_count(maps); i++) {
		struct map_entry *e = maps_at(maps, i);
		uint64_t v;

		if (!e->exec || e->path[0] != '/' ||
		    (only_in && !strstr(e->path, only_in)))
			continue;
		if (e->dso && !dso_symbol_vaddr(e->dso, name, &v)) {
			*addr = v + e->bias;
			return 0;
		}
	}
	return -ENOENT;
}

/* The stub calls return through (inject.h), found beside libc's close. */
static void find_restorer(const struct heap_load_opts *o,
			  struct target_fns *f)
{
	uint64_t in_libc;
	int ret = find_fn(o->maps, "close", NULL, &in_libc);

	if (!ret)
		ret = inject_find_restorer(o->pid, o->maps, in_libc,
					   &f->restorer);
	/* A target that exits while a read loads the agent (a test's, at
	 * its end; a user's ^C of the program) is no fault of the stub's:
	 * the load fails on its own a moment later, and says so. */
	if (ret == -ESRCH)
		pr_info("heap: pid %d: exited while the agent was loading",
			(int)o->pid);
	else if (ret)
		pr_warn("heap: pid %d: no rt_sigreturn stub beside close(): "
			"calls into the process return to address 0, and a "
			"daemon killed during one would kill it", (int)o->pid);
}

static int find_fns(const struct heap_load_opts *o, struct target_fns *f)
{
	if (o->arm_only) {
		if (find_fn(o->maps, PH_ARM_SYMBOL, PH_AGENT_NAME, &f->arm)) {
			pr_notice("heap: pid %d: agent mapped but %s not "
				  "found", (int)o->pid, PH_ARM_SYMBOL);
			return -ENOTSUP;
		}
	} else if (find_fn(o->maps, "dlopen", NULL, &f->dlopen) ||
		   find_fn(o->maps, "memfd_create", NULL, &f->memfd_create) ||
		   find_fn(o->maps, "close", NULL, &f->close)) {
		pr_notice("heap: pid %d: no dlopen, memfd_create or close in "
			  "the process (a static binary?): the agent cannot "
			  "be loaded", (int)o->pid);
		return -ENOTSUP;
	}
	find_restorer(o, f);
	return 0;
}

/* Call fn(s, arg2), s a string pushed onto the thread's stack first. */
static int call_str(struct injector *in, uint64_t fn, const char *s,
		    uint64_t arg2, struct inject_seen *seen)
{
	uint64_t args[2] = { 0, arg2 };
	int r;

	r = inject_push(in, s, strlen(s) + 1, &args[0]);
	if (!r)
		r = inject_call(in, fn, args, 2, seen);
	return r;
}

/* The agent's bytes into the target's memfd, from here. */
static int fill_memfd(const struct heap_load_opts *o, int fd)
{
	char path[64];
	size_t off = 0;
	int wfd, ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)o->pid, fd);
	wfd = open(path, O_WRONLY | O_CLOEXEC);
	if (wfd < 0)
		return -errno;
	while (off < o->agent_len) {
		ssize_t n = write(wfd, (const char *)o->agent + off,
				  o->agent_len - off);

		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		off += n;
	}
	close(wfd);
	return ret;
}

/* Is the agent's memfd mapped in pid: did its dlopen succeed? */
static bool agent_mapped(pid_t pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0)
		found = strstr(line, "/memfd:" PH_AGENT_NAME " ") != NULL;
	free(line);
	fclose(f);
	return found;
}

/* dlopen's own message is out of reach (its return value is, see
 * inject.h): the system call of the loader's that failed says why. */
static void log_dlopen_failed(pid_t pid, const struct inject_seen *seen)
{
	char name[32];

	if (seen->failed_sysno < 0) {
		pr_warn("heap: pid %d: dlopen of the agent failed in the "
			"process", (int)pid);
		return;
	}
	syscall_name_fmt(seen->failed_sysno, name, sizeof(name));
	pr_warn("heap: pid %d: dlopen of the agent failed in the process "
		"(its loader's %s: %s)", (int)pid, name,
		strerror(seen->failed_errno));
}

static int load(struct injector *in, const struct heap_load_opts *o,
		const struct target_fns *f)
{
	struct inject_seen seen = { .sysno = SYS_memfd_create };
	uint64_t fd;
	char path[64];
	int ret;

	ret = call_str(in, f->memfd_create, PH_AGENT_NAME, MFD_CLOEXEC,
		       &seen);
	if (ret)
		return ret;
	if (!seen.called || seen.ret < 0) {
		pr_warn("heap: pid %d: memfd_create failed in the process%s%s",
			(int)o->pid, seen.called ? ": " : "",
			seen.called ? strerror((int)-seen.ret) : "");
		return -EIO;
	}
	fd = (uint64_t)seen.ret;
	ret = fill_memfd(o, (int)fd);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)fd);
	seen = (struct inject_seen){ .sysno = -1 };
	if (!ret)
		ret = call_str(in, f->dlopen, path, RTLD_NOW, &seen);
	if (!ret && !agent_mapped(o->pid)) {
		log_dlopen_failed(o->pid, &seen);
		ret = -ENOEXEC;
	}
	/* The mapping keeps the agent; the descriptor can go. */
	inject_call(in, f->close, &fd, 1, NULL);
	return ret;
}

struct run_ctx {
	const struct heap_load_opts *o;
	struct target_fns f;
};

const char *heap_load_why(uint32_t why)
{
	switch (why) {
	case PH_WHY_LEASE: return "its lease ran out";
	case PH_WHY_NO_REAL: return "malloc or free has no definition in "
				    "any loaded object";
	case PH_WHY_LOOP: return "a real allocation function leads back "
				 "into its hooks (issue 25)";
	case PH_WHY_RING: return "its ring is broken";
	case PH_WHY_STUCK: return "its ring stayed full";
	default: return "no reason given";
	}
}

/* Did the agent arm? 0, or why not: -ENOTSUP where it never will. */
static int check_armed(const struct heap_load_opts *o)
{
	uint32_t why = o->why_not(o->arg);

	if (!why)
		return 0;
	pr_warn("heap: pid %d: the agent refused to arm: %s", (int)o->pid,
		heap_load_why(why));
	return why == PH_WHY_NO_REAL || why == PH_WHY_LOOP ? -ENOTSUP : -EIO;
}

static int run(struct injector *in, void *arg)
{
	struct run_ctx *c = arg;
	const struct heap_load_opts *o = c->o;
	int ret;

	if (!o->arm_only) {
		ret = load(in, o, &c->f);
		if (!ret)
			ret = o->setup(o->arg);
		return ret ? ret : check_armed(o);
	}
	ret = o->setup(o->arg);
	if (!ret)
		ret = inject_call(in, c->f.arm, NULL, 0, NULL);
	return ret ? ret : check_armed(o);
}

int heap_load(const struct heap_load_opts *o, struct inject_stats *st)
{
	struct inject_opts io = { .pid = o->pid, .maps = o->maps,
				  .turns = o->turns };
	struct run_ctx c = { .o = o };
	int ret;

	/* Symbols are looked up before any thread is held: it can take a
	 * while the first time a library is met. */
	ret = find_fns(o, &c.f);
	if (ret)
		return ret;
	io.restorer = c.f.restorer;
	return inject_run(&io, run, &c, st);
}
