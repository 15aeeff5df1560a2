/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * symbolize.h - program counters of one process into the locations,
 * functions and mappings of a profile.
 *
 * Each distinct pc is symbolized once per session (a pc -> location id
 * table), while the process is alive and its files are open; the costly
 * part, dso_symbolize(), is cached inside the shared dsos across sessions.
 * Mappings are added to the profile as their first pc is met, the main
 * executable's first so pprof sees it as the main binary.
 *
 * Owned by one session; the profile and maps are borrowed. Errors are
 * negative errno values (-ENOMEM); an unknown pc is not an error: it gets
 * a location named after its object and offset.
 */
#ifndef PROFFS_SYMBOLIZE_H
#define PROFFS_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct profile;
struct proc_maps;
struct symbolizer;

int symbolizer_new(struct profile *p, struct proc_maps *maps,
		   struct symbolizer **out);
/* The heap s takes: its tables of pcs and mappings (a runtime's state,
 * JIT maps or CPython's, not included). */
size_t symbolizer_mem_bytes(const struct symbolizer *s);
void symbolizer_free(struct symbolizer *s);

/* The location id for pc, created on first sight. */
int symbolizer_location(struct symbolizer *s, uint64_t pc, uint64_t *loc_id);

/*
 * The locations of thread tid's stack pcs[0..n) (leaf first) into locs,
 * at most max of them, *nlocs set: a location per pc, except that in a
 * CPython process each frame of the evaluation loop becomes the Python
 * frames it runs (python.h), read now from the process - so call it as
 * soon after the stack was taken as can be. *gil (may be NULL) is then
 * "held" or "not held" (the thread and the interpreter lock), else
 * NULL. 0 or -ENOMEM.
 */
int symbolizer_stack(struct symbolizer *s, pid_t tid, const uint64_t *pcs,
		     int n, uint64_t *locs, int max, int *nlocs,
		     const char **gil);

/*
 * Thread tid is stopped now (a thread dump) and its stack was taken:
 * read the runtime's frames of it at once, for symbolizer_stack() of tid
 * to use later, after the thread was let go. 0 or -ENOMEM.
 */
int symbolizer_hold(struct symbolizer *s, pid_t tid);

/*
 * A thread dump is being taken (the threads were just read): ask the
 * runtime for its own view of its threads, a JVM's thread dump (java.h),
 * which symbolizer_stack() then merges: a Java thread's native frames up
 * to the first in JIT or interpreter code, then its Java frames. 0 (no
 * dump is no error) or -ENOMEM.
 */
int symbolizer_dump(struct symbolizer *s);

/* The runtime's name of thread tid, or NULL: a Java thread's from the
 * last symbolizer_dump(), a Python thread's as threading named it (read
 * from the process when not known yet, python.h). Owned by the
 * symbolizer, valid until the next symbolizer_dump() or call. */
const char *symbolizer_thread_name(struct symbolizer *s, pid_t tid);

/* The caller asked for this one process and may ptrace it: a runtime may
 * be attached to, to ask for its names (a JVM: java.h). */
void symbolizer_allow_attach(struct symbolizer *s);

/* Profile comments on runtime frames that could not be read (an
 * unknown Python version, stacks left native). 0 or -ENOMEM. */
int symbolizer_note(struct symbolizer *s);

/* Whether the process runs a runtime whose frames symbolizer_stack()
 * reads from it (so its samples want handling soon after they are
 * taken). */
bool symbolizer_runtime(const struct symbolizer *s);

/* The process's CPython reader (python.h), or NULL when it runs none. */
struct pyrt;
struct pyrt *symbolizer_python(struct symbolizer *s);

#endif
