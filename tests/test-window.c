// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-window.c - sampler/window.c: a window ends at its deadline, at once
 * when stopped (-ECANCELED), early when its target is gone (exited, with
 * the partial-window note), looks at the target no more often than asked,
 * and a whole-host window (pid 0) never looks.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sampler/clock.h"
#include "sampler/model/profile.h"
#include "sampler/window.h"

static int looks;

static int count_look(void *arg, bool *alive)
{
	(void)arg;
	looks++;
	*alive = true;
	return 0;
}

static int failing_look(void *arg, bool *alive)
{
	(void)arg;
	*alive = true;
	return -EIO;
}

static void test_deadline(void)
{
	struct window w;
	uint64_t t0 = now_ns();
	bool on;

	window_begin(&w, t0, getpid(), 50, NULL, 0);
	CHECK(!window_on(&w, t0, &on) && on, "on at its start");
	CHECK(window_nap_ns(&w, t0, 1000000000ull) == 50000000ull,
	      "nap: the time left");
	CHECK(window_nap_ns(&w, t0, 1000) == 1000, "nap: the cap");
	CHECK(!window_on(&w, t0 + 50000000ull, &on) && !on, "off at its end");
	CHECK(window_nap_ns(&w, t0 + 60000000ull, 1000) == 0, "nap past end");
	CHECK(!w.exited, "ended, not exited");
	CHECK(!window_note_exit(&w, NULL, 0), "no note when not exited");
}

static void test_stop(void)
{
	_Atomic bool stop = false;
	struct window w;
	bool on = true;

	window_begin(&w, now_ns(), getpid(), 10000, &stop, 0);
	CHECK(!window_on(&w, now_ns(), &on) && on, "on");
	atomic_store(&stop, true);
	CHECK(window_on(&w, now_ns(), &on) == -ECANCELED && !on, "stopped");
}

static void test_look_interval(void)
{
	uint64_t t0 = now_ns();
	struct window w;
	bool on;

	window_begin(&w, t0, getpid(), 10000, NULL, 100);
	w.look = count_look;
	looks = 0;
	window_on(&w, t0 + 50, &on);
	CHECK(looks == 0, "looked before look_ns: %d", looks);
	window_on(&w, t0 + 100, &on);
	window_on(&w, t0 + 150, &on);
	CHECK(looks == 1, "looks: %d", looks);
	window_on(&w, t0 + 200, &on);
	CHECK(looks == 2 && on, "looks: %d", looks);
	w.look = failing_look;
	CHECK(window_on(&w, t0 + 400, &on) == -EIO && !on, "look's error");

	/* every process: no target to look at */
	window_begin(&w, t0, 0, 10000, NULL, 0);
	w.look = count_look;
	looks = 0;
	CHECK(!window_on(&w, t0 + 1, &on) && on && !looks, "pid 0 looked");
}

static void test_exit(void)
{
	struct profile *p;
	struct window w;
	pid_t child;
	bool on = true;
	char text[160];

	child = fork();
	if (!child)
		_exit(0);
	if (child < 0)
		die("fork", -errno);
	window_begin(&w, now_ns(), child, 5000, NULL, 0);
	/* a zombie is gone, for a window */
	while (waitid(P_PID, child, &(siginfo_t){ 0 }, WEXITED | WNOWAIT))
		;
	CHECK(!window_on(&w, now_ns(), &on) && !on && w.exited,
	      "zombie still on");
	waitpid(child, NULL, 0);
	MUST(profile_new(&p));
	CHECK(!window_note_exit(&w, p, 1250000000ull), "note");
	CHECK(profile_ncomments(p) == 1, "%zu comments",
	      profile_ncomments(p));
	snprintf(text, sizeof(text), "process %d exited after 1.25 s of the "
		 "5.00 s window; this profile is partial", (int)child);
	CHECK(profile_ncomments(p) == 1 &&
	      !strcmp(profile_str(p, profile_comment(p, 0)), text),
	      "note: %s", profile_ncomments(p) ?
	      profile_str(p, profile_comment(p, 0)) : "");
	profile_free(p);
}

int main(void)
{
	test_deadline();
	test_stop();
	test_look_interval();
	test_exit();
	if (failures) {
		fprintf(stderr, "test-window: %d failure(s)\n", failures);
		return 1;
	}
	printf("test-window: all passed\n");
	return 0;
}
