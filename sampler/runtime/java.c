// SPDX-License-Identifier: GPL-2.0-or-later
/* java.c - a JVM's method names and thread dumps, through its attach
 * socket. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/clock.h"
#include "sampler/log.h"
#include "sampler/model/profile.h"
#include "sampler/proc.h"
#include "sampler/runtime/jattach.h"
#include "sampler/runtime/java.h"
#include "sampler/runtime/javamethod.h"
#include "sampler/runtime/javascope.h"
#include "sampler/runtime/javastack.h"
#include "sampler/unwind/maps.h"

#define FRAME_HASH 1024
#define SCOPE_CACHE 128		/* (Method, bci) -> name, file, line */

struct jthread {
	pid_t nid;		/* in the JVM's pid namespace */
	const char *name;	/* into the dump's text */
	size_t first, n;	/* its frames: frames[first..first+n) */
};

struct jframe {
	const char *text;	/* "Known.sleeper(Known.java:12)" */
	uint64_t loc;		/* 0 until made */
	int next;		/* hash chain, -1 ends */
};

/* What a Java frame of compiled code resolved to: its Method's name and
 * file, its bci's line. */
struct scope_slot {
	uint64_t method;	/* 0 = empty */
	int bci, line;
	bool named;		/* name is set (not for a compiled method
				 * itself, named by the perf map) */
	char name[384], file[128];
};

struct javart {
	pid_t pid;
	struct profile *p;
	bool attach;
	bool broken;		/* an attach that failed: not again */
	uint64_t last_perfmap_ns;
	char *dump;		/* the last thread dump's text */
	struct jthread *threads;
	size_t nthreads;
	struct jframe *frames;
	size_t nframes, cap_frames;
	int heads[FRAME_HASH];	/* frames with a location, by text */
	struct javamethod *methods;	/* NULL without maps (tests) */
	struct javascope *scopes;	/* with methods */
	/* javart_compiled()'s names and files */
	char names[JAVA_INLINE_MAX][512], files[JAVA_INLINE_MAX][256];
	struct scope_slot *scope_cache;	/* SCOPE_CACHE, with scopes */
};

static bool is_jvm(struct proc_maps *maps)
{
	const struct map_entry *e;
	const char *base;

	for (size_t i = 0; (e = maps_peek(maps, i)); i++) {
		base = strrchr(e->path, '/');
		if (base && !strcmp(base + 1, "libjvm.so"))
			return true;
	}
	return false;
}

int javart_new(pid_t pid, struct profile *p, struct javart **out)
{
	struct javart *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->pid = pid;
	j->p = p;
	*out = j;
	return 0;
}

int javart_open(struct proc_maps *maps, struct profile *p,
		struct javart **out)
{
	int ret;

	*out = NULL;
	if (!is_jvm(maps))
		return 0;
	ret = javart_new(maps_pid(maps), p, out);
	if (!ret && (javamethod_new(maps, &(*out)->methods) ||
		     javascope_new((*out)->methods, (*out)->pid,
				   &(*out)->scopes) ||
		     !((*out)->scope_cache = calloc(SCOPE_CACHE,
						    sizeof(struct scope_slot))))) {
		javart_free(*out);
		*out = NULL;
		ret = -ENOMEM;
	}
	return ret;
}

int javart_method(struct javart *j, uint64_t pc, char *buf, size_t size,
		  char *file, size_t fsize, int *line)
{
	uint64_t addr = pc;
	uint16_t bcp16;
	bool at;
	int ret;

	*line = 0;
	if (fsize)
		file[0] = '\0';
	if (!j || !j->methods)
		return -ENOENT;
	at = javastack_interp_split(pc, &addr, &bcp16);
	ret = javamethod_name(j->methods, addr, buf, size);
	/* a line that cannot be had leaves the name */
	if (!ret && at &&
	    javamethod_line(j->methods, addr, bcp16, file, fsize, line) ==
	    -ENOMEM)
		ret = -ENOMEM;
	return ret;
}

/*
 * The name (when named), file and line of Method method at bci, from
 * the cache or read now (each costs some ten reads of the target, and
 * the pcs of a compiled method share a few PcDescs).
 */
static int scope_resolve(struct javart *j, uint64_t method, int bci,
			 bool named, const struct scope_slot **out)
{
	size_t h = ((method >> 3) * 31 + (unsigned)bci) * 0x9e3779b97f4a7c15ull
		   >> 57;	/* 7 bits: SCOPE_CACHE */
	struct scope_slot *c = &j->scope_cache[h % SCOPE_CACHE];
	int ret;

	_Static_assert(SCOPE_CACHE == 128, "7 bits of hash");
	if (c->method != method || c->bci != bci) {
		c->method = 0;
		c->named = false;
		/* a line that cannot be had leaves the name */
		ret = javamethod_line_bci(j->methods, method, bci, c->file,
					  sizeof(c->file), &c->line);
		if (ret == -ENOMEM)
			return ret;
		c->method = method;
		c->bci = bci;
	}
	if (named && !c->named) {
		ret = javamethod_external_name(j->methods, method, c->name,
					       sizeof(c->name));
		if (ret)
			return ret;
		c->named = true;
	}
	*out = c;
	return 0;
}

