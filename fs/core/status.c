// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * status.c - one snapshot of the daemon's counters, written out as
 * /prof/status or as Prometheus metrics: the two never disagree, and a
 * counter added to the snapshot shows in both.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "config.h"
#include "sampler/unwind/dso.h"
#include "sampler/heap/heap.h"
#include "sampler/unwind/kallsyms.h"
#include "sampler/record/record.h"
#include "sampler/log.h"
#include "fs/core/name.h"
#include "fs/core/registry.h"
#include "fs/core/status.h"

void status_refused(struct status_refusals *c, int err)
{
	switch (abs(err)) {
#define STATUS_CASE(e) case e: atomic_fetch_add(&c->e##_n, 1); return;
	STATUS_REFUSALS(STATUS_CASE)
#undef STATUS_CASE
	default:
		atomic_fetch_add(&c->other_n, 1);
	}
}

/* Refusals as (reason, count) rows: the named errnos, then "other". */
struct refusal_row {
	const char *reason;
	unsigned long long n;
};

#define REFUSAL_ROWS (sizeof((const char *[]){ \
	STATUS_REFUSALS(REFUSAL_NAME) }) / sizeof(const char *) + 1)
#define REFUSAL_NAME(e) #e,

static void refusal_rows(const struct status_refusals *c,
			 struct refusal_row rows[REFUSAL_ROWS])
{
	size_t i = 0;

#define REFUSAL_ROW(e) rows[i++] = (struct refusal_row){ #e, \
	atomic_load(&c->e##_n) };
	STATUS_REFUSALS(REFUSAL_ROW)
#undef REFUSAL_ROW
	rows[i] = (struct refusal_row){ "other", atomic_load(&c->other_n) };
}

#define STATUS_RUNNING_MAX 32

struct snapshot {
	struct registry_stats reg;
	struct registry_running running[STATUS_RUNNING_MAX];
	size_t nrunning;
	char warnings[PROFFS_LOG_RECENT][PROFFS_LOG_LINE];
	size_t nwarnings;
	const char *log_where;
	size_t inodes;
	struct heap_agent_counts agents;
	struct refusal_row fuse[REFUSAL_ROWS], http[REFUSAL_ROWS];
	bool has_http;
	uint64_t uptime_s;
	struct dso_cache_stats dsos;
	struct kallsyms_stats ksyms;
	bool has_rec;
	struct record_stats rec;
	unsigned long long cpu_user_us, cpu_system_us, rss_kb;
};

/* The daemon's own CPU time (every thread's, ended ones too) and RSS. */
static void self_cost(struct snapshot *s)
{
	struct rusage ru;
	unsigned long long pages = 0;
	FILE *f;

	if (!getrusage(RUSAGE_SELF, &ru)) {
		s->cpu_user_us = ru.ru_utime.tv_sec * 1000000ull +
				 ru.ru_utime.tv_usec;
		s->cpu_system_us = ru.ru_stime.tv_sec * 1000000ull +
				   ru.ru_stime.tv_usec;
	}
	f = fopen("/proc/self/statm", "re");
	if (f && fscanf(f, "%*u %llu", &pages) == 1)
		s->rss_kb = pages * (unsigned long long)sysconf(_SC_PAGESIZE) /
			    1024;
	if (f)
		fclose(f);
}

static int take(const struct status_src *src, struct snapshot **out)
{
	struct snapshot *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	registry_stats(src->registry, &s->reg);
	s->nrunning = registry_running(src->registry, s->running,
				       STATUS_RUNNING_MAX);
	s->nwarnings = proffs_log_recent(s->warnings, PROFFS_LOG_RECENT);
	s->log_where = src->log_where;
	s->inodes = src->inodes;
	if (src->heap)
		heap_agents_counts(src->heap, &s->agents);
	refusal_rows(src->fuse, s->fuse);
	s->has_http = src->http != NULL;
	if (src->http)
		refusal_rows(src->http, s->http);
	s->uptime_s = src->uptime_s;
	if (src->dsos)
		dso_cache_stats(src->dsos, &s->dsos);
	if (src->ksyms)
		kallsyms_stats(src->ksyms, &s->ksyms);
	s->has_rec = src->rec != NULL;
	if (src->rec)
		record_get_stats(src->rec, &s->rec);
	self_cost(s);
	*out = s;
	return 0;
}

/* The errno's name for a label or a key; "other" for index 0. */
static const char *errno_label(int e)
{
	const char *name = e ? strerrorname_np(e) : NULL;

	return name ? name : "other";
}

static void text_kind(FILE *f, const struct snapshot *s, int k)
{
	const struct registry_kind_stats *ks = &s->reg.kind[k];
	const char *kind = name_kind_str(k);
	unsigned long long cum = 0;

	fprintf(f, "sessions_done_%s: %llu\nerrors_%s: %llu\n"
		"sessions_stopped_%s: %llu\nsamples_%s: %llu\n"
		"lost_samples_%s: %llu\n", kind, ks->done, kind, ks->failed,
		kind, ks->stopped, kind, ks->samples, kind, ks->lost);
	for (int b = 0; b < REGISTRY_LATENCY_BUCKETS; b++) {
		cum += ks->latency[b];
		fprintf(f, "latency_%s_le_%ums: %llu\n", kind,
			registry_latency_bounds_ms[b], cum);
	}
	fprintf(f, "latency_%s_count: %llu\nlatency_%s_sum_ms: %llu\n", kind,
		cum + ks->latency[REGISTRY_LATENCY_BUCKETS], kind,
		ks->latency_sum_ms);
}

/* The "# " lines: what a person wants to know at a glance. */
static void write_people(FILE *f, const struct snapshot *s)
{
	if (s->log_where)
		fprintf(f, "# log: %s\n", s->log_where);
	for (size_t i = 0; i < s->nrunning; i++) {
		const struct registry_running *r = &s->running[i];
		char pid[32];

		if (r->pid)
			snprintf(pid, sizeof(pid), "pid %d", (int)r->pid);
		else
			snprintf(pid, sizeof(pid), "all");
		fprintf(f, "# session %u: %s %s, %d reader%s, %.1f s elapsed",
			r->id, pid, name_kind_str(r->kind), r->readers,
			r->readers == 1 ? "" : "s", r->elapsed_ms / 1000.0);
		if (r->window_ms > r->elapsed_ms)
			fprintf(f, ", %.1f s left", (r->window_ms -
						     r->elapsed_ms) / 1000.0);
		else if (!r->window_ms && (r->kind == PROFFS_KIND_HEAP ||
					   r->kind == PROFFS_KIND_ALLOCS))
			fprintf(f, " (a first heap read waits %d s for "
				"allocations)", PROFFS_DEFAULT_SECONDS);
		fputc('\n', f);
	}
	for (size_t i = 0; i < s->nwarnings; i++)
		fprintf(f, "# %s\n", s->warnings[i]);
}

static void write_text(FILE *f, const struct snapshot *s)
{
	fprintf(f, "version: %s\nuptime_seconds: %llu\n"
		"sessions_running: %u\nsessions_started: %llu\n"
		"sessions_stopped_no_readers: %llu\n"
		"sessions_joined: %llu\ncache_hits: %llu\n"
		"results_served: %llu\nbytes_served: %llu\n",
		PROFFS_VERSION, (unsigned long long)s->uptime_s,
		s->reg.running, s->reg.started, s->reg.stopped, s->reg.joined,
		s->reg.cache_hits, s->reg.served, s->reg.bytes);
	for (int k = 0; k < PROFFS_KIND__COUNT; k++)
		text_kind(f, s, k);
	for (size_t i = 0; i < REFUSAL_ROWS; i++)
		fprintf(f, "refused_%s: %llu\n", s->fuse[i].reason,
			s->fuse[i].n);
	for (size_t i = 0; s->has_http && i < REFUSAL_ROWS; i++)
		fprintf(f, "http_refused_%s: %llu\n", s->http[i].reason,
			s->http[i].n);
	fprintf(f, "agent_loaded: %llu\nagent_armed: %llu\n"
		"agent_harmed: %llu\nagent_throttled: %llu\n",
		s->agents.loaded, s->agents.armed, s->agents.harmed,
		s->agents.throttled);
	fprintf(f, "cpu_user_us: %llu\ncpu_system_us: %llu\nrss_kb: %llu\n"
		"dso_cache_objects: %zu\ndso_cache_max_objects: %zu\n"
		"dso_cache_idle_seconds: %llu\ndso_cache_expired: %llu\n"
		"dso_cache_bytes: %llu\ndso_cache_in_use_bytes: %llu\n"
		"dso_cache_max_bytes: %llu\n"
		"kallsyms_symbols: %zu\nkallsyms_bytes: %zu\n"
		"kallsyms_holders: %u\nkallsyms_idle_seconds: %llu\n"
		"kallsyms_expired: %llu\nkallsyms_bpf: %d\n"
		"debug_kept_bytes: %llu\ndebug_kept_max_bytes: %llu\n",
		s->cpu_user_us, s->cpu_system_us, s->rss_kb, s->dsos.objects,
		s->dsos.max, (unsigned long long)s->dsos.idle_ms / 1000,
		(unsigned long long)s->dsos.expired,
		(unsigned long long)s->dsos.bytes,
		(unsigned long long)s->dsos.in_use,
		(unsigned long long)s->dsos.max_bytes, s->ksyms.symbols,
		s->ksyms.bytes, s->ksyms.holders,
		(unsigned long long)s->ksyms.idle_ms / 1000,
		(unsigned long long)s->ksyms.expired, s->ksyms.bpf,
		(unsigned long long)s->dsos.kept_bytes,
		(unsigned long long)s->dsos.kept_max);
	fprintf(f, "inodes: %zu\n", s->inodes);
	/* the unwinder's rows kept with the objects (dso.h: dso_row_get) */
	fprintf(f, "dso_cache_rows: %llu\ndso_cache_rows_max_per_object: %u\n"
		"dso_cache_row_hits: %llu\ndso_cache_row_misses: %llu\n"
		"dso_cache_rows_refused: %llu\n",
		(unsigned long long)s->dsos.rows, DSO_ROWS_MAX,
		(unsigned long long)s->dsos.row_hits,
		(unsigned long long)s->dsos.row_misses,
		(unsigned long long)s->dsos.rows_full);
	/* what the bounded parts may hold together (README: memory) */
	fprintf(f, "memory_bound_bytes: %llu\n", (unsigned long long)
		(s->dsos.max_bytes + (s->has_rec ? s->rec.mem_max : 0)));
	if (s->has_rec)	/* the flight recorder (record.h) */
		fprintf(f, "record_bytes: %llu\nrecord_max_bytes: %llu\n"
			"record_procs: %u\nrecord_samples: %llu\n"
			"record_dropped_buckets: %llu\n"
			"record_retired_contexts: %llu\n",
			(unsigned long long)s->rec.mem_bytes,
			(unsigned long long)s->rec.mem_max, s->rec.procs,
			(unsigned long long)s->rec.samples,
			(unsigned long long)s->rec.dropped_buckets,
			(unsigned long long)s->rec.retired);
	for (int e = 0; e < HEAP_ERRNO_MAX; e++)
		if (s->agents.failed[e])
			fprintf(f, "agent_failed_%s: %llu\n", errno_label(e),
				s->agents.failed[e]);
	write_people(f, s);
}

/* "# HELP" and "# TYPE" of one metric family. */
static void family(FILE *f, const char *name, const char *type,
		   const char *help)
{
	fprintf(f, "# HELP proffs_%s %s\n# TYPE proffs_%s %s\n", name, help,
		name, type);
}

static void scalar(FILE *f, const char *name, const char *type,
		   const char *help, unsigned long long v)
{
	family(f, name, type, help);
	fprintf(f, "proffs_%s %llu\n", name, v);
}

/* A counter by kind: the field at off of each kind's stats. */
static void by_kind(FILE *f, const char *name, const char *help,
		    const struct snapshot *s, size_t off)
{
	family(f, name, "counter", help);
	for (int k = 0; k < PROFFS_KIND__COUNT; k++)
		fprintf(f, "proffs_%s{kind=\"%s\"} %llu\n", name,
			name_kind_str(k), *(const unsigned long long *)
			((const char *)&s->reg.kind[k] + off));
}

static void metrics_sessions(FILE *f, const struct snapshot *s)
{
	static const char *const results[] = { "done", "failed", "stopped" };

	scalar(f, "sessions_running", "gauge", "Sessions sampling now.",
	       s->reg.running);
	scalar(f, "sessions_started_total", "counter",
	       "Sessions started (joins and cache hits are not sessions).",
	       s->reg.started);
	family(f, "sessions_total", "counter",
	       "Sessions ended, by kind and result (stopped: no reader "
	       "was left).");
	for (int k = 0; k < PROFFS_KIND__COUNT; k++) {
		const struct registry_kind_stats *ks = &s->reg.kind[k];
		const unsigned long long n[] = { ks->done, ks->failed,
						 ks->stopped };

		for (int r = 0; r < 3; r++)
			fprintf(f, "proffs_sessions_total{kind=\"%s\","
				"result=\"%s\"} %llu\n", name_kind_str(k),
				results[r], n[r]);
	}
	scalar(f, "requests_joined_total", "counter",
	       "Requests that joined a running session.", s->reg.joined);
	scalar(f, "requests_cached_total", "counter",
	       "Requests answered by a result finished moments before.",
	       s->reg.cache_hits);
}

static void metrics_samples(FILE *f, const struct snapshot *s)
{
	by_kind(f, "samples_total", "Samples in the profiles of ended "
		"sessions, by kind.", s,
		offsetof(struct registry_kind_stats, samples));
	by_kind(f, "lost_samples_total", "Samples the kernel dropped because "
		"a ring was full, by kind.", s,
		offsetof(struct registry_kind_stats, lost));
	scalar(f, "results_served_total", "counter",
	       "Results handed to a reader (a file read from its start, an "
	       "HTTP response).", s->reg.served);
	scalar(f, "served_bytes_total", "counter",
	       "Bytes of results and pages handed out.", s->reg.bytes);
}

static void metrics_latency(FILE *f, const struct snapshot *s)
{
	family(f, "session_duration_seconds", "histogram",
	       "How long sessions took from start to result, window "
	       "included, by kind.");
	for (int k = 0; k < PROFFS_KIND__COUNT; k++) {
		const struct registry_kind_stats *ks = &s->reg.kind[k];
		const char *kind = name_kind_str(k);
		unsigned long long cum = 0;

		for (int b = 0; b < REGISTRY_LATENCY_BUCKETS; b++) {
			cum += ks->latency[b];
			fprintf(f, "proffs_session_duration_seconds_bucket{"
				"kind=\"%s\",le=\"%g\"} %llu\n", kind,
				registry_latency_bounds_ms[b] / 1000.0, cum);
		}
		cum += ks->latency[REGISTRY_LATENCY_BUCKETS];
		fprintf(f, "proffs_session_duration_seconds_bucket{kind=\"%s\","
			"le=\"+Inf\"} %llu\n"
			"proffs_session_duration_seconds_sum{kind=\"%s\"} %g\n"
			"proffs_session_duration_seconds_count{kind=\"%s\"} "
			"%llu\n", kind, cum, kind, ks->latency_sum_ms / 1000.0,
			kind, cum);
	}
}

static void metrics_refusals(FILE *f, const struct snapshot *s)
{
	family(f, "refusals_total", "counter",
	       "Requests refused, by way in and errno (EKEYREJECTED: an "
	       "HTTP client without a valid token).");
	for (size_t i = 0; i < REFUSAL_ROWS; i++)
		fprintf(f, "proffs_refusals_total{via=\"fuse\",reason=\"%s\"} "
			"%llu\n", s->fuse[i].reason, s->fuse[i].n);
	for (size_t i = 0; s->has_http && i < REFUSAL_ROWS; i++)
		fprintf(f, "proffs_refusals_total{via=\"http\",reason=\"%s\"} "
			"%llu\n", s->http[i].reason, s->http[i].n);
}

static void metrics_agents(FILE *f, const struct snapshot *s)
{
	family(f, "heap_agent_loads_total", "counter",
	       "Heap agents loaded into a process or armed again there, and "
	       "attempts that failed, by errno.");
	fprintf(f, "proffs_heap_agent_loads_total{outcome=\"loaded\"} %llu\n"
		"proffs_heap_agent_loads_total{outcome=\"armed\"} %llu\n",
		s->agents.loaded, s->agents.armed);
	family(f, "heap_agent_harmed_total", "counter",
	       "Processes that crashed, or spun in the heap agent, within "
	       "seconds of a load (issue 25): each an error.");
	fprintf(f, "proffs_heap_agent_harmed_total %llu\n", s->agents.harmed);
	family(f, "heap_agent_throttled_total", "counter",
	       "Times a process's default heap sampling rate was made "
	       "coarser: it would have taken more samples a second than the "
	       "cap.");
	fprintf(f, "proffs_heap_agent_throttled_total %llu\n",
		s->agents.throttled);
	for (int e = 0; e < HEAP_ERRNO_MAX; e++)
		if (s->agents.failed[e])
			fprintf(f, "proffs_heap_agent_loads_total{outcome=\"%s\"}"
				" %llu\n", errno_label(e), s->agents.failed[e]);
}

static void metrics_self(FILE *f, const struct snapshot *s)
{
	family(f, "cpu_seconds_total", "counter",
	       "The daemon's own CPU time, every thread's, by mode.");
	fprintf(f, "proffs_cpu_seconds_total{mode=\"user\"} %.6f\n"
		"proffs_cpu_seconds_total{mode=\"system\"} %.6f\n",
		s->cpu_user_us / 1e6, s->cpu_system_us / 1e6);
	scalar(f, "resident_bytes", "gauge", "The daemon's resident memory.",
	       s->rss_kb * 1024);
	scalar(f, "dso_cache_objects", "gauge", "ELF objects cached (their "
	       "symbols, DWARF and unwind tables).", s->dsos.objects);
	scalar(f, "dso_cache_max_objects", "gauge", "The most the cache keeps "
	       "once unused.", s->dsos.max);
	scalar(f, "dso_cache_idle_seconds", "gauge", "How long an object "
	       "nobody uses stays cached.", s->dsos.idle_ms / 1000);
	scalar(f, "dso_cache_expired_total", "counter", "Objects let go.",
	       s->dsos.expired);
	scalar(f, "dso_cache_bytes", "gauge", "What the cached objects hold "
	       "(tables, libdw's heap, inflated debug files).",
	       s->dsos.bytes);
	scalar(f, "dso_cache_in_use_bytes", "gauge", "Of which objects in use "
	       "by a session or the recorder hold.", s->dsos.in_use);
	scalar(f, "dso_cache_max_bytes", "gauge", "The bound past which idle "
	       "objects go (dso_mem).", s->dsos.max_bytes);
	scalar(f, "dso_cache_rows", "gauge", "CFI rows the unwinder computed, "
	       "kept with the cached objects for later sessions.",
	       s->dsos.rows);
	scalar(f, "dso_cache_row_hits_total", "counter", "Rows a session "
	       "found kept.", s->dsos.row_hits);
	scalar(f, "dso_cache_row_misses_total", "counter", "Rows a session "
	       "computed.", s->dsos.row_misses);
	scalar(f, "kallsyms_bytes", "gauge", "The kernel's symbol table and "
	       "its name index, in memory now (0 until a profile has kernel "
	       "frames, and once let go; 36 KiB when the kernel names its "
	       "functions itself).", s->ksyms.bytes);
	scalar(f, "kallsyms_bpf", "gauge", "1 when the kernel names its "
	       "functions itself, through eBPF, and no table is read.",
	       s->ksyms.bpf);
	scalar(f, "kallsyms_holders", "gauge", "Sessions holding the kernel's "
	       "symbol table.", s->ksyms.holders);
	scalar(f, "kallsyms_idle_seconds", "gauge", "How long the kernel's "
	       "symbol table stays once nobody holds it.",
	       s->ksyms.idle_ms / 1000);
	scalar(f, "kallsyms_expired_total", "counter", "Times the kernel's "
	       "symbol table was let go.", s->ksyms.expired);
	scalar(f, "debug_kept_bytes", "gauge", "Inflated debug files kept "
	       "for later daemons (root's, in /var/cache/proffs).",
	       s->dsos.kept_bytes);
	scalar(f, "debug_kept_max_bytes", "gauge", "The most they may take.",
	       s->dsos.kept_max);
	scalar(f, "inodes", "gauge", "Inodes of the mount the kernel holds "
	       "(a process's directory and files go soon after it ends).",
	       s->inodes);
}

static void write_metrics(FILE *f, const struct snapshot *s)
{
	family(f, "build_info", "gauge", "The daemon's version.");
	fprintf(f, "proffs_build_info{version=\"%s\"} 1\n", PROFFS_VERSION);
	scalar(f, "uptime_seconds", "gauge", "Seconds since the mount.",
	       s->uptime_s);
	metrics_sessions(f, s);
	metrics_samples(f, s);
	metrics_latency(f, s);
	metrics_refusals(f, s);
	metrics_agents(f, s);
	metrics_self(f, s);
}

/* A snapshot of src, written by write into a new buffer. */
static int write_out(const struct status_src *src,
		     void (*write)(FILE *, const struct snapshot *),
		     char **buf, size_t *len)
{
	struct snapshot *s;
	FILE *f;
	int ret;

	ret = take(src, &s);
	if (ret)
		return ret;
	f = open_memstream(buf, len);
	if (!f) {
		free(s);
		return -ENOMEM;
	}
	write(f, s);
	free(s);
	return fclose(f) ? -ENOMEM : 0;
}

int status_text(const struct status_src *src, char **buf, size_t *len)
{
	return write_out(src, write_text, buf, len);
}

int status_metrics(const struct status_src *src, char **buf, size_t *len)
{
	return write_out(src, write_metrics, buf, len);
}
