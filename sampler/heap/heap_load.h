/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_load.h - put the heap agent into a running process, or arm the one
 * it has, with every thread held at a safe point (inject.h).
 *
 * Loading: memfd_create() in the target, the agent's bytes written into
 * that memfd through /proc/PID/fd (so a process in another mount
 * namespace gets it too), dlopen("/proc/self/fd/N", RTLD_NOW) in the
 * target - whose constructor creates the ring and arms - and close(N).
 * Arming: a call of the agent's proffs_heap_arm().
 *
 * Either way, setup(arg) runs while the threads are still held, after the
 * agent is in (load) or before it arms (arm), so the daemon can open the
 * ring and set the rate before any thread allocates again.
 *
 * Errors: those of inject_run(); -ENOTSUP when the process has no dlopen
 * (a static binary) or no agent to arm; -ENOEXEC when its dlopen refused
 * the agent (logged with the loader's system call that failed); -EIO when
 * the agent did not arm (why_not(arg) said so), -ENOTSUP when it never
 * will here (no malloc, or one that leads back into it: logged);
 * setup's own errors.
 */
#ifndef PROFFS_HEAP_LOAD_H
#define PROFFS_HEAP_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct inject_stats;
struct proc_maps;

struct heap_load_opts {
	pid_t pid;
	struct proc_maps *maps;		/* borrowed */
	struct turns *turns;		/* the daemon's, or NULL (turns.h) */
	const void *agent;		/* the agent file's bytes */
	size_t agent_len;
	bool arm_only;			/* the agent is there: arm it */
	int (*setup)(void *arg);
	/* after the load or arm call: 0 when the agent armed, else why
	 * not (enum ph_why; UINT32_MAX: unknown) */
	uint32_t (*why_not)(void *arg);
	void *arg;
};

int heap_load(const struct heap_load_opts *o, struct inject_stats *st);

/* Why an agent disarmed itself or refused to arm, in words (enum
 * ph_why). */
const char *heap_load_why(uint32_t why);

#endif