int javart_compiled(struct javart *j, uint64_t pc, uint64_t start,
		    uint64_t size, const char *name, struct javart_frame *f,
		    int max, int *n)
{
	struct javascope_frame sf[JAVA_INLINE_MAX];
	const struct scope_slot *c;
	int ret, k;

	*n = 0;
	if (!j || !j->scopes)
		return -ENOENT;
	if (max > JAVA_INLINE_MAX)
		max = JAVA_INLINE_MAX;
	ret = javascope_find(j->scopes, pc, start, size, sf, max, &k);
	for (int i = 0; !ret && i < k; i++) {
		/* the compiled method itself by its perf map's name */
		ret = scope_resolve(j, sf[i].method, sf[i].bci, i < k - 1, &c);
		if (ret)
			break;
		snprintf(j->names[i], sizeof(j->names[i]), "%s",
			 i < k - 1 ? c->name : name);
		snprintf(j->files[i], sizeof(j->files[i]), "%s", c->file);
		f[i] = (struct javart_frame){ .name = j->names[i],
					      .file = j->files[i],
					      .line = c->line };
	}
	if (!ret)
		*n = k;
	return ret;
}

bool javart_compiled_method(const char *name)
{
	const char *open = strchr(name, '('), *sp, *dot;
	size_t n = strlen(name);

	if (!open || name[n - 1] != ')' || open == name)
		return false;
	sp = memrchr(name, ' ', open - name);
	if (!sp || sp == name)
		return false;
	dot = memchr(sp, '.', open - sp);
	return dot && dot > sp + 1 && dot + 1 < open;
}

static void dump_clear(struct javart *j)
{
	free(j->dump);
	free(j->threads);
	free(j->frames);
	j->dump = NULL;
	j->threads = NULL;
	j->frames = NULL;
	j->nthreads = j->nframes = j->cap_frames = 0;
}

void javart_free(struct javart *j)
{
	if (!j)
		return;
	dump_clear(j);
	free(j->scope_cache);
	javascope_free(j->scopes);
	javamethod_free(j->methods);
	free(j);
}

void javart_allow_attach(struct javart *j)
{
	if (j)
		j->attach = true;
}

bool javart_perfmap_due(const struct javart *j)
{
	return j && j->attach && !j->broken &&
	       (!j->last_perfmap_ns ||
		now_ns() - j->last_perfmap_ns >= JAVA_PERFMAP_MS * 1000000ull);
}

/* One jcmd command; a refusal (an old JVM) stops further tries. */
static int command(struct javart *j, const char *cmd, const char *arg,
		   char **out, size_t *len)
{
	const char *args[3] = { arg, NULL, NULL };
	char *reply = NULL;
	size_t rlen = 0;
	int ret;

	ret = jattach(j->pid, cmd, args, &reply, &rlen);
	/* Not again in this session: a JVM that will not start its
	 * listener (-XX:+DisableAttachMechanism) prints a thread dump on
	 * its standard output at every SIGQUIT. */
	if (ret && ret != -ENOMEM) {
		pr_info("java: %d: %s %s failed: %s%s%.200s", (int)j->pid,
			cmd, arg ? arg : "", strerror(-ret),
			reply ? ": " : "", reply ? reply : "");
		j->broken = true;
	}
	if (ret) {
		free(reply);
		return ret;
	}
	*out = reply;
	*len = rlen;
	return 0;
}

int javart_perfmap(struct javart *j)
{
	char *reply;
	size_t len;
	int ret;

	if (!javart_perfmap_due(j))
		return -EAGAIN;
	j->last_perfmap_ns = now_ns();
	ret = command(j, "jcmd", "Compiler.perfmap", &reply, &len);
	if (ret)
		return ret;
	/* jcmd's own failures come back as text with result code 0 */
	if (strstr(reply, "Exception") || strstr(reply, "Unknown")) {
		pr_info("java: %d: Compiler.perfmap: %.200s", (int)j->pid,
			reply);
		j->broken = true;
		ret = -EREMOTEIO;
	}
	free(reply);
	return ret;
}

/* Thread dumps */

