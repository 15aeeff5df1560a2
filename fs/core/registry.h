/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * registry.h - profiling sessions, shared by identical requests, and their
 * results, kept a short while after they finish (SPEC §2).
 *
 * Opening a profile file joins the running session of the same (pid, kind,
 * window, hz, rate, kernel frames or not), or reuses a result finished
 * less than cache_ms ago, or starts a new session on a thread of its own.
 * A read of a handle whose session is still sampling is parked (no front
 * end's thread waits) and answered when the session finishes; a cancelled
 * wait is answered EINTR at once. When the last handle of an
 * unfinished session is released, the session stops sampling and frees
 * everything.
 *
 * Rendering happens on the session's thread, for every format its readers
 * asked for; a format first asked for after the session ended is rendered
 * on demand.
 *
 * Thread-safe. Handles are owned by the front end's open file (or HTTP
 * request) that opened them and must be released exactly once. Errors are negative errno values.
 */
#ifndef PROFFS_REGISTRY_H
#define PROFFS_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/core/request.h"
#include "sampler/offcpu/offcpu.h"

struct dso_cache;
struct errlog;
struct heap_agents;
struct kallsyms;
struct registry;
struct reg_handle;

struct registry_opts {
	unsigned max_sessions;	/* running at once; more is -EBUSY */
	unsigned cache_ms;	/* how long a finished result stays */
	unsigned max_stacks;	/* distinct stacks per session (memory) */
	struct dso_cache *dsos;	/* borrowed */
	struct turns *turns;	/* borrowed */
	struct heap_agents *heap;	/* borrowed */
	struct kallsyms *ksyms;		/* borrowed */
	struct pybpf_keep *pykeep;	/* borrowed */
	enum offcpu_method offcpu;	/* for wall, block and mutex */
	struct errlog *errors;		/* borrowed, may be NULL: where a
					 * failed session is noted */
	/* The flight recorder (past.h), NULL without -o record: borrowed,
	 * read when a session starts (it is started after the mount). */
	struct recorder *const *rec;
};

int registry_new(const struct registry_opts *o, struct registry **out);

/*
 * Whom a session profiles: process pid, or with pid 0 every process uid
 * may profile (/prof/all), REG_ANY_UID for every process. Sessions of
 * different targets are never shared.
 */
#define REG_ANY_UID ((uid_t)-1)
struct reg_target {
	pid_t pid;
	uid_t uid;	/* with pid 0 only */
	bool kernel;	/* the caller may see kernel frames (access.h) */
};

/* Session latency (start to result) is counted in buckets of these
 * upper bounds, in ms, and one more for anything longer. */
#define REGISTRY_LATENCY_BUCKETS 8
extern const unsigned registry_latency_bounds_ms[REGISTRY_LATENCY_BUCKETS];

struct registry_kind_stats {
	unsigned long long done;	/* sessions that gave a profile */
	unsigned long long failed;	/* ... that failed */
	unsigned long long stopped;	/* ... left by every reader */
	unsigned long long samples;	/* samples their profiles hold */
	unsigned long long lost;	/* samples dropped (rings full) */
	unsigned long long latency[REGISTRY_LATENCY_BUCKETS + 1];
	unsigned long long latency_sum_ms;
};

/* What /prof/status and /metrics show. */
struct registry_stats {
	unsigned running;		/* sessions sampling now */
	unsigned long long started;	/* sessions ever started */
	unsigned long long served;	/* results answered with bytes */
	unsigned long long bytes;	/* bytes of results handed out */
	unsigned long long cache_hits;	/* opens served by a finished result */
	unsigned long long joined;	/* opens that joined a running session */
	unsigned long long stopped;	/* sessions left by every reader */
	struct registry_kind_stats kind[PROFFS_KIND__COUNT];
};

void registry_stats(struct registry *r, struct registry_stats *st);

/* A session in flight, for /prof/status. */
struct registry_running {
	unsigned id;
	pid_t pid;			/* 0: a whole host */
	enum proffs_kind kind;
	uint64_t window_ms;		/* 0: a snapshot (or a first heap
					 * read, whose wait is the agent's) */
	uint64_t elapsed_ms;
	int readers;			/* open handles */
};

/* Up to n sessions still sampling, oldest first: how many. */
size_t registry_running(struct registry *r, struct registry_running *out,
			size_t n);

/* Stop every session, wait for their threads, free. NULL is a no-op. */
void registry_free(struct registry *r);

/*
 * A handle on the result of req for t. -EBUSY (max_sessions running),
 * -ENOMEM; on failure why (whylen bytes, 0 for none) says why in words
 * for the log, e.g. "max_sessions=4 reached: 4 running".
 */
int registry_open(struct registry *r, const struct reg_target *t,
		  const struct proffs_request *req, struct reg_handle **out,
		  char *why, size_t whylen);

void registry_release(struct reg_handle *h);

/*
 * Waits. Every reader of a result - a FUSE read or stat, an HTTP request -
 * waits the same way: registry_wait_new() names what it wants of h's
 * result, the front end arranges its own cancellation (a FUSE interrupt
 * callback), then registry_wait_start() parks the wait until the session
 * is done, or answers it at once. cb is called exactly once, from any
 * thread, possibly before registry_wait_start() returns:
 *   cb(arg, 0, buf, len, total): [buf, buf + len) is the slice asked for
 *     of a result of total bytes (len 0, buf NULL past its end or for a
 *     size); the bytes stay valid until h is released;
 *   cb(arg, -errno, NULL, 0, 0): the session failed, or -EINTR when the
 *     wait was cancelled.
 * A wait is freed with its session, so cancelling it after its answer is
 * harmless. Setting one up fails only with -ENOMEM (then cb is never
 * called).
 */
struct reg_wait;
typedef void (*registry_cb)(void *arg, int err, const uint8_t *buf,
			    size_t len, size_t total);

/* What a wait asks for: size bytes from off (a file read: one that reaches
 * the end marks the result read, and the next open starts a new window);
 * REG_ALL, every byte (an HTTP body); 0, the size alone (a stat). */
#define REG_ALL SIZE_MAX

int registry_wait_new(struct reg_handle *h, uint64_t off, size_t size,
		      registry_cb cb, void *arg, struct reg_wait **out);
void registry_wait_start(struct reg_wait *w);

/* A wait for the whole result, started: new and start in one call, for a
 * front end with nothing to arrange in between. */
int registry_wait(struct reg_handle *h, registry_cb cb, void *arg,
		  struct reg_wait **out);

/*
 * A size wait for req of t on a handle of its own, which the wait releases
 * after its answer: for stat of files whose size a client must know before
 * reading (browsers read exactly st_size bytes of an SVG). Starts a
 * session if none runs; -EBUSY, -ENOMEM etc. when none can start (logged).
 * Not started: the caller calls registry_wait_start().
 */
int registry_wait_size(struct registry *r, const struct reg_target *t,
		       const struct proffs_request *req, registry_cb cb,
		       void *arg, struct reg_wait **out);

/* End the wait as an interrupted read ends: its cb gets -EINTR now (or at
 * its start), unless it was called already (then nothing happens). */
void registry_wait_cancel(struct reg_wait *w);

/* Count len bytes handed out that no registry call counted (a page). */
void registry_count_bytes(struct registry *r, size_t len);

/*
 * The size of a cached, finished result for req, without waiting: 0 and
 * *size, or -ENOENT when none is ready.
 */
int registry_result_size(struct registry *r, const struct reg_target *t,
			 const struct proffs_request *req, size_t *size);

#endif
