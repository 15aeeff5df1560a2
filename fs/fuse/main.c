// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * main.c - the proffs daemon's entry: FUSE options, mount, loop and
 * teardown around the daemon's state (fs/core/daemon.h).
 *
 *   proffs [options] MOUNTPOINT
 *   cat /prof/1234/cpu_5s.pb.gz > cpu.pb.gz
 *
 * The only process-wide state of proffs lives here (the log sink is set
 * from here too).
 */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "sampler/clock.h"
#include "config.h"
#include "sampler/unwind/dso.h"
#include "sampler/heap/heap.h"
#include "sampler/unwind/kallsyms.h"
#include "fs/http/http.h"
#include "fs/core/errors.h"
#include "sampler/log.h"
#include "fs/top/top.h"
#include "fs/fuse/gone.h"
#include "fs/fuse/mountwatch.h"
#include "fs/fuse/nodes.h"
#include "fs/core/daemon.h"
#include "fs/fuse/ops.h"
#include "fs/core/past.h"
#include "sampler/record/record.h"
#include "fs/core/registry.h"
#include "sampler/heap/uprobe/uprobe_group.h"

#define OPT(t, field, v) { t, offsetof(struct proffs_opts, field), v }

static const struct fuse_opt proffs_opt_spec[] = {
	OPT("max_window=%u", max_window_s, 0),
	OPT("max_hz=%u", max_hz, 0),
	OPT("max_sessions=%u", max_sessions, 0),
	OPT("cache_ms=%u", cache_ms, 0),
	OPT("max_stacks=%u", max_stacks, 0),
	OPT("max_name=%u", max_name, 0),
	OPT("debug_roots=%s", debug_roots, 0),
	OPT("agent=%s", agent, 0),
	OPT("heap=%s", heap_method, 0),
	OPT("heap_idle=%u", heap_idle_s, 0),
	OPT("http=%s", http_addr, 0),
	OPT("http_token=%s", http_token, 0),
	OPT("offcpu=%s", offcpu_method, 0),
	OPT("record", record, 1),
	OPT("record_hz=%u", record_hz, 0),
	OPT("record_s=%u", record_s, 0),
	OPT("record_mem=%s", record_mem_str, 0),
	OPT("dso_mem=%s", dso_mem_str, 0),
	OPT("cache_idle=%u", cache_idle_s, 0),
	OPT("nice=%s", nice_str, 0),
	FUSE_OPT_END
};

