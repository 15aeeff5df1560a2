// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-heap-watch.c - the daemon's watch of a target after a load
 * (sampler/heap/heap_watch.c): its rules (which exit is a crash, when
 * samples say the threads spin in the agent), and a watched child that
 * dies of SIGSEGV (judged harmed, from its zombie's exit status), one
 * that exits 3 (not harmed: said how); both fine while alive.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sampler/heap/heap_watch.h"

static void test_rules(void)
{
	CHECK(heap_watch_crashed(SIGSEGV), "SIGSEGV");
	CHECK(heap_watch_crashed(SIGBUS | 0x80), "SIGBUS, core");
	CHECK(heap_watch_crashed(SIGTERM | 0x80), "any core dump");
	CHECK(!heap_watch_crashed(SIGKILL), "SIGKILL is someone's choice");
	CHECK(!heap_watch_crashed(SIGTERM), "SIGTERM");
	CHECK(!heap_watch_crashed(3 << 8), "exit 3");
	CHECK(heap_watch_spinning(50, 45, 0), "45 of 50");
	CHECK(!heap_watch_spinning(50, 44, 0), "44 of 50");
	CHECK(!heap_watch_spinning(49, 49, 0), "too few samples");
	CHECK(!heap_watch_spinning(500, 500, 1), "a record was written");
}

/* A child that waits for a byte, then does what it is told. */
static pid_t child(int *fd)
{
	int p[2];
	pid_t pid;
	char c = 0;

	MUST(pipe(p));
	pid = fork();
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core);
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(1);
		/* the default action: a sanitizer's handler would turn
		 * the crash into its own SIGABRT */
		if (c == 's') {
			signal(SIGSEGV, SIG_DFL);
			raise(SIGSEGV);
		}
		_exit(3);
	}
	close(p[0]);
	*fd = p[1];
	return pid;
}

static enum heap_watch_verdict watch_until(struct heap_watch *w, char *why,
					   size_t len)
{
	enum heap_watch_verdict v;

	for (int i = 0; i < 500; i++) {
		v = heap_watch_poll(w, 0, why, len);
		if (v != HEAP_WATCH_FINE)
			return v;
		usleep(10000);
	}
	return v;
}

static void test_child(char how, enum heap_watch_verdict want,
		       const char *said)
{
	struct heap_watch *w = NULL;
	char why[160] = "";
	int fd, status;
	pid_t pid = child(&fd);

	CHECK(heap_watch_start(pid, 0, &w) == 0 && w, "start");
	if (!w)
		return;
	CHECK(heap_watch_poll(w, 0, why, sizeof(why)) == HEAP_WATCH_FINE,
	      "alive: %s", why);
	MUST(write(fd, &how, 1) != 1);
	close(fd);
	CHECK(watch_until(w, why, sizeof(why)) == want, "%c: %s", how, why);
	CHECK(strstr(why, said), "%c: %s", how, why);
	heap_watch_free(w);
	waitpid(pid, &status, 0);
}

int main(void)
{
	test_rules();
	test_child('s', HEAP_WATCH_HARMED, "SIGSEGV");
	test_child('x', HEAP_WATCH_EXITED, "status 3");
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-heap-watch: all checks passed\n");
	return 0;
}
