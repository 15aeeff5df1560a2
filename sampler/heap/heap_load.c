// SPDX-License-Identifier: GPL-2.0-or-later
/* heap_load.c - load or arm the heap agent inside a held process. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/heap_ring.h"
#include "dso.h"
#include "heap_load.h"
#include "inject.h"
#include "log.h"
#include "maps.h"

/* What the calls need, found in the target's own objects. */
struct target_fns {
	uint64_t memfd_create, dlopen, dlerror, close, arm;
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

static int find_fns(const struct heap_load_opts *o, struct target_fns *f)
{
	if (o->arm_only) {
		if (find_fn(o->maps, PH_ARM_SYMBOL, PH_AGENT_NAME, &f->arm)) {
			pr_notice("heap: pid %d: agent mapped but %s not "
				  "found", (int)o->pid, PH_ARM_SYMBOL);
			return -ENOTSUP;
		}
		return 0;
	}
	if (find_fn(o->maps, "dlopen", NULL, &f->dlopen) ||
	    find_fn(o->maps, "dlerror", NULL, &f->dlerror) ||
	    find_fn(o->maps, "memfd_create", NULL, &f->memfd_create) ||
	    find_fn(o->maps, "close", NULL, &f->close)) {
		pr_notice("heap: pid %d: no dlopen, memfd_create or close in "
			  "the process (a static binary?): the agent cannot "
			  "be loaded", (int)o->pid);
		return -ENOTSUP;
	}
	return 0;
}

/* Call fn(args) and return its result in *ret, a string in *s for
 * string arguments pushed first. */
static int call_str(struct injector *in, uint64_t fn, const char *s,
		    uint64_t arg2, uint64_t *ret)
{
	uint64_t args[2] = { 0, arg2 };
	int r;

	r = inject_push(in, s, strlen(s) + 1, &args[0]);
	if (!r)
		r = inject_call(in, fn, args, 2, ret);
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

static void log_dlerror(struct injector *in, const struct target_fns *f,
			pid_t pid)
{
	char msg[256] = "";
	uint64_t s = 0;

	if (!inject_call(in, f->dlerror, NULL, 0, &s) && s &&
	    !inject_read(in, s, msg, sizeof(msg) - 1))
		msg[sizeof(msg) - 1] = '\0';
	pr_warn("heap: pid %d: dlopen of the agent failed: %s", (int)pid,
		msg[0] ? msg : "(no message)");
}

static int load(struct injector *in, const struct heap_load_opts *o,
		const struct target_fns *f)
{
	uint64_t fd = 0, handle = 0, ignored;
	char path[64];
	int ret;

	ret = call_str(in, f->memfd_create, PH_AGENT_NAME, MFD_CLOEXEC, &fd);
	if (ret)
		return ret;
	if ((int)fd < 0) {
		pr_warn("heap: pid %d: memfd_create failed in the process",
			(int)o->pid);
		return -EIO;
	}
	ret = fill_memfd(o, (int)fd);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)fd);
	if (!ret)
		ret = call_str(in, f->dlopen, path, RTLD_NOW, &handle);
	if (!ret && !handle) {
		log_dlerror(in, f, o->pid);
		ret = -ENOEXEC;
	}
	/* The mapping keeps the agent; the descriptor can go. */
	inject_call(in, f->close, &fd, 1, &ignored);
	return ret;
}

struct run_ctx {
	const struct heap_load_opts *o;
	struct target_fns f;
};

static int run(struct injector *in, void *arg)
{
	struct run_ctx *c = arg;
	const struct heap_load_opts *o = c->o;
	uint64_t armed = 0;
	int ret;

	if (!o->arm_only) {
		ret = load(in, o, &c->f);
		return ret ? ret : o->setup(o->arg);
	}
	ret = o->setup(o->arg);
	if (!ret)
		ret = inject_call(in, c->f.arm, NULL, 0, &armed);
	if (!ret && (int)armed < 0) {
		pr_warn("heap: pid %d: the agent refused to arm", (int)o->pid);
		ret = -EIO;
	}
	return ret;
}

int heap_load(const struct heap_load_opts *o, struct inject_stats *st)
{
	struct inject_opts io = { .pid = o->pid, .maps = o->maps };
	struct run_ctx c = { .o = o };
	int ret;

	/* Symbols are looked up before any thread is held: it can take a
	 * while the first time a library is met. */
	ret = find_fns(o, &c.f);
	if (ret)
		return ret;
	return inject_run(&io, run, &c, st);
}
