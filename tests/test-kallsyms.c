// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-kallsyms.c - the kernel symbol table (sampler/unwind/kallsyms.h)
 * and the kernel frames it names (kframes.h): lookups between symbols,
 * perf's choice among aliases, data and hidden symbols left out, a table
 * read once; "[k] name" locations, one per function, from addresses and
 * from /proc/PID/task/TID/stack text. With the machine's own
 * /proc/kallsyms too, when it shows addresses, and the names the kernel
 * gives itself through eBPF (ksym_bpf.h) held to that table, when it
 * lets this process load the programs (root).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "sampler/unwind/kallsyms.h"
#include "sampler/unwind/kframes.h"
#include "sampler/model/profile.h"

static const char table[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 t startup_64\n"
	"ffffffff81001000 t __local_fn\n"
	"ffffffff81001000 t local_fn\n"
	"ffffffff81002000 W weak_fn\n"
	"ffffffff81002000 t strong_local\n"
	"ffffffff81003000 D some_data\n"
	"ffffffff81004000 T vfs_read\n"
	"ffffffff81004800 T ksys_read\n"
	"garbage line\n"
	"ffffffffc0a00000 t mod_fn\t[mod]\n"
	"ffffffff81003800 T pipe_read\n";

static char *write_file(const char *text)
{
	char *path = strdup("/tmp/test-kallsyms-XXXXXX");
	int fd = path ? mkstemp(path) : -1;

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die("write_file", -1);
	close(fd);
	return path;
}

static const char *name_at(struct kallsyms *k, uint64_t addr, uint64_t *s)
{
	const char *n = kallsyms_name(k, addr, NULL, 0, s);

	return n ? n : "(null)";
}

static void test_lookups(void)
{
	char *path = write_file(table);
	struct kallsyms *k;
	uint64_t start = 0;

	MUST(kallsyms_new(path, &k));
	CHECK(kallsyms_name(k, 0xffffffff81004000ull, NULL, 0, &start) == NULL,
	      "named before it was read");
	CHECK(kallsyms_ready(k), "not ready");
	CHECK(kallsyms_ready(k), "not ready twice");
	/* perf's choice at one address: global, fewer underscores, longer */
	CHECK(!strcmp(name_at(k, 0xffffffff81000010ull, &start), "_stext"),
	      "%s", name_at(k, 0xffffffff81000010ull, &start));
	CHECK(start == 0xffffffff81000000ull, "start %llx",
	      (unsigned long long)start);
	CHECK(!strcmp(name_at(k, 0xffffffff81001004ull, &start), "local_fn"),
	      "%s", name_at(k, 0xffffffff81001004ull, &start));
	/* not weak beats weak, even local */
	CHECK(!strcmp(name_at(k, 0xffffffff81002000ull, &start),
		      "strong_local"), "%s",
	      name_at(k, 0xffffffff81002000ull, &start));
	/* data symbols are not functions: the text before it runs on */
	CHECK(!strcmp(name_at(k, 0xffffffff81003010ull, &start),
		      "strong_local"), "%s",
	      name_at(k, 0xffffffff81003010ull, &start));
	/* out of order in the file, in order in the table */
	CHECK(!strcmp(name_at(k, 0xffffffff81003900ull, &start), "pipe_read"),
	      "%s", name_at(k, 0xffffffff81003900ull, &start));
	CHECK(!strcmp(name_at(k, 0xffffffff810047ffull, &start), "vfs_read"),
	      "%s", name_at(k, 0xffffffff810047ffull, &start));
	CHECK(!strcmp(name_at(k, 0xffffffff81004800ull, &start), "ksys_read"),
	      "%s", name_at(k, 0xffffffff81004800ull, &start));
	CHECK(!strcmp(name_at(k, 0xffffffffc0a00123ull, &start), "mod_fn"),
	      "%s", name_at(k, 0xffffffffc0a00123ull, &start));
	CHECK(kallsyms_name(k, 0xffffffff80000000ull, NULL, 0, &start) == NULL,
	      "a name below the first symbol");
	kallsyms_free(k);
	unlink(path);
	free(path);
}

/* What a reader the kernel hides addresses from reads: zeros. */
static void test_hidden_and_missing(void)
{
	char *path = write_file("0000000000000000 T _stext\n"
				"0000000000000000 T vfs_read\n"
				"0000000000000000 t pipe_read\n");
	struct kallsyms *k;
	uint64_t start;

	MUST(kallsyms_new(path, &k));
	CHECK(!kallsyms_ready(k), "ready with hidden addresses");
	CHECK(!kallsyms_name(k, 0, NULL, 0, &start), "named a hidden address");
	kallsyms_free(k);
	unlink(path);
	MUST(kallsyms_new(path, &k));	/* gone now */
	CHECK(!kallsyms_ready(k), "ready without a file");
	kallsyms_free(k);
	free(path);
	kallsyms_free(NULL);
}

static const char *fn_name(struct profile *p, uint64_t loc, bool system)
{
	const struct pf_location *l = profile_location(p, loc);
	const struct pf_function *f;

	const struct pf_mapping *m = l ? profile_mapping(p, l->mapping_id)
				       : NULL;

	if (!l || l->nlines != 1 || !m ||
	    strcmp(profile_str(p, m->filename), "[kernel.kallsyms]") ||
	    !m->has_functions)
		return "(bad location)";
	f = profile_function(p, l->lines[0].function_id);
	return profile_str(p, system ? f->system_name : f->name);
}

static void test_frames(void)
{
	char *path = write_file(table);
	struct kallsyms *k;
	struct profile *p;
	struct kframes *kf;
	uint64_t a, b, c, d, locs[8];
	int n;

	MUST(kallsyms_new(path, &k));
	CHECK(kallsyms_ready(k), "not ready");
	MUST(profile_new(&p));
	MUST(kframes_new(p, k, &kf));
	/* the leaf at a function's start is that function; a return address
	 * there belongs to the call before it */
	MUST(kframes_pc(kf, 0xffffffff81004800ull, true, &a));
	MUST(kframes_pc(kf, 0xffffffff81004800ull, false, &b));
	MUST(kframes_pc(kf, 0xffffffff81004010ull, false, &c));
	CHECK(!strcmp(fn_name(p, a, false), "[k] ksys_read"), "%s",
	      fn_name(p, a, false));
	CHECK(!strcmp(fn_name(p, a, true), "ksys_read"), "%s",
	      fn_name(p, a, true));
	CHECK(!strcmp(fn_name(p, b, false), "[k] vfs_read"), "%s",
	      fn_name(p, b, false));
	CHECK(b == c, "two locations for vfs_read: %llu %llu",
	      (unsigned long long)b, (unsigned long long)c);
	CHECK(profile_location(p, b)->address == 0xffffffff81004000ull,
	      "vfs_read at %llx",
	      (unsigned long long)profile_location(p, b)->address);
	CHECK(profile_nmappings(p) == 1, "%zu mappings", profile_nmappings(p));
	MUST(kframes_pc(kf, 0xffffffff70000000ull, true, &d));
	CHECK(!strcmp(fn_name(p, d, false), "[k] 0xffffffff70000000"), "%s",
	      fn_name(p, d, false));
	/* /proc/PID/task/TID/stack, innermost first */
	MUST(kframes_proc_stack(kf, "[<0>] pipe_read+0x322/0x490\n"
				"[<0>] vfs_read+0x248/0x330\n"
				"[<0>] ksys_read+0x6b/0xf0\n"
				"junk\n"
				"[<0>] do_syscall_64+0x82/0x190\n"
				"[<0>] entry_SYSCALL_64_after_hwframe+0x76",
				locs, 8, &n));
	CHECK(n == 5, "%d frames", n);
	CHECK(n >= 3 && locs[1] == b && locs[2] == a,
	      "named frames are not the addresses' locations");
	CHECK(n == 5 && !strcmp(fn_name(p, locs[4], false),
				"[k] entry_SYSCALL_64_after_hwframe"),
	      "%s", n == 5 ? fn_name(p, locs[4], false) : "");
	MUST(kframes_proc_stack(kf, "[<0>] a\n[<0>] b\n[<0>] c\n", locs, 2,
				&n));
	CHECK(n == 2, "%d frames past max", n);
	/* a named frame is at its function's address, an alias perf would
	 * not print too (__local_fn beside local_fn); 0 when unknown */
	MUST(kframes_proc_stack(kf, "[<0>] __local_fn+0x10/0x20\n"
				"[<0>] pipe_read+0x1/0x2\n"
				"[<0>] nowhere+0x1/0x2\n", locs, 8, &n));
	CHECK(n == 3 && profile_location(p, locs[0])->address ==
	      0xffffffff81001000ull && profile_location(p, locs[1])->address
	      == 0xffffffff81003800ull && !profile_location(p,
	      locs[2])->address, "named frames' addresses");
	{
		uint64_t addr = 0;

		CHECK(!kallsyms_addr(k, "vfs_readX", 8, &addr) &&
		      addr == 0xffffffff81004000ull, "vfs_read: %llx",
		      (unsigned long long)addr);
		CHECK(kallsyms_addr(k, "vfs_rea", 7, &addr) == -ENOENT &&
		      kallsyms_addr(k, "some_data", 9, &addr) == -ENOENT,
		      "a prefix, a data symbol");
	}
	kframes_free(kf);
	profile_free(p);
	kallsyms_free(k);
	unlink(path);
	free(path);
}

/* The scheduler's and the lock functions, by their section markers,
 * which are aliases of functions (and lose to them as names). */
static void test_sched_functions(void)
{
	char *path = write_file("ffffffff81000000 T _stext\n"
				"ffffffff81010000 T futex_wait_queue\n"
				"ffffffff81020000 T __sched_text_start\n"
				"ffffffff81020000 t __schedule\n"
				"ffffffff81020800 T schedule\n"
				"ffffffff81021000 T __sched_text_end\n"
				"ffffffff81021000 T __lock_text_start\n"
				"ffffffff81021000 T _raw_spin_lock\n"
				"ffffffff81022000 T __lock_text_end\n"
				"ffffffff81022000 T do_futex\n");
	struct kallsyms *k;
	uint64_t start;

	MUST(kallsyms_new(path, &k));
	CHECK(!kallsyms_in_sched(k, 0xffffffff81020010ull),
	      "in the scheduler before it was read");
	CHECK(kallsyms_ready(k), "not ready");
	CHECK(!strcmp(name_at(k, 0xffffffff81020900ull, &start),
		      "schedule"), "%s",
	      name_at(k, 0xffffffff81020900ull, &start));
	CHECK(kallsyms_in_sched(k, 0xffffffff81020000ull), "__schedule");
	CHECK(kallsyms_in_sched(k, 0xffffffff81020900ull), "schedule");
	CHECK(kallsyms_in_sched(k, 0xffffffff81021004ull), "_raw_spin_lock");
	CHECK(!kallsyms_in_sched(k, 0xffffffff81010020ull),
	      "futex_wait_queue");
	CHECK(!kallsyms_in_sched(k, 0xffffffff81022000ull), "do_futex");
	kallsyms_free(k);
	unlink(path);
	free(path);
	/* no markers: nothing is the scheduler's */
	path = write_file("ffffffff81000000 T _stext\n"
			  "ffffffff81020000 t __schedule\n");
	MUST(kallsyms_new(path, &k));
	CHECK(kallsyms_ready(k), "not ready");
	CHECK(!kallsyms_in_sched(k, 0xffffffff81020000ull),
	      "in the scheduler without markers");
	kallsyms_free(k);
	unlink(path);
	free(path);
}

/* A table left in a cache directory is read back by the next reader,
 * with the file gone; a damaged one is not trusted. */
static void test_cache(void)
{
	char dir[] = "/tmp/test-kallsyms-cache-XXXXXX", file[4200];
	char *path = write_file(table);
	struct kallsyms *k;
	uint64_t start;
	struct stat st;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	MUST(kallsyms_new(path, &k));
	MUST(kallsyms_set_cache_dir(k, dir));
	CHECK(kallsyms_ready(k), "not ready");
	kallsyms_free(k);
	snprintf(file, sizeof(file), "ls %s/kallsyms-* > /dev/null", dir);
	CHECK(!system(file), "no cache file in %s", dir);
	unlink(path);
	MUST(kallsyms_new(path, &k));
	MUST(kallsyms_set_cache_dir(k, dir));
	CHECK(kallsyms_ready(k), "not ready from the cache");
	CHECK(!strcmp(name_at(k, 0xffffffff81003900ull, &start), "pipe_read"),
	      "%s", name_at(k, 0xffffffff81003900ull, &start));
	CHECK(!strcmp(name_at(k, 0xffffffffc0a00123ull, &start), "mod_fn"),
	      "%s", name_at(k, 0xffffffffc0a00123ull, &start));
	kallsyms_free(k);
	/* another file's table is not this one's */
	MUST(kallsyms_new("/nonexistent/kallsyms", &k));
	MUST(kallsyms_set_cache_dir(k, dir));
	CHECK(!kallsyms_ready(k), "another file's table");
	kallsyms_free(k);
	/* cut short: not trusted, and the file is gone */
	snprintf(file, sizeof(file), "for f in %s/kallsyms-*; do "
		 "truncate -s -3 $f; done", dir);
	CHECK(!system(file), "truncate");
	MUST(kallsyms_new(path, &k));
	MUST(kallsyms_set_cache_dir(k, dir));
	CHECK(!kallsyms_ready(k), "ready from a damaged cache");
	kallsyms_free(k);
	/* someone else's directory is not used */
	CHECK(!chmod(dir, 0755), "chmod");
	f = fopen(path, "w");
	CHECK(f && fputs(table, f) >= 0 && !fclose(f), "rewrite");
	MUST(kallsyms_new(path, &k));
	MUST(kallsyms_set_cache_dir(k, dir));
	CHECK(kallsyms_ready(k), "not ready from the file");
	kallsyms_free(k);
	CHECK(!stat(dir, &st) && (st.st_mode & 0777) == 0755, "mode");
	snprintf(file, sizeof(file), "rm -rf %s", dir);
	CHECK(!system(file), "rm");
	unlink(path);
	free(path);
}

/* Held while in use, let go once idle for the expiry time (name index
 * too), then mapped again from the boot's cache, or read again from the
 * file when there is none. */
static void test_expiry(void)
{
	char dir[] = "/tmp/test-kallsyms-idle-XXXXXX", cmd[4200];
	char *path = write_file(table);
	struct kallsyms_stats st;
	struct kallsyms *k;
	uint64_t start, addr;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	MUST(kallsyms_new(path, &k));
	MUST(kallsyms_set_cache_dir(k, dir));
	kallsyms_stats(k, &st);
	CHECK(!st.bytes && !st.holders && !st.expired &&
	      st.idle_ms == KALLSYMS_IDLE_S * 1000ull, "fresh: %zu %u %llu",
	      st.bytes, st.holders, (unsigned long long)st.expired);
	CHECK(kallsyms_hold(k), "not held");
	CHECK(!kallsyms_addr(k, "ksys_read", 9, &addr) &&
	      addr == 0xffffffff81004800ull, "ksys_read");
	kallsyms_set_idle(k, 0);
	CHECK(!kallsyms_sweep(k), "let go while held");
	kallsyms_stats(k, &st);
	CHECK(st.symbols && st.bytes && st.holders == 1 && !st.expired,
	      "held: %zu %zu %u", st.symbols, st.bytes, st.holders);
	kallsyms_put(k);
	kallsyms_set_idle(k, 3600 * 1000);
	CHECK(!kallsyms_sweep(k), "let go before its expiry");
	kallsyms_set_idle(k, 0);
	kallsyms_stats(k, &st);	/* sweeps */
	CHECK(!st.symbols && !st.bytes && !st.holders && st.expired == 1,
	      "not let go: %zu %zu %u %llu", st.symbols, st.bytes,
	      st.holders, (unsigned long long)st.expired);
	CHECK(kallsyms_ready(k), "not ready once let go");
	/* the file gone: mapped again from the cache */
	unlink(path);
	CHECK(kallsyms_hold(k), "not held again from the cache");
	CHECK(!strcmp(name_at(k, 0xffffffff81003900ull, &start), "pipe_read"),
	      "%s", name_at(k, 0xffffffff81003900ull, &start));
	kallsyms_put(k);
	CHECK(kallsyms_sweep(k), "not let go again");
	kallsyms_free(k);
	/* no cache: read from the file again; no file: not held */
	free(path);
	path = write_file(table);
	MUST(kallsyms_new(path, &k));
	kallsyms_set_idle(k, 0);
	CHECK(kallsyms_hold(k), "not held without a cache");
	kallsyms_put(k);
	CHECK(kallsyms_sweep(k), "not let go without a cache");
	CHECK(kallsyms_hold(k), "not read again");
	CHECK(!strcmp(name_at(k, 0xffffffff81004001ull, &start), "vfs_read"),
	      "%s", name_at(k, 0xffffffff81004001ull, &start));
	kallsyms_put(k);
	CHECK(kallsyms_sweep(k), "not let go");
	unlink(path);
	CHECK(!kallsyms_hold(k), "held without a file");
	kallsyms_free(k);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(!system(cmd), "rm");
	free(path);
}

/* The machine's own table, when this reader may see it. */
static void test_this_kernel(void)
{
	struct kallsyms *k;
	uint64_t start;
	const char *n;

	MUST(kallsyms_new(NULL, &k));
	if (kallsyms_ready(k)) {
		FILE *f = fopen("/proc/kallsyms", "re");
		unsigned long long addr = 0;
		char type, name[256];
		int found = 0;

		while (f && fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type,
				   name) == 3)
			if (!strcmp(name, "vfs_read")) {
				found = 1;
				break;
			}
		if (f)
			fclose(f);
		CHECK(found, "no vfs_read in /proc/kallsyms");
		n = kallsyms_name(k, addr + 1, NULL, 0, &start);
		CHECK(n && !strcmp(n, "vfs_read") && start == addr,
		      "vfs_read+1 is %s", n ? n : "(null)");
	}
	kallsyms_free(k);
}