static void usage(const char *prog)
{
	printf("usage: %s [options] MOUNTPOINT\n"
	       "       %s top [-m MOUNTPOINT] PID | -n NAME | -u UNIT | -a\n\n",
	       prog, prog);
	printf("Live profiles of Linux processes, as files.\n\n"
	       "Files (MOUNTPOINT/<pid>/, name/<command>/, unit/<unit>/, "
	       "all/):\n"
	       "    name     := kind [_duration] [?query] [.format]\n"
	       "    kind     := cpu | profile | flame | heap | allocs | "
	       "goroutine\n"
	       "              | threads | wall | block | mutex | memstats | "
	       "trace\n"
	       "    duration := N s | N ms | last N s       (default 30 s; "
	       "last: -o record)\n"
	       "    query    := seconds=N | hz=N | rate=N | debug=0|1|2 |\n"
	       "                sample=WORD | kernel=0|1 | base=prev |\n"
	       "                base=last N s, joined by &\n"
	       "    format   := pb.gz | pb | svg | txt | folded | json\n"
	       "  e.g.  cat MOUNTPOINT/1234/cpu_5s.txt        5 s CPU, top "
	       "table\n"
	       "        go tool pprof MOUNTPOINT/1234/heap_10s.pb.gz\n"
	       "        cat 'MOUNTPOINT/1234/goroutine?debug=2.txt'\n"
	       "  Refused? MOUNTPOINT/<pid>/errors.txt and MOUNTPOINT/"
	       "errors.txt say why.\n\n"
	       "proffs options:\n"
	       "    -o max_window=N        longest window in seconds (300)\n"
	       "    -o max_hz=N            highest sampling rate (1000)\n"
	       "    -o max_sessions=N      profiling sessions at once (16)\n"
	       "    -o cache_ms=N          finished results stay N ms (10000)\n"
	       "    -o max_stacks=N        distinct stacks kept per session,\n"
	       "                           a bound on its memory (100000)\n"
	       "    -o max_name=N          longest file name (with its query)\n"
	       "                           a profile may have (255)\n"
	       "    -o debug_roots=DIRS    ':'-separated roots of separate\n"
	       "                           debug files (/usr/lib/debug)\n"
	       "    -o heap=METHOD         how heap profiles are taken: auto\n"
	       "                           (the agent, uprobes where it cannot\n"
	       "                           load), agent, uprobe (auto)\n"
	       "    -o agent=PATH          the heap agent to load\n"
	       "                           (" PROFFS_AGENT_PATH ")\n"
	       "    -o heap_idle=N         an agent stays armed N s after its\n"
	       "                           last session (300)\n"
	       "    -o http=ADDR:PORT      serve the same profiles over HTTP\n"
	       "                           (Go's /debug/pprof/ paths, /metrics)\n"
	       "    -o http_token=FILE     a bearer token clients off loopback\n"
	       "                           must send (first line, mode 600)\n"
	       "    -o offcpu=METHOD       how wall, block and mutex are\n"
	       "                           taken: sched (scheduler events,\n"
	       "                           exact; root or CAP_PERFMON),\n"
	       "                           procfs (/proc), auto (sched where\n"
	       "                           allowed and cheap, else procfs)\n"
	       "                           (auto)\n"
	       "    -o record              the flight recorder: keep low-rate\n"
	       "                           CPU samples of every process, for\n"
	       "                           cpu_last30s and base= (off)\n"
	       "    -o record_hz=N         its samples a second per CPU (19)\n"
	       "    -o record_s=N          seconds it keeps (600)\n"
	       "    -o record_mem=SIZE     memory it keeps, K/M/G (64M)\n"
	       "    -o dso_mem=SIZE        memory the cache of ELF objects\n"
	       "                           (symbols, DWARF) keeps once they\n"
	       "                           are idle, K/M/G (64M)\n"
	       "    -o cache_idle=N        an ELF object or the kernel's\n"
	       "                           symbol table unused N s is let\n"
	       "                           go (60)\n"
	       "    -o nice=N              the nice of the threads that\n"
	       "                           answer reads (-10; 0: as any)\n"
	       "\n");
}

/*
 * Kernels since 6.14 can time FUSE requests out; a read parked longer than
 * that would fail, so windows must end well before it.
 */
static void fit_request_timeout(struct proffs_opts *o)
{
	static const char *const files[] = {
		"/proc/sys/fs/fuse/default_request_timeout",
		"/proc/sys/fs/fuse/max_request_timeout",
	};
	unsigned limit = 0;

	for (size_t i = 0; i < 2; i++) {
		FILE *f = fopen(files[i], "re");
		unsigned v;

		if (f && fscanf(f, "%u", &v) == 1 && v &&
		    (!limit || v < limit))
			limit = v;
		if (f)
			fclose(f);
	}
	if (limit && o->max_window_s + 5 > limit) {
		o->max_window_s = limit > 10 ? limit - 5 : 1;
		pr_notice("fs: FUSE requests time out after %u s here: "
			  "max_window lowered to %u s", limit, o->max_window_s);
	}
}

/*
 * mount(8) runs "proffs SOURCE MOUNTPOINT -o OPTS" for a fuse.proffs line
 * (mount.fuse3): with two positional arguments, the first is the source,
 * which means nothing to proffs, and is dropped.
 */
