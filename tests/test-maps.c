// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-maps.c - load biases from /proc/PID/maps and the PT_LOAD headers,
 * for programs as each linker lays them out: GNU ld (PIE, non-PIE, and
 * with a second executable segment), gold, LLD (text at file offset
 * 0x710 but vaddr 0x1710: the headers, rodata and text share the file's
 * first page; non-PIE), and mold. Each fixture program prints the run-time
 * addresses of a function in .text, one in a section of its own, and
 * objects in .rodata and .data, then waits; the test loads its maps and
 * checks that each address, less its mapping's bias, is the ELF address
 * nm gives, symbolizes to the right function, and reads the bytes the
 * program has there from the file. And the vDSO, which is in no file, from
 * the test's own memory.
 */
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/maps.h"

static char dir[1024];

static const char *const fx_src[] = {
	"#include <stdio.h>",
	"#include <unistd.h>",
	"const char ro_mark[16] = \"rodata-mark-123\";",
	"unsigned long data_mark = 0x1122334455667788ul;",
	"__attribute__((noinline, section(\"far_text\"))) int far_fn(int x)",
	"{ return x * 3 + 1; }",
	"__attribute__((noinline)) int near_fn(int x)",
	"{ return far_fn(x) + 2; }",
	"int main(void)",
	"{",
	"\tprintf(\"%p %p %p %p\\n\", (void *)near_fn, (void *)far_fn,",
	"\t       (void *)ro_mark, (void *)&data_mark);",
	"\tfflush(stdout);",
	"\tpause();",
	"\treturn near_fn(1);",
	"}",
};

/* How each fixture is linked; far: far_text in a segment of its own. */
static const struct {
	const char *name, *flags;
} links[] = {
	{ "bfd", "" },
	{ "bfd-nopie", "-no-pie" },
	{ "bfd-far", "-Wl,--section-start=far_text=0x200000" },
	{ "gold", "-fuse-ld=gold" },
	{ "lld", "-fuse-ld=lld" },
	{ "lld-nopie", "-fuse-ld=lld -no-pie" },
	/* two executable segments in one file page */
	{ "lld-far", "-fuse-ld=lld -Wl,--section-start=far_text=0x200000" },
	{ "mold", "-fuse-ld=mold" },
	{ "mold-far", "-fuse-ld=mold -Wl,--section-start=far_text=0x200000" },
};

static void build_fixtures(void)
{
	const char *bd = getenv("TEST_BUILD_DIR");
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/maps-fixtures", bd ? bd : ".");
	run_sh("rm -rf '%s' && mkdir -p '%s'", dir, dir);
	snprintf(dir + strlen(dir), 16, "/fx.c");
	f = fopen(dir, "w");
	if (!f)
		die("fopen fx.c", -errno);
	for (size_t i = 0; i < sizeof(fx_src) / sizeof(*fx_src); i++)
		fprintf(f, "%s\n", fx_src[i]);
	fclose(f);
	*strrchr(dir, '/') = '\0';
	for (size_t i = 0; i < sizeof(links) / sizeof(*links); i++)
		run_sh("cd '%s' && cc -O2 -g %s -o fx-%s fx.c", dir,
		    links[i].flags, links[i].name);
}

/* The entry of addr: its dso loaded, addr - bias the ELF address nm
 * gives for sym. */
static struct map_entry *check_addr(struct proc_maps *m, const char *file,
				    const char *what, uint64_t addr,
				    const char *sym)
{
	struct map_entry *e = maps_find(m, addr);
	uint64_t want = nm_addr(file, sym, false);

	CHECK(e && e->dso, "%s: %s: no mapping or dso at %#llx", file, what,
	      (unsigned long long)addr);
	if (!e || !e->dso)
		return NULL;
	CHECK(addr - e->bias == want, "%s: %s at %#llx, want %#llx", file,
	      what, (unsigned long long)(addr - e->bias),
	      (unsigned long long)want);
	return e;
}

