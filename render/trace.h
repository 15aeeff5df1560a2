/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * trace.h - a timeline profile (the trace kind: one sample per CPU
 * sample, each with the numeric label ts, its ns after the window's
 * start, and the string labels thread and thread_name) as a Chrome
 * trace-event JSON file, which Perfetto's UI, chrome://tracing and
 * speedscope open.
 *
 * Metadata records first: process_name, then thread_name for each
 * thread. Then one track per thread (pid = the process, tid = the
 * thread), holding its on-CPU stacks as nested slices, "B" and "E"
 * events in time order: a sample stands for the period before its time;
 * consecutive samples of a thread that share their outer frames keep
 * those slices open, so equal stacks merge into one slice; a gap of more
 * than half a period between two samples (the thread was off the CPU)
 * closes every slice. Times in µs from the window's start. Frames are
 * named as the flame graph names them (folded.h).
 *
 * Off-CPU intervals: a sample with the string label state and the
 * numeric label dur (wall's looks as a timeline, offcpu.h) stands for
 * [ts - dur, ts), cut to the time between the thread's on-CPU samples
 * around it. It is an outermost slice of category "off-cpu" on the
 * thread's track, named by its wait (the system call of its "[syscall]
 * NAME" frame; else its state: runnable, sleeping...), args.state and
 * args.stack (the waiting stack, root first, ';'-separated); the same
 * wait at the same stack in consecutive looks is one slice.
 *
 * A whole-host timeline (samples with the labels pid and comm): one
 * process (track group) per pid, named by comm and pid.
 *
 * Ownership: on success *buf is malloc()ed, NUL-terminated and owned by
 * the caller. Errors: -ENOMEM, -EINVAL (not a timeline: no ts labels).
 */
#ifndef PROFFS_TRACE_H
#define PROFFS_TRACE_H

#include <stddef.h>

struct profile;

int trace_render(const struct profile *p, char **buf, size_t *len);

#endif
