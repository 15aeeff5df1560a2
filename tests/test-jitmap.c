// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-jitmap.c - perf map files as runtimes write them: lookups inside,
 * at the edges of and between entries, a later line over an earlier one
 * at the same address, lines appended while the map is in use (read after
 * JITMAP_RELOAD_MS), a line split across two writes, lines that are not
 * entries, an over-long name; and the files that must not be read: one
 * of another user, a symbolic link, a FIFO.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sampler/unwind/jitmap.h"

static char dir[1024];

static const char *path(const char *name)
{
	static char buf[1200];

	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

static void append(const char *file, const char *text)
{
	FILE *f = fopen(path(file), "a");

	if (!f || fputs(text, f) < 0 || fclose(f))
		die("append", -errno);
}

static void wait_reload(void)
{
	struct timespec ts = { 0, (JITMAP_RELOAD_MS + 20) * 1000000L };

	nanosleep(&ts, NULL);
}

static struct jitmap *open_map(const char *file)
{
	struct jitmap *j;

	MUST(jitmap_new(getpid(), &j));
	MUST(jitmap_set_path(j, path(file)));
	return j;
}

static void expect(struct jitmap *j, uint64_t addr, const char *want)
{
	const char *name = NULL;
	int ret = jitmap_lookup(j, addr, &name);

	if (want)
		CHECK(!ret && name && !strcmp(name, want), "%#llx: %d %s, "
		      "want %s", (unsigned long long)addr, ret,
		      name ? name : "(none)", want);
	else
		CHECK(ret == -ENOENT, "%#llx: %d %s, want none",
		      (unsigned long long)addr, ret, name ? name : "");
}

static void test_lookups(void)
{
	struct jitmap *j;

	append("a.map", "1000 100 LazyCompile:*hot /app/x.js:4\n"
			"1100 80 JS:*cold /app/x.js:9\n"
			"not an entry\n"
			"2000 0 empty\n"
			"0x3000 0x20 with 0x prefixes\n"
			"1040 10 Stub:later over hot\n");
	j = open_map("a.map");
	expect(j, 0xfff, NULL);
	expect(j, 0x1000, "LazyCompile:*hot /app/x.js:4");
	expect(j, 0x103f, "LazyCompile:*hot /app/x.js:4");
	expect(j, 0x1040, "Stub:later over hot");
	expect(j, 0x104f, "Stub:later over hot");
	expect(j, 0x1050, "LazyCompile:*hot /app/x.js:4");
	expect(j, 0x10ff, "LazyCompile:*hot /app/x.js:4");
	expect(j, 0x1100, "JS:*cold /app/x.js:9");
	expect(j, 0x117f, "JS:*cold /app/x.js:9");
	expect(j, 0x1180, NULL);
	expect(j, 0x2000, NULL);
	expect(j, 0x3010, "with 0x prefixes");

	/* appended later, the last line split in two writes: read after
	 * JITMAP_RELOAD_MS, the unfinished line only once it ends */
	append("a.map", "5000 40 JS:*new /app/x.js:20\n6000 10 JS:*sp");
	wait_reload();
	expect(j, 0x5010, "JS:*new /app/x.js:20");
	expect(j, 0x6000, NULL);
	append("a.map", "lit\n");
	wait_reload();
	expect(j, 0x6000, "JS:*split");
	/* code freed and its address reused: once read (a miss reads on),
	 * the later line wins */
	append("a.map", "1000 200 JS:*reused\n");
	wait_reload();
	expect(j, 0x9000, NULL);
	expect(j, 0x1000, "JS:*reused");
	expect(j, 0x1150, "JS:*reused");
	jitmap_free(j);
}

static void test_long_name(void)
{
	char *line = malloc(8192);
	const char *name = NULL;
	struct jitmap *j;

	if (!line)
		die("malloc", -ENOMEM);
	strcpy(line, "7000 10 ");
	memset(line + 8, 'n', 5000);
	strcpy(line + 5008, "\n8000 10 after\n");
	append("long.map", line);
	j = open_map("long.map");
	/* a line longer than the reader keeps is dropped whole */
	CHECK(jitmap_lookup(j, 0x7000, &name) == -ENOENT, "long line");
	expect(j, 0x8000, "after");
	jitmap_free(j);
	free(line);
}

static void test_refused(void)
{
	struct jitmap *j;

	append("other.map", "1000 100 other\n");
	MUST(chown(path("other.map"), 65534, 65534));
	j = open_map("other.map");
	expect(j, 0x1000, NULL);
	jitmap_free(j);

	append("target.map", "1000 100 target\n");
	MUST(symlink("target.map", path("link.map")));
	j = open_map("link.map");
	expect(j, 0x1000, NULL);
	jitmap_free(j);

	j = open_map("missing.map");
	expect(j, 0x1000, NULL);
	jitmap_free(j);

	/* a FIFO (or a device) is not opened at all: no open blocks */
	run_sh("mkfifo '%s'", path("fifo.map"));
	j = open_map("fifo.map");
	expect(j, 0x1000, NULL);
	jitmap_free(j);
}

int main(void)
{
	const char *bd = getenv("TEST_BUILD_DIR");

	snprintf(dir, sizeof(dir), "%s/jitmap-fixtures", bd ? bd : ".");
	run_sh("rm -rf '%s' && mkdir -p '%s'", dir, dir);
	test_lookups();
	test_long_name();
	if (geteuid() == 0)
		test_refused();
	else
		CHECK(getenv("CI") == NULL, "CI runs as root: the refusals "
		      "need a file of another user");
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all jitmap checks passed\n");
	return 0;
}
