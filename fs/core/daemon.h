/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daemon.h - the daemon's state, owned by main() (fs/fuse/main.c) and
 * shared with both front ends: the FUSE handlers (fs/fuse/, which get it
 * as the session's userdata) and the HTTP server (fs/http/). It names no
 * FUSE or HTTP type: the session core below it speaks neither.
 */
#ifndef PROFFS_DAEMON_H
#define PROFFS_DAEMON_H

#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#include "sampler/clock.h"
#include "fs/core/name.h"
#include "sampler/heap/heap.h"
#include "sampler/offcpu/offcpu.h"
#include "fs/core/status.h"

struct dso_cache;
struct errlog;
struct heap_agents;
struct http_server;
struct nodes;
struct recorder;
struct registry;

struct proffs_opts {
	unsigned max_window_s;		/* longest window a name may ask */
	unsigned max_hz;
	unsigned max_sessions;
	unsigned cache_ms;		/* finished results stay this long */
	unsigned max_stacks;		/* distinct stacks per session */
	unsigned max_name;		/* longest profile file name */
	char *debug_roots;		/* where separate debug files live */
	char *agent;			/* libproffs-heap.so to load */
	char *heap_method;		/* "auto", "agent" or "uprobe" */
	unsigned heap_idle_s;		/* agents stay armed this long */
	char *http_addr;		/* -o http=ADDR:PORT, or NULL */
	char *http_token;		/* -o http_token=FILE, or NULL */
	char *offcpu_method;		/* "auto", "procfs" or "sched" */
	enum offcpu_method offcpu;	/* parsed */
	int record;			/* -o record: the flight recorder */
	unsigned record_hz;		/* its rate per CPU */
	unsigned record_s;		/* its span */
	char *record_mem_str;		/* -o record_mem=64M */
	uint64_t record_mem;		/* parsed, bytes */
	char *dso_mem_str;		/* -o dso_mem=64M */
	uint64_t dso_mem;		/* parsed, bytes */
	unsigned cache_idle_s;		/* unused objects and kallsyms go */
	char *nice_str;			/* -o nice=N */
	int nice;			/* parsed: the serving threads' */
	int foreground;
	int debug;
};

struct proffs {
	struct proffs_opts opts;
	struct dso_cache *dsos;
	struct kallsyms *ksyms;
	struct turns *turns;		/* whose turn to ptrace a target */
	struct pybpf_keep *pykeep;	/* Python's eBPF readers, kept */
	struct heap_agents *heap;
	struct nodes *nodes;
	_Atomic size_t inodes;		/* how many nodes holds, for status */
	struct registry *registry;
	uint64_t start_s;		/* CLOCK_MONOTONIC at mount */
	struct status_refusals refused;	/* for /prof/status */
	struct http_server *http;	/* NULL unless -o http= */
	struct status_refusals http_refused;
	struct errlog *errors;		/* errors.txt (errors.h) */
	char log_where[200];		/* where the log goes, for status */
	struct recorder *rec;		/* NULL unless -o record */
	struct sweeper *sweeper;	/* the caches' expiry (sweep.h) */
};

/* What /prof/status and /metrics are made of. */
static inline void proffs_status_src(struct proffs *fs,
				     struct status_src *src)
{
	*src = (struct status_src){
		.registry = fs->registry, .heap = fs->heap,
		.fuse = &fs->refused,
		.http = fs->http ? &fs->http_refused : NULL,
		.dsos = fs->dsos, .ksyms = fs->ksyms, .rec = fs->rec,
		.uptime_s = now_ns() / 1000000000ull - fs->start_s,
		.log_where = fs->log_where,
		.inodes = atomic_load(&fs->inodes),
	};
}

/*
 * Whether the daemon takes req (parse_ret: what name_parse() said of it):
 * 0, or a negative errno and *why in words for the log line (check.c).
 */
int proffs_check_request(const struct proffs *fs,
			 const struct proffs_request *req, int parse_ret,
			 const char **why);

/* Its first half: the name's values and the daemon's limits (max_window,
 * max_hz), without what the kind needs of this host. */
int proffs_check_limits(const struct proffs *fs,
			const struct proffs_request *req, int parse_ret,
			const char **why);

/*
 * The sentence for the user (errors.txt, an HTTP body) when a request for
 * name (req as parsed) was refused with err, why being the log's reason:
 * what is wrong and what to do. Never fails; buf gets len bytes at most.
 */
void proffs_explain(const struct proffs *fs, const char *name,
		    const struct proffs_request *req, int err,
		    const char *why, char *buf, size_t len);

/*
 * The daemon's life, for main(): daemon_process_setup() once (memory kept
 * for reuse, the fd limit raised); daemon_check_opts() fills the parsed
 * fields of o and the heap method, or says on stderr what is wrong and
 * returns -EINVAL; daemon_init() makes the shared state (0 or -ENOMEM),
 * daemon_free() frees whatever of it exists. daemon_log_choose() picks
 * where the log goes (fs->log_where) before the daemon detaches, and
 * daemon_log_start() sends it there after.
 */
void daemon_process_setup(void);
int daemon_check_opts(struct proffs_opts *o, enum heap_method *method);
int daemon_init(struct proffs *fs, enum heap_method method);
void daemon_free(struct proffs *fs);
/* The daemon's own threads, after fuse_daemonize() (which forks): the
 * caches' sweeper. A failure is logged; the daemon runs on without it. */
void daemon_start_threads(struct proffs *fs);
void daemon_log_choose(struct proffs *fs, int foreground);
void daemon_log_start(struct proffs *fs);

/*
 * The calling thread at opts.nice (main() calls it before the threads
 * that answer requests start: FUSE workers, the HTTP acceptor, and
 * through them connections and sessions, inherit it); says in the log
 * when the kernel refuses (no CAP_SYS_NICE or RLIMIT_NICE) and goes on.
 */
void daemon_serving_priority(const struct proffs *fs);

#endif