/* Every 37th text symbol of /proc/kallsyms, a few bytes in: up to max
 * into v, how many. */
static size_t some_kernel_addrs(uint64_t *v, size_t max)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	unsigned long long addr;
	char type, name[512];
	size_t n = 0, i = 0;

	while (f && n < max && fscanf(f, "%llx %c %511s%*[^\n]", &addr, &type,
				      name) == 3)
		if (strchr("tTwW", type) && addr && !(i++ % 37))
			v[n++] = addr + i % 13;
	if (f)
		fclose(f);
	return n;
}

/* The kernel's own names (eBPF) against the table of the same kernel:
 * the same function and start for all but aliases, which the kernel
 * chooses its own way (ksym_bpf.h); the scheduler's bounds; names to
 * addresses, aliases too; a bare address left unnamed. */
static void test_this_kernel_bpf(void)
{
	struct kallsyms *tab, *bpf;
	struct kallsyms_stats st;
	static uint64_t addrs[4000];
	size_t n, same = 0;
	uint64_t a1 = 0, a2 = 0, s1, s2, sched;
	char buf[KALLSYMS_NAME_MAX];

	MUST(kallsyms_new(NULL, &tab));
	MUST(kallsyms_new(NULL, &bpf));
	kallsyms_set_bpf(bpf, true);
	if (!kallsyms_ready(tab) || !kallsyms_ready(bpf)) {
		printf("# the kernel's table is hidden from this reader\n");
		goto out;
	}
	kallsyms_stats(bpf, &st);
	if (!st.bpf) {
		printf("# the eBPF namer is not loaded here (not root, no "
		       "libbpf, an old kernel): not tested\n");
		goto out;
	}
	CHECK(kallsyms_hold(tab) && kallsyms_hold(bpf), "hold");
	CHECK(st.symbols == 0 && st.bytes > 0 && st.bytes < 65536,
	      "namer: %zu symbols, %zu bytes", st.symbols, st.bytes);
	n = some_kernel_addrs(addrs, sizeof(addrs) / sizeof(addrs[0]));
	CHECK(n >= 1000, "only %zu kernel addresses", n);
	for (size_t i = 0; i < n; i++) {
		const char *t = kallsyms_name(tab, addrs[i], NULL, 0, &s1);
		const char *b = kallsyms_name(bpf, addrs[i], buf, sizeof(buf),
					      &s2);

		same += t && b && !strcmp(t, b) && s1 == s2;
	}
	CHECK(same * 100 >= n * 99, "%zu of %zu named alike", same, n);
	/* again: the namer's kept answers are its answers */
	size_t again = 0;

	for (size_t i = 0; i < n; i++) {
		const char *t = kallsyms_name(tab, addrs[i], NULL, 0, &s1);
		const char *b = kallsyms_name(bpf, addrs[i], buf, sizeof(buf),
					      &s2);

		again += t && b && !strcmp(t, b) && s1 == s2;
	}
	CHECK(again == same, "%zu alike the second time, %zu the first",
	      again, same);
	CHECK(!kallsyms_addr(tab, "vfs_read", 8, &a1) &&
	      !kallsyms_addr(bpf, "vfs_read", 8, &a2) && a1 == a2 && a1,
	      "vfs_read at %#llx and %#llx", (unsigned long long)a1,
	      (unsigned long long)a2);
	CHECK(kallsyms_addr(bpf, "no_such_kernel_fn_x", 19, &a2) == -ENOENT,
	      "named a function the kernel does not have");
	CHECK(!kallsyms_addr(bpf, "__schedule", 10, &sched) &&
	      kallsyms_in_sched(bpf, sched + 1) &&
	      kallsyms_in_sched(tab, sched + 1) &&
	      !kallsyms_in_sched(bpf, a1 + 1), "scheduler bounds");
	CHECK(!kallsyms_name(bpf, 0x1234, buf, sizeof(buf), &s2),
	      "named a user address");
	kallsyms_put(tab);
	kallsyms_put(bpf);
out:
	kallsyms_free(tab);
	kallsyms_free(bpf);
}

int main(void)
{
	test_lookups();
	test_hidden_and_missing();
	test_frames();
	test_sched_functions();
	test_cache();
	test_expiry();
	test_this_kernel();
	test_this_kernel_bpf();
	return failures ? 1 : 0;
}
