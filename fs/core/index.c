// SPDX-License-Identifier: GPL-2.0-or-later
/* index.c - a small HTML page of links per process. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/core/index.h"
#include "fs/core/name.h"
#include "fs/core/output.h"
#include "sampler/proc.h"

static const struct {
	const char *name;
	const char *what;
} links[] = {
	/* Names readdir does not list: their stat gives the exact size, so
	 * a browser shows all of them (it reads exactly st_size bytes). */
	{ "flame.svg", "CPU flame graph, 30 s" },
	{ "cpu_5s.svg", "CPU flame graph, 5 s" },
	{ "cpu_30s.pb.gz", "CPU profile for go tool pprof, 30 s" },
	{ "cpu_5s.txt", "top functions, 5 s" },
	{ "cpu_5s.folded", "collapsed stacks, 5 s" },
	{ "heap.svg", "heap in use, flame graph" },
	{ "heap.txt", "heap in use, top functions" },
	{ "heap?debug=1.txt", "heap, Go's legacy text" },
	{ "heap_30s.pb.gz", "heap profile, change over 30 s" },
	{ "memstats.txt", "Go's runtime.MemStats: counts of calls, heap "
	  "sizes" },
	{ "allocs.svg", "allocations, flame graph" },
	{ "allocs.txt", "allocations, top functions" },
	{ "wall_5s.svg", "wall-clock flame graph, on and off the CPU, 5 s" },
	{ "wall_30s.pb.gz", "wall-clock profile for go tool pprof, 30 s" },
	{ "block_5s.svg", "where threads waited to synchronize, 5 s" },
	{ "block_5s.txt", "blocking, top functions, 5 s" },
	{ "mutex_5s.svg", "where threads waited for locks, 5 s" },
	{ "mutex_5s.txt", "lock waits, top functions, 5 s" },
	{ "mutex_30s.pb.gz", "lock waits for go tool pprof, 30 s" },
	{ "goroutine?debug=1.txt", "every thread's stack, grouped" },
	{ "goroutine?debug=2.txt", "every thread's stack, one by one" },
	{ "goroutine.pb.gz", "thread stacks, pprof" },
	{ "cmdline", "command line" },
};

void index_put_html(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

static bool served(const char *name)
{
	struct proffs_request req;

	if (!strcmp(name, "cmdline"))
		return true;
	return name_parse(name, &req) == 0 &&
	       output_supported(req.kind, req.format);
}

int index_html(pid_t pid, char **buf, size_t *len)
{
	char cmd[4096];
	FILE *f;
	int ret;

	ret = proc_cmdline_str(pid, cmd, sizeof(cmd));
	if (ret)
		return ret;
	f = open_memstream(buf, len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
		"<title>proffs: %d</title></head>\n<body>\n<h1>%d: ",
		(int)pid, (int)pid);
	index_put_html(f, cmd);
	fputs("</h1>\n<p>Each link profiles the process when opened; a "
	      "profile with a window takes that long.</p>\n<ul>\n", f);
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		if (!served(links[i].name))
			continue;
		/* '?' starts a URL query: escape it in the link. */
		fputs("<li><a href=\"", f);
		for (const char *c = links[i].name; *c; c++)
			*c == '?' ? fputs("%3F", f) : fputc(*c, f);
		fprintf(f, "\">%s</a> &mdash; %s</li>\n", links[i].name,
			links[i].what);
	}
	fputs("</ul>\n</body></html>\n", f);
	return fclose(f) ? -ENOMEM : 0;
}
