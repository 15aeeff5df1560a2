// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-java.c - the attach protocol (jattach.h) and thread dumps
 * (java.h) against a listener of our own at /tmp/.java_pid<our pid>, as a
 * JVM's: the request's bytes, a reply's result code (0, non-zero, none),
 * and a Thread.print text into names and frames by nid (a name with a
 * quote in it, frames of a module, a native method, lock lines between
 * frames). Without the socket, a process that does not catch SIGQUIT
 * (this one) is not signalled.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "sampler/model/profile.h"
#include "sampler/runtime/jattach.h"
#include "sampler/runtime/java.h"
#include "sampler/runtime/javamethod.h"

struct fake {
	int lfd;
	const char *reply;
	char req[256];		/* what was asked */
	size_t req_len;
};

/* One connection: read the request (five NUL-ended strings), reply. */
static void *serve(void *arg)
{
	struct fake *f = arg;
	int fd = accept(f->lfd, NULL, NULL), nuls = 0;
	ssize_t n;

	f->req_len = 0;
	while (fd >= 0 && nuls < 5 && f->req_len < sizeof(f->req)) {
		n = read(fd, f->req + f->req_len, 1);
		if (n <= 0)
			break;
		nuls += !f->req[f->req_len++];
	}
	if (fd >= 0) {
		if (write(fd, f->reply, strlen(f->reply)) < 0)
			perror("write");
		close(fd);
	}
	return NULL;
}

static int listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fd, 4))
		die("listen", -errno);
	return fd;
}

static int ask(struct fake *f, const char *reply, const char *cmd,
	       const char *arg, char **out)
{
	const char *args[3] = { arg, NULL, NULL };
	pthread_t th;
	size_t len;
	int ret;

	f->reply = reply;
	*out = NULL;
	MUST(pthread_create(&th, NULL, serve, f));
	ret = jattach(getpid(), cmd, args, out, &len);
	pthread_join(th, NULL);
	return ret;
}

static void test_protocol(struct fake *f)
{
	static const char want[] = "1\0jcmd\0Compiler.perfmap\0\0";
	char *out;
	int ret;

	ret = ask(f, "0\nCommand executed successfully\n", "jcmd",
		  "Compiler.perfmap", &out);
	CHECK(!ret && out && !strcmp(out, "Command executed successfully\n"),
	      "%d %s", ret, out ? out : "");
	CHECK(f->req_len == sizeof(want) &&
	      !memcmp(f->req, want, sizeof(want)), "request of %zu bytes",
	      f->req_len);
	free(out);
	ret = ask(f, "101\nNo such command\n", "bogus", NULL, &out);
	CHECK(ret == -EREMOTEIO && out && !strcmp(out, "No such command\n"),
	      "%d", ret);
	free(out);
	ret = ask(f, "garbage", "jcmd", "x", &out);
	CHECK(ret == -EPROTO && !out, "%d", ret);
}

static const char *fn_name(struct profile *p, uint64_t loc)
{
	const struct pf_location *l = profile_location(p, loc);

	return l && l->nlines ? profile_str(p, profile_function(
			p, l->lines[0].function_id)->name) : "?";
}

static void test_dump(struct fake *f)
{
	char reply[2048];
	struct profile *p;
	struct javart *j;
	const char *name;
	uint64_t locs[8];
	pthread_t th;
	int n;

	snprintf(reply, sizeof(reply), "0\n%d:\nFull thread dump\n\n"
		 "\"we\"ird\" #1 prio=5 os_prio=0 cpu=1.00ms tid=0x7f "
		 "nid=0x%x waiting on condition  [0x7f]\n"
		 "   java.lang.Thread.State: TIMED_WAITING (sleeping)\n"
		 "\tat java.lang.Thread.sleep(java.base@17.0.15/Native Method)\n"
		 "\t- locked <0x1> (a java.lang.Object)\n"
		 "\tat Known.parkedHere(Known.java:40)\n"
		 "\tat java.lang.Thread.run(java.base@17.0.15/Thread.java:840)\n"
		 "\n\"VM Thread\" os_prio=0 cpu=1.00ms tid=0x7f nid=0x%x "
		 "runnable\n\n", (int)getpid(), (unsigned)getpid(),
		 (unsigned)getpid() + 1);
	MUST(profile_new(&p));
	MUST(javart_new(getpid(), p, &j));
	/* not allowed: nothing asked */
	MUST(javart_dump(j));
	MUST(javart_frames(j, getpid(), locs, 8, &n, &name));
	CHECK(!n && !name, "%d", n);
	javart_allow_attach(j);
	f->reply = reply;
	MUST(pthread_create(&th, NULL, serve, f));
	MUST(javart_dump(j));
	pthread_join(th, NULL);
	CHECK(!memcmp(f->req, "1\0threaddump\0", 13), "threaddump asked");
	MUST(javart_frames(j, getpid(), locs, 8, &n, &name));
	CHECK(name && !strcmp(name, "we\"ird"), "%s", name ? name : "");
	CHECK(n == 3, "%d frames", n);
	if (n == 3) {
		CHECK(!strcmp(fn_name(p, locs[0]), "java.lang.Thread.sleep"),
		      "%s", fn_name(p, locs[0]));
		CHECK(!strcmp(fn_name(p, locs[1]),
			      "Known.parkedHere (Known.java:40)"), "%s",
		      fn_name(p, locs[1]));
		CHECK(!strcmp(fn_name(p, locs[2]),
			      "java.lang.Thread.run (Thread.java:840)"), "%s",
		      fn_name(p, locs[2]));
		CHECK(profile_function(p, profile_location(p, locs[1])->
				       lines[0].function_id)->runtime,
		      "a Java frame is a runtime's");
		CHECK(profile_location(p, locs[1])->lines[0].line == 40,
		      "line");
	}
	/* the same frame again is the same location */
	uint64_t again[8];
	MUST(javart_frames(j, getpid(), again, 8, &n, &name));
	CHECK(n == 3 && again[1] == locs[1], "shared");
	javart_free(j);
	profile_free(p);
}

