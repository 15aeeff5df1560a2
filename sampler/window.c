// SPDX-License-Identifier: GPL-2.0-or-later
/* window.c - the deadline, stop flag, liveness and exit note of a window. */
#include <errno.h>
#include <stdio.h>

#include "sampler/clock.h"
#include "sampler/proc.h"
#include "sampler/model/profile.h"
#include "sampler/window.h"

void window_begin(struct window *w, uint64_t start_ns, pid_t pid,
		  uint64_t window_ms, const _Atomic bool *stop,
		  uint64_t look_ns)
{
	*w = (struct window){
		.pid = pid, .window_ms = window_ms, .stop = stop,
		.look_ns = look_ns, .start_ns = start_ns,
	};
	w->end_ns = w->start_ns + window_ms * 1000000ull;
	w->looked_ns = w->start_ns;
}

static int look(struct window *w, bool *alive)
{
	if (w->look)
		return w->look(w->look_arg, alive);
	*alive = proc_alive(w->pid);
	return 0;
}

int window_on(struct window *w, uint64_t now, bool *on)
{
	bool alive = true;
	int ret;

	*on = false;
	if (w->stop && atomic_load(w->stop))
		return -ECANCELED;
	if (now >= w->end_ns)
		return 0;
	if (w->pid && (!w->look_ns || now - w->looked_ns >= w->look_ns)) {
		w->looked_ns = now;
		ret = look(w, &alive);
		if (ret)
			return ret;
		w->exited = !alive;
	}
	*on = alive;
	return 0;
}

uint64_t window_nap_ns(const struct window *w, uint64_t now,
		       uint64_t cap_ns)
{
	uint64_t left = now < w->end_ns ? w->end_ns - now : 0;

	return left < cap_ns ? left : cap_ns;
}

void window_exit_text(pid_t pid, uint64_t window_ms, uint64_t elapsed_ns,
		      char *buf, size_t size)
{
	snprintf(buf, size, "process %d exited after %.2f s of the %.2f s "
		 "window; this profile is partial", (int)pid,
		 elapsed_ns / 1e9, window_ms / 1e3);
}

int window_note_exit(const struct window *w, struct profile *p,
		     uint64_t elapsed_ns)
{
	char text[160];

	if (!w->exited)
		return 0;
	window_exit_text(w->pid, w->window_ms, elapsed_ns, text,
			 sizeof(text));
	return profile_add_comment(p, text);
}
