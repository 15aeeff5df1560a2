// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-agent-imports.c - what libproffs-heap.so may call (SPEC §3: "no
 * unwinding, no allocation, no lock inside the target"), checked on the
 * built library's dynamic symbols, as `nm -D --undefined-only` lists them.
 *
 *   test-agent-imports AGENT BAD
 *
 * The agent runs inside the target's malloc, on any thread: it must not
 * import the allocator (nor anything that allocates), a lock, stdio (a
 * locked, allocating FILE), the unwinder, or the dynamic loader's entry
 * points (they lock, allocate and run constructors). The rule is a list
 * of families, not of today's imports, so a new call of any of them
 * fails here. A few imports are allowed by name, each for the reason
 * given in `reviewed`. The agent also exports nothing but its arm
 * function: in particular no malloc, so dlsym(RTLD_DEFAULT, "malloc")
 * in a target finds libc's (tests/targets/mallocs.c relies on it).
 *
 * BAD is a library that calls one function of each family: the check
 * must reject it, naming each, so a check that sees nothing fails too.
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

struct rule {
	const char *name;	/* a name, or a prefix when it ends in '*' */
	const char *why;
};

static const struct rule forbidden[] = {
	/* allocation */
	{ "malloc", "allocates" }, { "calloc", "allocates" },
	{ "realloc", "allocates" }, { "reallocarray", "allocates" },
	{ "free", "the allocator" }, { "posix_memalign", "allocates" },
	{ "aligned_alloc", "allocates" }, { "memalign", "allocates" },
	{ "valloc", "allocates" }, { "pvalloc", "allocates" },
	{ "__libc_*", "the allocator's other names" },
	{ "_Zn*", "operator new" }, { "_Zd*", "operator delete" },
	{ "strdup", "allocates" }, { "strndup", "allocates" },
	{ "wcsdup", "allocates" }, { "*asprintf", "allocates" },
	{ "getline", "allocates" }, { "getdelim", "allocates" },
	{ "realpath", "allocates" }, { "canonicalize_file_name", "allocates" },
	{ "qsort", "allocates for large arrays" },
	{ "setenv", "allocates" }, { "putenv", "allocates" },
	{ "unsetenv", "locks the environment" },
	{ "opendir", "allocates" }, { "fdopendir", "allocates" },
	{ "scandir*", "allocates" }, { "glob*", "allocates" },
	{ "strerror", "may allocate (unknown errno, locale)" },
	{ "__cxa_atexit", "allocates" }, { "atexit", "allocates" },
	/* stdio: FILEs lock and allocate their buffers */
	{ "*printf*", "stdio, or printf's allocating formatter" },
	{ "fopen*", "stdio" }, { "fdopen", "stdio" }, { "freopen*", "stdio" },
	{ "fmemopen", "stdio" }, { "fopencookie", "stdio" },
	{ "fclose*", "stdio" }, { "fflush*", "stdio" }, { "fwrite*", "stdio" },
	{ "fread*", "stdio" }, { "fput*", "stdio" }, { "fgetc*", "stdio" },
	{ "fgets*", "stdio" }, { "fgetw*", "stdio" }, { "fseek*", "stdio" },
	{ "ftell*", "stdio" }, { "fgetpos*", "stdio" }, { "fsetpos*", "stdio" },
	{ "rewind", "stdio" }, { "*lockfile", "a FILE's lock" },
	{ "puts", "stdio" }, { "putc", "stdio" }, { "putc_unlocked", "stdio" },
	{ "putchar*", "stdio" }, { "getc", "stdio" },
	{ "getc_unlocked", "stdio" }, { "getchar*", "stdio" },
	{ "perror", "stdio" }, { "getcwd", "allocates" },
	{ "*scanf", "stdio" }, { "open_memstream", "stdio" },
	{ "popen", "stdio" }, { "tmpfile*", "stdio" }, { "syslog", "locks" },
	{ "vsyslog", "locks" }, { "setvbuf", "stdio" }, { "setbuf", "stdio" },
	/* locks and waits on other threads */
	{ "pthread_mutex_*", "a lock" }, { "pthread_rwlock_*", "a lock" },
	{ "pthread_spin_*", "a lock" }, { "pthread_cond_*", "a lock" },
	{ "pthread_barrier_*", "a lock" }, { "pthread_once", "a lock" },
	{ "pthread_join", "waits on a thread" },
	{ "pthread_create", "allocates a stack" },
	{ "pthread_key_create", "a lock" }, { "sem_*", "a lock" },
	{ "pthread_setspecific", "allocates (keys past the first 32)" },
	{ "mtx_*", "a lock" }, { "cnd_*", "a lock" },
	{ "call_once", "a lock" }, { "lockf", "a lock" },
	/* unwinding */
	{ "_Unwind_*", "unwinds" }, { "backtrace*", "unwinds" },
	{ "_U*", "libunwind" }, { "unw_*", "libunwind" },
	{ "__cxa_*", "C++ exceptions unwind" },
	{ "__gxx_personality*", "C++ exceptions unwind" },
	/* the dynamic loader: locks, allocates, runs constructors */
	{ "dlopen", "the loader" }, { "dlmopen", "the loader" },
	{ "dlclose", "the loader" }, { "dladdr*", "the loader" },
	{ "dlinfo", "the loader" }, { "dlerror", "allocates" },
	{ "dlvsym", "the loader" }, { "dlsym", "the loader" },
	{ "dl_iterate_phdr", "the loader's lock" },
	{ "pthread_atfork", "locks" }, { "__register_atfork", "locks" },
};

/*
 * Imports a family above would forbid, reviewed one by one: where the
 * agent calls them is not inside a hook's path to the allocator.
 */
