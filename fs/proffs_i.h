/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * proffs_i.h - the daemon's state, shared by main.c (which owns it) and the
 * FUSE handlers in ops.c (which get it as the session's userdata).
 */
#ifndef PROFFS_I_H
#define PROFFS_I_H

#include "fuse_lowlevel.h"
#include "status.h"

struct dso_cache;
struct heap_agents;
struct nodes;
struct registry;

struct proffs_opts {
	unsigned max_window_s;		/* longest window a name may ask */
	unsigned max_hz;
	unsigned max_sessions;
	unsigned cache_ms;		/* finished results stay this long */
	unsigned max_stacks;		/* distinct stacks per session */
	unsigned max_name;		/* longest profile file name */
	char *debug_roots;		/* where separate debug files live */
	char *agent;			/* libproffs-heap.so to load */
	char *heap_method;		/* "auto", "agent" or "uprobe" */
	unsigned heap_idle_s;		/* agents stay armed this long */
	int foreground;
	int debug;
};

struct proffs {
	struct proffs_opts opts;
	struct dso_cache *dsos;
	struct kallsyms *ksyms;
	struct heap_agents *heap;
	struct nodes *nodes;
	struct registry *registry;
	uint64_t start_s;		/* CLOCK_MONOTONIC at mount */
	struct status_refusals refused;	/* for /prof/status */
};

extern const struct fuse_lowlevel_ops proffs_ops;

#endif
