// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * daemon.c - the daemon's state and process set-up, whichever front end
 * serves it: options checked, the log chosen, caches, agents and the
 * registry made and freed (daemon.h).
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "fs/core/daemon.h"
#include "fs/core/errors.h"
#include "fs/core/past.h"
#include "fs/core/registry.h"
#include "fs/core/sweep.h"
#include "sampler/heap/heap.h"
#include "sampler/log.h"
#include "sampler/proc.h"
#include "sampler/runtime/python.h"
#include "sampler/unwind/dso.h"
#include "sampler/turns.h"
#include "sampler/unwind/kallsyms.h"

/*
 * The threads that answer requests: as the sampling threads (cpu.h). A
 * reply is a few wakeups and a millisecond of CPU, which a thread at
 * nice 0 beside 200 busy ones gets a slice of every few hundred ms
 * (docs/performance.md, "A last read beside busy threads").
 */
#define DEFAULT_NICE -10

static void syslog_sink(enum proffs_log_level level, const char *fmt,
			va_list ap)
{
	static const int prio[] = {
		[PROFFS_LOG_ERR] = LOG_ERR,
		[PROFFS_LOG_WARNING] = LOG_WARNING,
		[PROFFS_LOG_NOTICE] = LOG_NOTICE,
		[PROFFS_LOG_INFO] = LOG_INFO,
		[PROFFS_LOG_DEBUG] = LOG_DEBUG,
	};

	vsyslog(prio[level], fmt, ap);
}

/* Each sampled thread costs an fd per cpu. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static const struct {
	const char *name;
	enum heap_method method;
} heap_methods[] = {
	{ "auto", HEAP_AUTO }, { "agent", HEAP_AGENT },
	{ "uprobe", HEAP_UPROBE },
};

static const struct {
	const char *name;
	enum offcpu_method method;
} offcpu_methods[] = {
	{ "auto", OFFCPU_AUTO }, { "procfs", OFFCPU_PROCFS },
	{ "sched", OFFCPU_SCHED },
};

static int parse_heap_method(const char *s, enum heap_method *m)
{
	for (size_t i = 0; i < sizeof(heap_methods) / sizeof(heap_methods[0]);
	     i++)
		if (!strcmp(s, heap_methods[i].name)) {
			*m = heap_methods[i].method;
			return 0;
		}
	return -EINVAL;
}

static int parse_offcpu_method(const char *s, enum offcpu_method *m)
{
	for (size_t i = 0;
	     i < sizeof(offcpu_methods) / sizeof(offcpu_methods[0]); i++)
		if (!strcmp(s, offcpu_methods[i].name)) {
			*m = offcpu_methods[i].method;
			return 0;
		}
	return -EINVAL;
}

/*
 * The agent beside a daemon run from its build tree (build/fs/proffs,
 * build/sampler/heap/agent/), else where meson installs it relative to the
 * daemon (an install staged with DESTDIR, or moved), else where meson
 * installs it.
 */
static char *default_agent(void)
{
	static const char *const rels[] = {
		"/../sampler/heap/agent/libproffs-heap.so",
#ifdef PROFFS_AGENT_REL
		PROFFS_AGENT_REL,
#endif
	};
	char exe[4096], path[4096 + 256], *slash;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		for (size_t i = 0; slash && i < sizeof(rels) / sizeof(rels[0]);
		     i++) {
			snprintf(path, sizeof(path), "%s%s", exe, rels[i]);
			if (!access(path, R_OK))
				return strdup(path);
		}
	}
	return strdup(PROFFS_AGENT_PATH);
}

/* -o nice=N: -20 to 19; unset, DEFAULT_NICE. */
static int parse_nice(const char *s, int *nice)
{
	char *end;
	long v;

	if (!s) {
		*nice = DEFAULT_NICE;
		return 0;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < -20 || v > 19)
		return -EINVAL;
	*nice = (int)v;
	return 0;
}

