/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jitmap.h - names of code a JIT compiler made, from the perf map file
 * its runtime writes: /tmp/perf-PID.map, one "START SIZE name" line (hex
 * numbers) per piece of code, appended as code is compiled (node
 * --perf-basic-prof, the JVM's perf-map-agent, LuaJIT, .NET with
 * DOTNET_PerfMapEnabled, python -X perf).
 *
 * The file is the target's: it is opened under the target's root
 * (/proc/PID/root/tmp/..., so a process in a container is found) and by
 * the pid the process has in its own pid namespace (NSpid), which is the
 * number the runtime writes in the name. As perf does, a file is used only
 * if it belongs to the target's user or to root (anyone can create one in
 * /tmp), and it is not followed through a final symbolic link.
 *
 * Lines appended later are read when a lookup misses, at most every
 * JITMAP_RELOAD_MS; of the lines read, a later one wins over an earlier
 * one at the same address (code the runtime freed and reused). At most
 * JITMAP_MAX_BYTES of a file are read.
 *
 * One per session, not thread-safe. Errors are negative errno values.
 */
#ifndef PROFFS_JITMAP_H
#define PROFFS_JITMAP_H

#include <stdint.h>
#include <sys/types.h>

#define JITMAP_RELOAD_MS 100
#define JITMAP_MAX_BYTES (256u << 20)

struct jitmap;

/* A map for pid; nothing is read until the first lookup. 0 or -ENOMEM. */
int jitmap_new(pid_t pid, struct jitmap **out);

/*
 * The name of the code at addr (owned by the map, valid until the next
 * lookup or jitmap_free()). 0; -ENOENT when no line covers addr (or there
 * is no usable file); -ENOMEM.
 */
int jitmap_lookup(struct jitmap *j, uint64_t addr, const char **name);

/* The same, with the code's range [*start, *end). */
int jitmap_lookup_range(struct jitmap *j, uint64_t addr, const char **name,
			uint64_t *start, uint64_t *end);

/*
 * The runtime rewrote its file from the start (a JVM's Compiler.perfmap
 * truncates it): forget what was read, and read it again at the next
 * lookup, without waiting JITMAP_RELOAD_MS. Names given before are void.
 */
void jitmap_reopen(struct jitmap *j);

/* For tests: read the map from path instead (same rules of ownership). */
int jitmap_set_path(struct jitmap *j, const char *path);

/* NULL is a no-op. */
void jitmap_free(struct jitmap *j);

#endif