/* The JVM's perf map: compiled methods by external name, the rest by
 * their code blob's name. */
static void test_compiled_method(void)
{
	static const char *const yes[] = {
		"long Known.heavy()", "void java.lang.Thread.run()",
		"java.lang.String java.lang.String.valueOf(java.lang.Object)",
		"void Known$Inner.run(int, long)", "int a.b()",
	};
	static const char *const no[] = {
		"Interpreter", "StubRoutines (1)", "I2C/C2I adapters",
		"unwind_exception Runtime1 stub", "vtable chunks", "", "()",
		"a.b()", " a.b()", "x .b()", "x a.()", "x a.b(", "x a()",
	};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		CHECK(javart_compiled_method(yes[i]), "%s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		CHECK(!javart_compiled_method(no[i]), "%s", no[i]);
}

/* HotSpot's compressed line number table: (bci, line) pairs as deltas,
 * a byte bci << 3 | line when they fit, else 0xff and two signed
 * UNSIGNED5 ints; 0 ends it. */
static void test_line_table(void)
{
	static const uint8_t t[] = {
		0xff, 0x00, 0x14,		/* (0, 10): +0, +10 */
		0x22,				/* (4, 12): +4, +2 */
		0xff, 0xd0, 0x06, 0xd0, 0x0c,	/* (300, 500): +296, +488 */
		0xff, 0x14, 0x01,		/* (310, 499): +10, -1 */
		0x00, 0x2a, 0x2a,		/* the end; past it, nothing */
	};
	static const struct { uint32_t bci; int line; } want[] = {
		{ 0, 10 }, { 2, 10 }, { 4, 12 }, { 100, 12 }, { 300, 500 },
		{ 305, 500 }, { 310, 499 }, { 60000, 499 },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK(javamethod_table_line(t, sizeof(t), want[i].bci) ==
		      want[i].line, "bci %u: %d", want[i].bci,
		      javamethod_table_line(t, sizeof(t), want[i].bci));
	/* cut short in an escape: the pairs before it */
	CHECK(javamethod_table_line(t, 7, 300) == 12, "cut");
	CHECK(javamethod_table_line(t, 0, 0) == -1, "empty");
}

static bool catches_quit(void)
{
	char line[256];
	FILE *st = fopen("/proc/self/status", "r");
	bool yes = true;

	while (st && fgets(line, sizeof(line), st))
		if (!strncmp(line, "SigCgt:", 7))
			yes = strtoull(line + 7, NULL, 16) &
			      (1ull << (SIGQUIT - 1));
	if (st)
		fclose(st);
	return yes;
}

int main(void)
{
	struct fake f = { 0 };
	const char *args[3] = { "x", NULL, NULL };
	char path[108], *out;
	size_t len;
	int ret;

	test_compiled_method();
	test_line_table();
	snprintf(path, sizeof(path), "/tmp/.java_pid%d", (int)getpid());
	f.lfd = listen_at(path);
	test_protocol(&f);
	test_dump(&f);
	close(f.lfd);
	unlink(path);
	/* no socket: this process does not catch SIGQUIT, it is spared
	 * (under valgrind, which catches every signal, not asked) */
	signal(SIGQUIT, SIG_IGN);
	if (!catches_quit()) {
		ret = jattach(getpid(), "jcmd", args, &out, &len);
		CHECK(ret == -EPERM, "%d", ret);
	}
	if (failures)
		return 1;
	printf("all java checks passed\n");
	return 0;
}