static int add_frame(struct javart *j, const char *text)
{
	if (j->nframes == j->cap_frames) {
		size_t cap = j->cap_frames ? 2 * j->cap_frames : 256;
		struct jframe *v = realloc(j->frames, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		j->frames = v;
		j->cap_frames = cap;
	}
	j->frames[j->nframes++] = (struct jframe){ text, 0, -1 };
	return 0;
}

/* '"name" #1 ... nid=0x1f2e ...': the name and the nid; 0 or -EINVAL. */
static int thread_line(char *line, struct jthread *t)
{
	char *nid = strstr(line, " nid=0x"), *q;

	if (!nid)
		return -EINVAL;
	t->nid = (pid_t)strtol(nid + 7, NULL, 16);
	*nid = '\0';
	q = strrchr(line + 1, '"');
	if (!q || t->nid <= 0)
		return -EINVAL;
	*q = '\0';
	t->name = line + 1;
	return 0;
}

/* The text of Thread.print into threads and frames, in place. */
static int parse_dump(struct javart *j)
{
	struct jthread *cur = NULL;
	size_t cap = 0;
	char *line = j->dump, *nl;

	for (int h = 0; h < FRAME_HASH; h++)
		j->heads[h] = -1;

	for (; line && *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		if (line[0] == '"') {
			struct jthread t = { 0 };

			cur = NULL;
			if (thread_line(line, &t))
				continue;
			if (j->nthreads == cap) {
				size_t ncap = cap ? 2 * cap : 64;
				struct jthread *v = realloc(j->threads,
							    ncap * sizeof(*v));

				if (!v)
					return -ENOMEM;
				j->threads = v;
				cap = ncap;
			}
			t.first = j->nframes;
			j->threads[j->nthreads] = t;
			cur = &j->threads[j->nthreads++];
		} else if (cur && !strncmp(line, "\tat ", 4)) {
			if (add_frame(j, line + 4))
				return -ENOMEM;
			cur->n++;
		} else if (!line[0]) {
			cur = NULL;
		}
	}
	return 0;
}

int javart_dump(struct javart *j)
{
	size_t len;
	int ret;

	if (!j || !j->attach || j->broken)
		return 0;
	dump_clear(j);
	ret = command(j, "threaddump", NULL, &j->dump, &len);
	if (ret) {
		pr_info("java: %d: no thread dump: %s", (int)j->pid,
			strerror(-ret));
		return ret == -ENOMEM ? ret : 0;
	}
	ret = parse_dump(j);
	if (ret)
		dump_clear(j);
	return ret;
}

static size_t hash_str(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

/*
 * "pkg.Class.method(File.java:12)", "...(java.base@17/File.java:3)",
 * "...(Native Method)": a location named "pkg.Class.method (File.java:12)"
 * as Python's frames are, with the file and line.
 */
static int make_location(struct javart *j, const char *text, uint64_t *loc)
{
	char func[512], file[256] = "", name[800];
	const char *open = strchr(text, '('), *slash, *colon, *close;
	struct pf_line line = { 0 };
	size_t flen;
	int ret;

	flen = open ? (size_t)(open - text) : strlen(text);
	snprintf(func, sizeof(func), "%.*s", (int)flen, text);
	if (open) {
		close = strrchr(open, ')');
		slash = memchr(open, '/', close ? (size_t)(close - open) : 0);
		open = slash ? slash : open;
		colon = strrchr(open, ':');
		if (colon && close && colon < close) {
			snprintf(file, sizeof(file), "%.*s",
				 (int)(colon - open - 1), open + 1);
			line.line = strtol(colon + 1, NULL, 10);
		}
	}
	if (file[0])
		snprintf(name, sizeof(name), "%s (%s:%d)", func, file,
			 (int)line.line);
	else
		snprintf(name, sizeof(name), "%s", func);
	ret = profile_add_function(j->p, name, func, file[0] ? file : NULL, 0,
				   &line.function_id);
	if (!ret)
		ret = profile_mark_runtime(j->p, line.function_id);
	if (!ret)
		ret = profile_add_location(j->p, 0, 0, &line, 1, loc);
	return ret;
}

/* The location of frame i, shared by every frame of the same text. */
static int frame_loc(struct javart *j, size_t i, uint64_t *loc)
{
	struct jframe *f = &j->frames[i];
	size_t h = hash_str(f->text) % FRAME_HASH;
	int ret;

	for (int k = j->heads[h]; k >= 0; k = j->frames[k].next)
		if (!strcmp(j->frames[k].text, f->text)) {
			*loc = j->frames[k].loc;
			return 0;
		}
	ret = make_location(j, f->text, &f->loc);
	if (ret)
		return ret;
	f->next = j->heads[h];
	j->heads[h] = (int)i;
	*loc = f->loc;
	return 0;
}

int javart_frames(struct javart *j, pid_t tid, uint64_t *locs, int max,
		  int *n, const char **name)
{
	const struct jthread *t = NULL;
	pid_t nid;
	int ret;

	*n = 0;
	*name = NULL;
	if (!j || !j->nthreads || proc_ns_tid(j->pid, tid, &nid))
		return 0;
	for (size_t i = 0; i < j->nthreads && !t; i++)
		if (j->threads[i].nid == nid)
			t = &j->threads[i];
	if (!t)
		return 0;
	*name = t->name;
	for (size_t i = 0; i < t->n && *n < max; i++) {
		ret = frame_loc(j, t->first + i, &locs[*n]);
		if (ret)
			return ret;
		(*n)++;
	}
	return 0;
}
