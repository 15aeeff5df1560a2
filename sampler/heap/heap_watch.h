/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_watch.h - was the target harmed by the agent just loaded or armed
 * in it? (issue 25: a harmed target is an error, loudly)
 *
 * For HEAP_WATCH_MS after a load the daemon looks, at every round of the
 * agent's consumer thread, for two signs:
 *   - the process died of a signal that says it crashed (SIGSEGV, SIGBUS,
 *     SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP, or any core dump): its
 *     exit status, read from /proc/PID/stat while it is a zombie (its
 *     parent has not reaped it yet). Gone before that: it exited, how is
 *     unknown - said, not counted as harm.
 *   - its threads spin in the agent: of the cpu-clock samples of its
 *     threads (perf, user mode, 100 Hz) since the agent last wrote a
 *     record, at least SPIN_SHARE of no fewer than SPIN_MIN fall in the
 *     agent's code. A hook that goes round in a loop writes nothing; one that
 *     samples every allocation (rate=1) writes all the time. Where perf
 *     is refused (perf_event_paranoid), this sign is not looked for.
 *
 * The owner serializes calls. Errors: negative errno.
 */
#ifndef PROFFS_HEAP_WATCH_H
#define PROFFS_HEAP_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HEAP_WATCH_MS 4000

struct heap_watch;

/* Start watching pid (records: the agent's records written so far; its
 * code is found in /proc/PID/maps). -ESRCH when the process is gone. */
int heap_watch_start(pid_t pid, uint64_t records, struct heap_watch **out);

enum heap_watch_verdict {
	HEAP_WATCH_FINE = 0,	/* nothing seen yet */
	HEAP_WATCH_OVER,	/* the window is over: nothing was seen */
	HEAP_WATCH_EXITED,	/* it exited, not of a crash (why says how) */
	HEAP_WATCH_HARMED,	/* crashed or spinning (why says which) */
};

/* Look once. records: the agent's records written so far. Once it
 * returned anything but FINE, it returns that again. */
enum heap_watch_verdict heap_watch_poll(struct heap_watch *w,
					uint64_t records, char *why,
					size_t len);

/* NULL is a no-op. */
void heap_watch_free(struct heap_watch *w);

/*
 * heap_watch_poll() for its owner, who needs nothing more: once the
 * watch has decided, log it (harmed: an error naming the pid), copy how
 * into harm (when harmed) and free *w. True when it was harmed.
 */
bool heap_watch_check(struct heap_watch **w, uint64_t records, char *harm,
		      size_t len);

/* The rules, apart for the tests: a wait status that says the process
 * crashed; samples that say its threads spin in the agent. */
bool heap_watch_crashed(int status);
bool heap_watch_spinning(unsigned samples, unsigned in_agent,
			 uint64_t records_meanwhile);

/* The agent's code in pid: [lo, hi) of its mappings; -ENOENT if none. */
int heap_watch_agent_span(pid_t pid, uint64_t *lo, uint64_t *hi);

#endif
