// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * proffs-threads - dump where every thread of a process is, without
 * mounting anything: threads.h and threads_text.h on their own.
 *
 *   proffs-threads PID [DEBUG] [pb] [kernel]
 *
 * Prints the text dump (DEBUG 1, the default: grouped by stack; 2: every
 * thread), or with "pb" the gzipped pprof profile. The figures of the
 * dump (threads, longest hold, time) go to stderr as one line.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/unwind/dso.h"
#include "sampler/proc.h"
#include "render/pprof.h"
#include "sampler/model/profile.h"
#include "sampler/threads/threads.h"
#include "render/threads_text.h"

/* Count the target's threads still traced or stopped. */
static void after_check(pid_t pid)
{
	unsigned traced = 0, stopped = 0;
	char what[64], buf[2048];
	const char *l;
	char state;
	pid_t *tids;
	size_t n, len;

	if (proc_tasks(pid, &tids, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		snprintf(what, sizeof(what), "task/%d/status", (int)tids[i]);
		if (proc_read(pid, what, buf, sizeof(buf) - 1, &len))
			continue;
		buf[len] = '\0';
		l = strstr(buf, "\nTracerPid:");
		if (l && atoi(l + 11))
			traced++;
		l = strstr(buf, "\nState:");
		if (l && sscanf(l + 7, " %c", &state) == 1 &&
		    (state == 't' || state == 'T'))
			stopped++;
	}
	free(tids);
	fprintf(stderr, "proffs-threads: after: %u traced, %u stopped\n",
		traced, stopped);
}

static int output(const struct profile *p, int debug, bool pb)
{
	uint8_t *bytes = NULL;
	char *text = NULL;
	size_t len = 0;
	int ret;

	if (pb)
		ret = pprof_encode(p, true, &bytes, &len);
	else
		ret = threads_text_render(p, debug, &text, &len);
	if (ret)
		return ret;
	fwrite(pb ? (void *)bytes : (void *)text, 1, len, stdout);
	free(bytes);
	free(text);
	return 0;
}

int main(int argc, char **argv)
{
	struct threads_opts o = { 0 };
	struct threads_stats st = { 0 };
	struct profile *p = NULL;
	bool pb = false;
	int debug = 1, ret;

	if (argc < 2) {
		fprintf(stderr, "usage: %s PID [DEBUG] [pb] [kernel]\n",
			argv[0]);
		return 2;
	}
	o.pid = atoi(argv[1]);
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "pb"))
			pb = true;
		else if (!strcmp(argv[i], "kernel"))
			o.kernel = true;
		else
			debug = atoi(argv[i]);
	}
	ret = dso_cache_new(NULL, &o.cache);
	if (!ret)
		ret = threads_profile(&o, &p, &st);
	if (ret) {
		fprintf(stderr, "proffs-threads: %s (%d) after %.3f ms\n",
			strerror(-ret), -ret, st.total_ns / 1e6);
		dso_cache_free(o.cache);
		return 1;
	}
	fprintf(stderr, "proffs-threads: %u threads, %u skipped, %u not "
		"stopped, max hold %.1f us (thread %d), mean hold %.1f us, "
		"stops %.3f ms, total %.3f ms\n", st.threads, st.skipped,
		st.unstopped, st.max_hold_ns / 1e3, (int)st.max_hold_tid,
		st.threads > st.unstopped ?
		st.sum_hold_ns / 1e3 / (st.threads - st.unstopped) : 0.0,
		st.stop_ns / 1e6, st.total_ns / 1e6);
	after_check(o.pid);
	ret = output(p, debug, pb);
	profile_free(p);
	dso_cache_free(o.cache);
	if (ret) {
		fprintf(stderr, "proffs-threads: %s\n", strerror(-ret));
		return 1;
	}
	return 0;
}