int daemon_check_opts(struct proffs_opts *o, enum heap_method *method)
{
	if (!o->max_window_s || !o->max_hz || !o->max_sessions) {
		fprintf(stderr, "proffs: max_window, max_hz and max_sessions "
				"must be positive\n");
		return -EINVAL;
	}
	if (o->max_name < 4 || o->max_name > 255) {
		fprintf(stderr, "proffs: max_name must be 4 to 255\n");
		return -EINVAL;
	}
	if (parse_heap_method(o->heap_method ? o->heap_method : "auto",
			      method)) {
		fprintf(stderr, "proffs: heap= takes auto, agent or uprobe\n");
		return -EINVAL;
	}
	if (o->http_token && !o->http_addr) {
		fprintf(stderr, "proffs: http_token= needs http=\n");
		return -EINVAL;
	}
	if (parse_offcpu_method(o->offcpu_method ? o->offcpu_method : "auto",
				&o->offcpu)) {
		fprintf(stderr, "proffs: offcpu= takes auto, sched or "
				"procfs\n");
		return -EINVAL;
	}
	if (parse_nice(o->nice_str, &o->nice)) {
		fprintf(stderr, "proffs: nice= takes -20 to 19 (%d)\n",
			DEFAULT_NICE);
		return -EINVAL;
	}
	if (past_opts(o))
		return -EINVAL;	/* said why */
	if (!o->agent)
		o->agent = default_agent();
	return o->agent ? 0 : -ENOMEM;
}

/*
 * Where a daemon in the background logs: syslog where there is one
 * (/dev/log), else a file (/var/log/proffs.log as root, else
 * /tmp/proffs-UID.log), said on stderr before it goes; in the foreground,
 * stderr (the journal under systemd). /prof/status says which.
 */
void daemon_log_choose(struct proffs *fs, int foreground)
{
	if (foreground) {
		snprintf(fs->log_where, sizeof(fs->log_where), "stderr%s",
			 getenv("JOURNAL_STREAM") ? " (the journal: "
			 "journalctl -u proffs)" : "");
		return;
	}
	if (!access("/dev/log", W_OK)) {
		snprintf(fs->log_where, sizeof(fs->log_where), "syslog "
			 "(journalctl -t proffs, or /var/log/syslog)");
		return;
	}
	if (!geteuid())
		snprintf(fs->log_where, sizeof(fs->log_where),
			 "/var/log/proffs.log");
	else
		snprintf(fs->log_where, sizeof(fs->log_where),
			 "/tmp/proffs-%u.log", (unsigned)geteuid());
	fprintf(stderr, "proffs: no syslog (/dev/log): logging to %s\n",
		fs->log_where);
}

void daemon_log_start(struct proffs *fs)
{
	if (!strncmp(fs->log_where, "syslog", 6)) {
		openlog("proffs", LOG_PID, LOG_DAEMON);
		proffs_log_set_sink(syslog_sink);
		return;
	}
	if (!freopen(fs->log_where, "a", stderr))
		snprintf(fs->log_where, sizeof(fs->log_where), "nowhere: "
			 "the log file cannot be written");
	else
		setvbuf(stderr, NULL, _IOLBF, 0);
}

