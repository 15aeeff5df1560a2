/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_comments.h - what a heap or allocs profile made by the agent says
 * about itself, in its comments: the rate (and why it is coarser than
 * asked), samples dropped, a process that exited or was harmed during
 * the window, and why a profile is empty. Errors: negative errno
 * (profile_add_comment's).
 */
#ifndef PROFFS_HEAP_COMMENTS_H
#define PROFFS_HEAP_COMMENTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct profile;
struct window;

struct heap_comment_info {
	pid_t pid;
	uint64_t rate;		/* what the agent sampled at, at the end */
	uint64_t asked;		/* what the sessions asked */
	bool throttled;		/* made coarser during the span
				 * (heap_throttle.h) */
	uint64_t lost, samples;	/* in the profile's span */
	const struct window *window;	/* the one measured (its exit note) */
	uint64_t elapsed_ns;
	uint32_t slots, objects;	/* GOT entries hooked, and where */
	uint32_t py;		/* CPython's pymalloc: enum ph_py */
	const char *harm;	/* how the agent harmed it, or NULL */
};

int heap_add_comments(struct profile *p, const struct heap_comment_info *c);

#endif
