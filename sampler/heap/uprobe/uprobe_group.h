/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uprobe_group.h - uprobe events defined in tracefs (uprobe_events), for
 * perf events of type PERF_TYPE_TRACEPOINT (the uprobe fallback,
 * heap_uprobe.h).
 *
 * Why not the uprobe PMU (perf_event_open with config1 = path): measured
 * on this kernel, (1) an inherit event of the PMU breaks the target - its
 * pthread_create fails with EFAULT, as the child event re-reads the path
 * pointer in the target's memory - so threads cannot be followed; (2)
 * each PMU event is a uprobe of its own whose close waits for RCU grace
 * periods under a global mutex, ~55 ms each, one after the other: 30
 * events took 1.6 s to close, the probes in place meanwhile, and a
 * per-thread design needs threads x probes of them. A tracefs event is
 * shared by every perf event opened on it: closing them is free but for
 * the last one, inherit works, and one event may hold many probes (any
 * number of functions, one record type), so a window costs three of
 * them.
 *
 * A group is named proffs_<daemon pid>_<n>, unique while the daemon
 * lives; its events are removed by uprobe_group_free() once no perf
 * event uses them. Groups of daemons that died (SIGKILL, a crash) are
 * removed by uprobe_group_sweep() at the next daemon's start, or else
 * when it makes its first group. tracefs is used where it is mounted
 * (/sys/kernel/tracing or /sys/kernel/debug/tracing), else mounted on
 * /sys/kernel/tracing, as perf does.
 *
 * Needs CAP_SYS_ADMIN. Thread-safe (each group used by one thread).
 * Errors: -EPERM (refused), -ENOTSUP (no tracefs, or a kernel that cannot
 * put several probes in one event), -ENOMEM, and the errno the kernel
 * gives a definition (-ENOENT for a path, -EINVAL).
 */
#ifndef PROFFS_UPROBE_GROUP_H
#define PROFFS_UPROBE_GROUP_H

#include <stdbool.h>
#include <stdint.h>

struct uprobe_group;

int uprobe_group_new(struct uprobe_group **out);

/*
 * Remove the events of groups whose daemon is gone, where tracefs is
 * mounted (never mounting it); once per process, failures ignored (not
 * root: there is nothing it may remove anyway).
 */
void uprobe_group_sweep(void);

/*
 * A probe at the file offset of path (as the daemon opens it: e.g.
 * /proc/PID/root/usr/lib/...so) into the group's event called event:
 * at the function's entry, or (ret) at its return. Probes added to one
 * event name share it; entry and return probes need different names.
 */
int uprobe_group_add(struct uprobe_group *g, const char *event, bool ret,
		     const char *path, uint64_t offset);

/* The perf tracepoint id (perf_event_attr.config) of event. */
int uprobe_group_id(struct uprobe_group *g, const char *event,
		    uint64_t *id);

/* Remove the group's events from the kernel - their perf events must be
 * closed - and free. NULL is a no-op. */
void uprobe_group_free(struct uprobe_group *g);

#endif
