/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stackctx.h - what turns one process's raw stacks into a profile's
 * frames: its maps, an unwinder over them, and a symbolizer into the
 * profile. The one constructor of that chain for every sampler (cpu,
 * offcpu, threads, the heap model), so that each builds it in the same
 * order and frees it the same way.
 *
 * A struct stack_ctx is the caller's (embedded, on the stack); what it
 * points to is its own, but for maps given to stackctx_open_maps(), which
 * stay the caller's. The dso cache and the profile are borrowed and must
 * outlive it. Errors are negative errno values; a failed open leaves the
 * context closed (all NULL), and stackctx_close() of a closed or zeroed
 * context is a no-op.
 */
#ifndef PROFFS_STACKCTX_H
#define PROFFS_STACKCTX_H

#include <stdbool.h>
#include <sys/types.h>

struct dso_cache;
struct profile;
struct proc_maps;
struct symbolizer;
struct unwinder;

struct stack_ctx {
	struct proc_maps *maps;
	struct unwinder *unw;
	struct symbolizer *sym;	/* NULL when opened without a profile */
	bool own_maps;
};

/* Also read the process's stack past the samples' copies: for samplers
 * whose copies the kernel cuts (unwinder_read_live()). */
#define STACKCTX_LIVE 1u
/* A caller asked for this one process and may ptrace it (access.h): a
 * runtime may be attached to (symbolizer_allow_attach()). */
#define STACKCTX_ATTACH 2u

/*
 * Read pid's maps (through cache), then make the unwinder and, when p is
 * not NULL, the symbolizer into p. -ENOENT or -ESRCH when the process is
 * gone, -EACCES, -ENOMEM.
 */
int stackctx_open(struct stack_ctx *c, pid_t pid, struct dso_cache *cache,
		  struct profile *p, unsigned flags);

/* The same over maps the caller has read and keeps. */
int stackctx_open_maps(struct stack_ctx *c, struct proc_maps *maps,
		       struct profile *p, unsigned flags);

void stackctx_close(struct stack_ctx *c);

#endif