static int drop_mount_source(int argc, char *argv[])
{
	int first = -1, npos = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o")) {
			i++;
			continue;
		}
		if (argv[i][0] == '-')
			continue;
		if (npos++ == 0)
			first = i;
	}
	if (npos != 2)
		return argc;
	memmove(&argv[first], &argv[first + 1],
		(argc - first) * sizeof(argv[0]));
	return argc - 1;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_cmdline_opts cl;
	struct fuse_loop_config *lc = NULL;
	struct fuse_session *se;
	struct mountwatch *watch = NULL;
	struct gone *gone = NULL;
	struct proffs fs = {
		.opts = {
			.max_window_s = 300,
			.max_hz = 1000,
			.max_sessions = 16,
			.cache_ms = 10000,
			.max_stacks = 100000,
			.max_name = 255,
			.heap_idle_s = 300,
			.cache_idle_s = DSO_CACHE_IDLE_S,
		},
	};
	enum heap_method heap_method = HEAP_AUTO;
	int ret = 1;

	/* proffs top: a client of a mount, not a daemon (top.h). */
	if (argc > 1 && !strcmp(argv[1], "top"))
		return top_main(argc - 1, argv + 1);
	daemon_process_setup();
	argc = drop_mount_source(argc, argv);
	args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	if (fuse_parse_cmdline(&args, &cl) != 0)
		return 1;
	if (cl.show_help) {
		usage(argv[0]);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto err_out1;
	}
	if (cl.show_version) {
		printf("proffs version %s\n", PROFFS_VERSION);
		/* before fusermount3's line, which it writes itself */
		fflush(stdout);
		fuse_lowlevel_version();
		ret = 0;
		goto err_out1;
	}
	if (!cl.mountpoint) {
		fprintf(stderr, "usage: %s [options] MOUNTPOINT\n", argv[0]);
		goto err_out1;
	}
	if (fuse_opt_parse(&args, &fs.opts, proffs_opt_spec, NULL) == -1 ||
	    daemon_check_opts(&fs.opts, &heap_method))
		goto err_out2;
	/* Read-write, though nothing can be written: so that refusals reach
	 * the daemon, which logs each one (refuse.c). */
	fuse_opt_add_arg(&args, "-ofsname=proffs,subtype=proffs");
	if (cl.debug)
		proffs_log_set_level(PROFFS_LOG_DEBUG);
	fit_request_timeout(&fs.opts);
	if (daemon_init(&fs, heap_method) || nodes_new(&fs.inodes, &fs.nodes)) {
		fprintf(stderr, "proffs: out of memory\n");
		goto err_out2;
	}
	se = fuse_session_new(&args, &proffs_ops, sizeof(proffs_ops), &fs);
	if (!se)
		goto err_out2;
	if (fuse_set_signal_handlers(se) != 0)
		goto err_out3;
	if (fuse_session_mount(se, cl.mountpoint) != 0)
		goto err_out4;
	daemon_log_choose(&fs, cl.foreground);
	fuse_daemonize(cl.foreground);
	if (!cl.foreground)
		daemon_log_start(&fs);	/* stderr went to /dev/null */
	fs.start_s = now_ns() / 1000000000ull;
	/* Probes a killed daemon left behind pin the files they name. */
	uprobe_group_sweep();
	pr_info("fs: mounted on %s", cl.mountpoint);
	/* Threads after fuse_daemonize(), which forks. */
	if (fs.opts.record && past_start(&fs))
		goto err_out5;	/* logged */
	/* The FUSE workers, the HTTP acceptor and what they start inherit
	 * it (the recorder keeps its own, cpu.h). */
	daemon_serving_priority(&fs);
	daemon_start_threads(&fs);	/* at that priority too */
	if (fs.opts.http_addr &&
	    http_start(&fs, fs.opts.http_addr, fs.opts.http_token, &fs.http))
		goto err_out5;	/* logged */
	mountwatch_start(cl.mountpoint, &watch);	/* logs a failure */
	gone_start(se, &fs, &gone);			/* logs a failure */
	if (cl.singlethread) {
		ret = fuse_session_loop(se);
	} else {
		lc = fuse_loop_cfg_create();
		fuse_loop_cfg_set_clone_fd(lc, cl.clone_fd);
		fuse_loop_cfg_set_max_threads(lc, cl.max_threads);
		ret = fuse_session_loop_mt(se, lc);
		fuse_loop_cfg_destroy(lc);
	}
	/* libfuse returns the number of the signal that ended the loop:
	 * SIGTERM and SIGINT are the normal way to stop a daemon. */
	if (ret > 0)
		ret = 0;
	gone_stop(gone);
	mountwatch_stop(watch);
	/* Its connections hold sessions: before the registry goes. */
	http_stop(fs.http);
	fs.http = NULL;
err_out5:
	fuse_session_unmount(se);
err_out4:
	fuse_remove_signal_handlers(se);
err_out3:
	/* Sessions reply to parked reads: stop them while se exists. */
	registry_free(fs.registry);
	fs.registry = NULL;
	fuse_session_destroy(se);
	record_stop(fs.rec);
	fs.rec = NULL;
err_out2:
	nodes_free(fs.nodes);
	daemon_free(&fs);
err_out1:
	free(cl.mountpoint);
	fuse_opt_free_args(&args);
	return ret ? 1 : 0;
}
