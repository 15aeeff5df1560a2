/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * java.h - a HotSpot JVM as its users see it: the names of its compiled
 * methods and its threads' Java frames, asked of the JVM itself through
 * the attach protocol (jattach.h), as jcmd asks.
 *
 * A process is a JVM when it maps libjvm.so. Names: the JVM writes every
 * piece of code in its code cache to /tmp/perf-<pid>.map on the command
 * Compiler.perfmap (HotSpot 17 and later), which jitmap.h reads; the
 * command is sent again, at most every JAVA_PERFMAP_MS, when a pc in
 * anonymous executable memory has no name (code compiled since); a pc of
 * a compiled method also gets the methods inlined there and lines, from
 * the method's own debug information (javart_compiled(), javascope.h).
 * Threads: the command threaddump (what jcmd Thread.print prints) gives
 * each Java thread's name, state and frames, matched to a native thread
 * by its nid (the thread's id in the JVM's pid namespace).
 *
 * Attaching is the caller's decision (javart_allow_attach()): only for a
 * session a caller opened on this one process after the ptrace check
 * (access.h), never for the recorder or a machine-wide profile. Without
 * it, a perf map the JVM already wrote is still read. What attaching
 * leaves in the JVM: an "Attach Listener" thread, for the life of the
 * JVM, its socket /tmp/.java_pid<pid>, and /tmp/perf-<pid>.map.
 *
 * One per symbolizer (per session and process), not thread-safe; the
 * profile is borrowed. Errors are negative errno values.
 */
#ifndef PROFFS_JAVA_H
#define PROFFS_JAVA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JAVA_PERFMAP_MS 1000
#define JAVA_INLINE_MAX 16	/* frames of one pc of compiled code */

struct javart;
struct proc_maps;
struct profile;

/* 0 with *out NULL when the process is no JVM; -ENOMEM. */
int javart_open(struct proc_maps *maps, struct profile *p,
		struct javart **out);
void javart_free(struct javart *j);

/* For tests: one for pid, whatever it maps. 0 or -ENOMEM. */
int javart_new(pid_t pid, struct profile *p, struct javart **out);

/* The caller may ptrace the process and asked for it: attach. */
void javart_allow_attach(struct javart *j);

/*
 * Have the JVM (re)write its perf map now: 0 when it did (the map is to
 * be read again from its start); -EAGAIN when attaching is not allowed,
 * failed before (once per session: a failure is not retried), or was
 * done less than JAVA_PERFMAP_MS ago; else jattach()'s error. j may be
 * NULL (-EAGAIN). Blocks while the JVM answers (jattach.h's limits).
 */
int javart_perfmap(struct javart *j);

/*
 * The name of the Method of an interpreted frame (pc as javastack.h
 * gives it, or the Method's bare address) into buf: "pkg.Class.method";
 * its source file into file ("" when not known) and, where pc says where
 * in the Method the frame is, its line into *line (0 when not known).
 * -ENOENT (no layout), -EFAULT (no Method there). j may be NULL
 * (-ENOENT).
 */
int javart_method(struct javart *j, uint64_t pc, char *buf, size_t size,
		  char *file, size_t fsize, int *line);

/* A Java frame of compiled code: names and files owned by the javart,
 * until its next javart_compiled(). */
struct javart_frame {
	const char *name;	/* "long pkg.Class.method(int)" */
	const char *file;	/* "Known.java", "" when not known */
	int line;		/* 0 when not known */
};

/*
 * The Java frames of pc in the compiled method whose code is [start,
 * start + size) and whose perf map name is name (javascope.h): the
 * methods inlined there, innermost first, then the compiled method
 * itself (named name), each with its file and line, into f[0..max), *n
 * of them. 0; -ENOENT (j NULL, no layout for it), else what
 * javascope_find() returns: the caller names the code by name alone.
 */
int javart_compiled(struct javart *j, uint64_t pc, uint64_t start,
		    uint64_t size, const char *name, struct javart_frame *f,
		    int max, int *n);

/*
 * Whether name, a line of the JVM's perf map, is a compiled Java
 * method's: HotSpot writes a compiled method as its external name,
 * "RET pkg.Class.method(ARGS)", and other code by its blob's name
 * ("Interpreter", "StubRoutines (1)", "I2C/C2I adapters"), with no
 * dotted name before a parenthesis after a space.
 */
bool javart_compiled_method(const char *name);

/* Whether javart_perfmap() would try now. j may be NULL. */
bool javart_perfmap_due(const struct javart *j);

/*
 * Read the JVM's thread dump now (a goroutine profile is being taken),
 * for javart_frames() to merge. j may be NULL. 0 (a dump that cannot be
 * had is logged, no error) or -ENOMEM.
 */
int javart_dump(struct javart *j);

/*
 * Thread tid's Java frames from the last dump, innermost first, as
 * locations of the profile into locs (at most max, *n of them), and its
 * Java name (owned by j, NULL when tid is no Java thread of the dump).
 * 0 (with *n 0 when there is none) or -ENOMEM.
 */
int javart_frames(struct javart *j, pid_t tid, uint64_t *locs, int max,
		  int *n, const char **name);

#endif