static const struct rule reviewed[] = {
	{ "dlsym", "agent_init() only: the constructor, which runs inside "
	  "the dlopen that loads the agent, before any hook is in place" },
	{ "__register_atfork", "agent_init() only (pthread_atfork)" },
	{ "pthread_key_create", "agent_init() only: the key whose "
	  "destructor folds an ending thread's counts" },
	{ "pthread_setspecific", "once per thread, at its first call of a "
	  "hook, before the real allocator is called; a key past the first "
	  "32 callocs a block of keys, and that calloc comes back through "
	  "the hooks as any other (the thread is listed already)" },
	{ "dl_iterate_phdr", "to find the GOTs: at arming (the target "
	  "stopped), after a dlopen returned, and at a sample only when a "
	  "dlopen happened since the last look; glibc's takes the loader's "
	  "recursive write lock, which is never held around an allocation, "
	  "and does not allocate" },
	/* libc's crt objects put these in every shared library: weak,
	 * called (if at all) at unload, which -z nodelete rules out */
	{ "__cxa_finalize", "crt, weak, at unload" },
	{ "_ITM_*", "crt, weak, transactional memory: never there" },
	{ "__gmon_start__", "crt, weak, profiling: never there" },
};

static const char *const exported[] = { "proffs_heap_arm" };

static bool matches(const char *name, const char *pattern)
{
	size_t n = strlen(pattern);
	bool lead = pattern[0] == '*', trail = n && pattern[n - 1] == '*';
	char core[64];

	if (!lead && !trail)
		return !strcmp(name, pattern);
	snprintf(core, sizeof(core), "%.*s", (int)(n - lead - trail),
		 pattern + lead);
	if (lead && trail)
		return strstr(name, core) != NULL;
	if (trail)
		return !strncmp(name, core, strlen(core));
	n = strlen(name);
	return n >= strlen(core) && !strcmp(name + n - strlen(core), core);
}

static const struct rule *find(const struct rule *rules, size_t n,
			       const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (matches(name, rules[i].name))
			return &rules[i];
	return NULL;
}

#define NRULES(a) (sizeof(a) / sizeof((a)[0]))

/* The dynamic symbols of path: undefined ones, and defined global ones. */
struct syms {
	char **undef, **def;
	size_t nundef, ndef;
};

static int add(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return -1;
	*v = nv;
	nv[*n] = strdup(s);
	return nv[(*n)++] ? 0 : -1;
}

static int read_syms(const char *path, struct syms *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf *elf;
	int fd, ret = -1;

	memset(out, 0, sizeof(*out));
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(path);
		return -1;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 1; data && i < sh.sh_size / sh.sh_entsize;
		     i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym))
				goto out;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (sym.st_shndx == SHN_UNDEF)
				ret = add(&out->undef, &out->nundef, name);
			else if (GELF_ST_BIND(sym.st_info) != STB_LOCAL)
				ret = add(&out->def, &out->ndef, name);
			else
				ret = 0;
			if (ret)
				goto out;
		}
	}
	ret = elf ? 0 : -1;
out:
	if (ret)
		fprintf(stderr, "%s: cannot read its dynamic symbols\n", path);
	elf_end(elf);
	close(fd);
	return ret;
}

static void free_syms(struct syms *s)
{
	for (size_t i = 0; i < s->nundef; i++)
		free(s->undef[i]);
	for (size_t i = 0; i < s->ndef; i++)
		free(s->def[i]);
	free(s->undef);
	free(s->def);
}

/* The imports of s that the rules rule out; prints them. */
static int bad_imports(const struct syms *s, const char *want)
{
	int bad = 0;

	for (size_t i = 0; i < s->nundef; i++) {
		const char *name = s->undef[i];
		const struct rule *f, *r;

		f = find(forbidden, NRULES(forbidden), name);
		r = find(reviewed, NRULES(reviewed), name);
		if (!f || r)
			continue;
		bad++;
		if (want && !strcmp(name, want))
			return 1;
		if (!want)
			fprintf(stderr, "the agent imports %s: %s\n", name,
				f->why);
	}
	return want ? 0 : bad;
}

static void test_agent(const char *path)
{
	struct syms s;
	bool libc_seen = false;

	if (read_syms(path, &s)) {
		failures++;
		return;
	}
	/* It does import things (mmap at least): the table was read. */
	for (size_t i = 0; i < s.nundef; i++)
		libc_seen |= matches(s.undef[i], "mmap*");
	CHECK(libc_seen, "%s: %zu imports, none of them mmap", path,
	      s.nundef);
	CHECK(bad_imports(&s, NULL) == 0, "%s imports what it must not",
	      path);
	for (size_t i = 0; i < s.ndef; i++) {
		bool ok = false;

		for (size_t k = 0; k < NRULES(exported); k++)
			ok |= !strcmp(s.def[i], exported[k]);
		CHECK(ok, "%s exports %s", path, s.def[i]);
	}
	CHECK(s.ndef == NRULES(exported), "%s: %zu exports", path, s.ndef);
	free_syms(&s);
}

/* The library made to break the rules is caught, on each family. */
static void test_bad(const char *path)
{
	static const char *const want[] = {
		"malloc", "free", "pthread_mutex_lock", "_Unwind_Backtrace",
		"dlopen", "fprintf", "strdup",
	};
	struct syms s;

	if (read_syms(path, &s)) {
		failures++;
		return;
	}
	for (size_t i = 0; i < NRULES(want); i++)
		CHECK(bad_imports(&s, want[i]), "%s: %s not caught", path,
		      want[i]);
	free_syms(&s);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s AGENT BAD\n", argv[0]);
		return 2;
	}
	test_agent(argv[1]);
	test_bad(argv[2]);
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
