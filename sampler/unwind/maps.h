/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * maps.h - a process's address space as the unwinder and symbolizer need
 * it: /proc/PID/maps entries, each file-backed one tied to its dso (loaded
 * lazily from the shared dso cache) and its load bias.
 *
 * Owned by one session, used from one thread. ELF files are opened through
 * /proc/PID/map_files/ (works across mount namespaces, needs privilege)
 * and else /proc/PID/root/<path>, so container processes work; the vDSO,
 * in no file, is read from the process's memory.
 *
 * Errors: negative errno; -ENOENT when the process is gone.
 */
#ifndef PROFFS_MAPS_H
#define PROFFS_MAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct dso;
struct dso_cache;

struct map_entry {
	uint64_t start, end;	/* [start, end) */
	uint64_t pgoff;
	bool exec;
	bool dso_tried;		/* dso load attempted (dso may be NULL) */
	char *path;		/* "" for anonymous, "[vdso]" etc. */
	struct dso *dso;	/* reference, or NULL */
	uint64_t bias;		/* runtime address - ELF vaddr */
};

struct proc_maps;

/* Read /proc/PID/maps. The cache is borrowed and must outlive *out. */
int maps_load(pid_t pid, struct dso_cache *cache, struct proc_maps **out);

/*
 * Re-read /proc/PID/maps (after a miss: dlopen, JIT), keeping the dsos
 * of unchanged entries. At most once per 100 ms; returns -EAGAIN when
 * called sooner, and leaves the map unchanged on any failure.
 */
int maps_reload(struct proc_maps *m);

/*
 * The entry holding addr, its dso loaded on first use (NULL dso when the
 * file cannot be read), or NULL when no mapping holds addr.
 */
struct map_entry *maps_find(struct proc_maps *m, uint64_t addr);

/*
 * Open the object the process maps as seen_path (as /proc/PID/maps
 * writes it, e.g. "/memfd:proffs-heap (deleted)") from open_path when
 * /proc/PID/map_files/ is not allowed (a daemon without
 * CAP_CHECKPOINT_RESTORE). One alias per map; the strings are copied.
 */
int maps_set_alias(struct proc_maps *m, const char *seen_path,
		   const char *open_path);

/* Entries in address order, for a walk: maps_at(m, i) for i below
 * maps_count(m), its dso loaded on first use like maps_find(). */
size_t maps_count(const struct proc_maps *m);
struct map_entry *maps_at(struct proc_maps *m, size_t i);
/* Entry i as it is, its dso not loaded (NULL past the end): for a walk
 * that looks at paths first. */
const struct map_entry *maps_peek(const struct proc_maps *m, size_t i);

/* The entry of the main executable's first executable mapping, or NULL. */
struct map_entry *maps_main(struct proc_maps *m);

pid_t maps_pid(const struct proc_maps *m);

/* Bumped by a reload that found executable mappings added, removed or
 * changed: lets users drop what they cached about code. */
unsigned maps_generation(const struct proc_maps *m);

/* The heap m itself takes (its dsos, shared, not included). */
size_t maps_mem_bytes(const struct proc_maps *m);
void maps_free(struct proc_maps *m);

#endif