int daemon_init(struct proffs *fs, enum heap_method method)
{
	struct registry_opts ro = {
		.max_sessions = fs->opts.max_sessions,
		.cache_ms = fs->opts.cache_ms,
		.max_stacks = fs->opts.max_stacks,
		.offcpu = fs->opts.offcpu,
	};
	struct heap_agents_opts ho = {
		.agent_path = fs->opts.agent,
		.idle_s = fs->opts.heap_idle_s,
		.max_stacks = fs->opts.max_stacks,
		.method = method,
	};
	int ret;

	ret = errlog_new(&fs->errors);
	if (!ret)
		ret = dso_cache_new(fs->opts.debug_roots, &fs->dsos);
	if (!ret)
		dso_cache_set_bytes(fs->dsos, fs->opts.dso_mem,
				    DSO_CACHE_GRACE_MS);
	if (!ret)
		dso_cache_set_limits(fs->dsos, fs->opts.cache_idle_s * 1000ull,
				     DSO_CACHE_MAX);
	if (!ret)
		ret = kallsyms_new(NULL, &fs->ksyms);
	/* one expiry for what is kept between sessions (performance.md) */
	if (!ret)
		kallsyms_set_idle(fs->ksyms, fs->opts.cache_idle_s * 1000ull);
	/* kernel functions named by the kernel, one at a time, where it lets
	 * this daemon load the programs (root): no table read (ksym_bpf.h) */
	if (!ret)
		kallsyms_set_bpf(fs->ksyms, !getenv("PROFFS_NO_BPF"));
	/* else root's daemons of one boot share the parsed table
	 * (kallsyms_i.h) */
	if (!ret && !geteuid())
		ret = kallsyms_set_cache_dir(fs->ksyms, "/run/proffs");
	/* The inflated forms of compressed debug files (libc6-dbg's: most
	 * of a first read after the kernel's symbols; dso_debugcache.c) are
	 * the same after a reboot, and /run is memory: kept on disk, as
	 * perf keeps ~/.debug, from one installed debug file to the next. */
	if (!ret && !geteuid())
		ret = dso_cache_set_inflate_dir(fs->dsos, "/var/cache/proffs");
	if (!ret)
		ret = turns_new(&fs->turns);
	if (!ret)
		ret = pybpf_keep_new(&fs->pykeep);
	ho.cache = fs->dsos;
	ho.turns = fs->turns;
	if (!ret)
		ret = heap_agents_new(&ho, &fs->heap);
	ro.dsos = fs->dsos;
	ro.heap = fs->heap;
	ro.turns = fs->turns;
	ro.ksyms = fs->ksyms;
	ro.pykeep = fs->pykeep;
	ro.errors = fs->errors;
	ro.rec = &fs->rec;
	if (!ret)
		ret = registry_new(&ro, &fs->registry);
	return ret;
}

void daemon_start_threads(struct proffs *fs)
{
	int ret = sweeper_start(fs->dsos, fs->ksyms, fs->pykeep,
				fs->opts.cache_idle_s, &fs->sweeper);

	if (ret)
		pr_warn("fs: no sweeper: caches expire at look-ups only: %s",
			strerror(-ret));
}

void daemon_free(struct proffs *fs)
{
	/* before the caches it sweeps */
	sweeper_stop(fs->sweeper);
	fs->sweeper = NULL;
	registry_free(fs->registry);
	heap_agents_free(fs->heap);
	turns_free(fs->turns);
	pybpf_keep_free(fs->pykeep);
	kallsyms_free(fs->ksyms);
	dso_cache_free(fs->dsos);
	errlog_free(fs->errors);
	free(fs->opts.debug_roots);
	free(fs->opts.agent);
	free(fs->opts.heap_method);
	free(fs->opts.http_addr);
	free(fs->opts.http_token);
	free(fs->opts.offcpu_method);
	free(fs->opts.record_mem_str);
	free(fs->opts.dso_mem_str);
	free(fs->opts.nice_str);
}

/*
 * A session allocates its profile, its unwind rows and its output afresh
 * and frees them when it ends; glibc would give those pages back to the
 * kernel, and the next session would fault them in again. A page fault
 * costs 15 us in a VM like the one we measure on: a 10 s window of cc1
 * took 1,500-2,300 of them, a tenth of the daemon's CPU. Kept, the next
 * session of a program reuses them. So the daemon stays at the resident
 * size of its largest session; it never grows past it.
 */
static void keep_freed_memory(void)
{
	mallopt(M_MMAP_THRESHOLD, 32 << 20);	/* glibc's maximum */
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	/* One arena: each session runs on a new thread, and glibc gave a
	 * new thread a new arena (up to 8 per CPU) while the last session's
	 * arena, with the memory it kept, went to whichever thread was made
	 * first: a warm cc1 window grew a fresh heap by 5.4 MiB (mprotect,
	 * then a fault per page). One arena is reused by every session, and
	 * bounds what is kept by the largest session, not by one per arena;
	 * the sessions' small blocks come from their per-thread caches. */
	mallopt(M_ARENA_MAX, 1);
}

void daemon_process_setup(void)
{
	keep_freed_memory();
	raise_fd_limit();
}

void daemon_serving_priority(const struct proffs *fs)
{
	int was = 0, ret = proc_thread_set_nice(fs->opts.nice, &was);

	if (ret)
		pr_notice("fs: the threads that answer requests stay at "
			  "nice %d: %s (nice=%d needs CAP_SYS_NICE or "
			  "RLIMIT_NICE)", was, strerror(-ret),
			  fs->opts.nice);
}