static void check_function(struct proc_maps *m, const char *file,
			   uint64_t addr, const char *sym)
{
	struct map_entry *e = check_addr(m, file, sym, addr, sym);
	struct dso_frame f[4];
	int n = 0;

	if (!e)
		return;
	CHECK(e->exec, "%s: %s not in an executable mapping", file, sym);
	CHECK(!dso_symbolize(e->dso, addr - e->bias, f, 4, &n) && n >= 1 &&
	      !strcmp(f[n - 1].function, sym), "%s: %s symbolized as %s",
	      file, sym, n ? f[n - 1].function : "nothing");
}

static void check_bytes(struct proc_maps *m, const char *file,
			uint64_t addr, const char *sym, const void *want,
			size_t len)
{
	struct map_entry *e = check_addr(m, file, sym, addr, sym);
	char got[16];

	if (!e)
		return;
	CHECK(!dso_read(e->dso, addr - e->bias, got, len) &&
	      !memcmp(got, want, len), "%s: %s bytes differ", file, sym);
}

static void check_one(struct dso_cache *cache, const char *name)
{
	static const uint64_t data_mark = 0x1122334455667788ul;
	unsigned long long a[4];
	char file[1200], line[256];
	struct proc_maps *m;
	int fds[2];
	pid_t pid;
	bool ok;
	FILE *out;

	snprintf(file, sizeof(file), "%s/fx-%s", dir, name);
	if (pipe(fds))
		die("pipe", -errno);
	pid = fork();
	if (pid < 0)
		die("fork", -errno);
	if (!pid) {
		dup2(fds[1], 1);
		execl(file, file, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	ok = out && fgets(line, sizeof(line), out) &&
	     sscanf(line, "%llx %llx %llx %llx", &a[0], &a[1], &a[2],
		    &a[3]) == 4;
	CHECK(ok, "%s: no addresses", file);
	if (ok) {
		MUST(maps_load(pid, cache, &m));
		check_function(m, file, a[0], "near_fn");
		check_function(m, file, a[1], "far_fn");
		check_bytes(m, file, a[2], "ro_mark", "rodata-mark-123", 16);
		check_bytes(m, file, a[3], "data_mark", &data_mark,
			    sizeof(data_mark));
		maps_free(m);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (out)
		fclose(out);
}

/* Our own vDSO, from no file: its image is read from the process, named
 * from its .dynsym, and its bytes are the ones we run. (The integration
 * tests profile a process that spends its time in it.) */
static void check_vdso(struct dso_cache *cache)
{
	struct proc_maps *m;
	struct map_entry *e = NULL;
	struct dso_frame f[4];
	uint8_t got[16];
	uint64_t v;
	int n = 0;

	MUST(maps_load(getpid(), cache, &m));
	for (size_t i = 0; i < maps_count(m) && !e; i++)
		if (!strcmp(maps_at(m, i)->path, "[vdso]"))
			e = maps_at(m, i);
	/* valgrind unmaps the vDSO of the programs it runs */
	CHECK(!e || e->dso, "[vdso] without a dso");
	if (e && e->dso) {
		CHECK(!dso_symbol_vaddr(e->dso, "__vdso_clock_gettime", &v) &&
		      v + e->bias >= e->start && v + e->bias < e->end,
		      "__vdso_clock_gettime");
		CHECK(!dso_symbolize(e->dso, v + 1, f, 4, &n) && n == 1 &&
		      !strcmp(f[0].function, "__vdso_clock_gettime"),
		      "symbolized as %s", n ? f[0].function : "nothing");
		CHECK(!dso_read(e->dso, v, got, sizeof(got)) &&
		      !memcmp(got, (void *)(uintptr_t)(v + e->bias),
			      sizeof(got)), "vDSO bytes");
	}
	maps_free(m);
}

int main(void)
{
	struct dso_cache *cache;

	build_fixtures();
	MUST(dso_cache_new(NULL, &cache));
	for (size_t i = 0; i < sizeof(links) / sizeof(*links); i++)
		check_one(cache, links[i].name);
	check_vdso(cache);
	dso_cache_free(cache);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all maps checks passed\n");
	return 0;
}
