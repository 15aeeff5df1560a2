/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * window.h - a sampler's window: its deadline, the session's stop flag,
 * whether the target still lives, and the note a profile carries when the
 * target exited before the window's end. Every sampler that takes a
 * profile over a window (cpu, offcpu, heap, heap=uprobe) asks the window
 * whether to go on, and keeps only what is its own: what it reads, and
 * how long it sleeps between reads.
 *
 * A window is a plain struct on the sampler's stack, used by the one
 * thread that samples; nothing is allocated. The target's liveness is
 * looked at no more often than look_ns (a look at /proc costs), by
 * proc_alive() or by the sampler's own look (offcpu's, which finds new
 * threads on the way).
 */
#ifndef PROFFS_WINDOW_H
#define PROFFS_WINDOW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct profile;

/* Whether the target lives: 0 and *alive, or a negative errno that ends
 * the window with it. */
typedef int (*window_look_fn)(void *arg, bool *alive);

struct window {
	pid_t pid;		/* 0: every process, none to watch */
	uint64_t window_ms;
	const _Atomic bool *stop;	/* NULL: never asked to stop */
	uint64_t look_ns;	/* between looks at the target; 0: each time */
	window_look_fn look;	/* NULL: proc_alive(pid) */
	void *look_arg;
	uint64_t start_ns;	/* CLOCK_MONOTONIC */
	uint64_t end_ns;
	uint64_t looked_ns;	/* the last look */
	bool exited;		/* the target was found gone */
};

/*
 * Start w at start_ns (now_ns(), or when the sampler's records begin):
 * window_ms long, for pid (0: none), ended early by *stop. The first
 * look at the target is look_ns after the start (the sampler has just
 * found it); w->look and w->look_arg may be set after.
 */
void window_begin(struct window *w, uint64_t start_ns, pid_t pid,
		  uint64_t window_ms, const _Atomic bool *stop,
		  uint64_t look_ns);

/*
 * Whether the window goes on at now (now_ns()): 0 and *on, false at its
 * end or when the target is gone (then w->exited); -ECANCELED when stop
 * is set, or the look's error.
 */
int window_on(struct window *w, uint64_t now, bool *on);

/* How long to sleep at most from now: the time left, at most cap_ns. */
uint64_t window_nap_ns(const struct window *w, uint64_t now,
		       uint64_t cap_ns);

/*
 * When the target exited within the window, say so in p: "process PID
 * exited after X s of the Y s window; this profile is partial", elapsed_ns
 * being how much of it was sampled. 0 (also when it did not exit), or
 * -ENOMEM.
 */
int window_note_exit(const struct window *w, struct profile *p,
		     uint64_t elapsed_ns);

/* The same words, for a sampler that keeps its notes elsewhere: into
 * buf (size bytes). */
void window_exit_text(pid_t pid, uint64_t window_ms, uint64_t elapsed_ns,
		      char *buf, size_t size);

#endif
