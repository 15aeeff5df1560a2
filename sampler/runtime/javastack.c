// SPDX-License-Identifier: GPL-2.0-or-later
/* javastack.c - a HotSpot JVM's frames walked by their return addresses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/log.h"
#include "sampler/proc.h"
#include "sampler/runtime/javamethod.h"
#include "sampler/runtime/javastack.h"
#include "sampler/unwind/jitmap.h"
#include "sampler/unwind/maps.h"

#define RA_SLOTS 4096		/* remembered return addresses */

struct javastack {
	struct proc_maps *maps;
	pid_t pid;
	struct jitmap *map;	/* the JVM's perf map: what code is */
	struct javamethod *jm;	/* its tables: where the interpreter is */
	bool jm_tried;
	uint64_t interp_start, interp_end;	/* the interpreter, once seen */
	uint64_t call_ra;	/* the call stub's return address, or 0 */
	uint64_t ra_key[RA_SLOTS];	/* 0 = empty */
	bool ra_ok[RA_SLOTS];
};

static bool is_libjvm(const char *path)
{
	const char *base = strrchr(path, '/');

	return base && !strcmp(base + 1, "libjvm.so");
}

int javastack_new(struct proc_maps *maps, struct javastack **out)
{
	const struct map_entry *e;
	bool jvm = false;

	*out = NULL;
	for (size_t i = 0; !jvm && (e = maps_peek(maps, i)); i++)
		jvm = is_libjvm(e->path);
	if (!jvm)
		return 0;
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->maps = maps;
	(*out)->pid = maps_pid(maps);
	return 0;
}

void javastack_free(struct javastack *js)
{
	if (js) {
		jitmap_free(js->map);
		javamethod_free(js->jm);
	}
	free(js);
}

bool javastack_code(struct javastack *js, uint64_t pc)
{
	const struct map_entry *e = maps_find(js->maps, pc);

	return e && e->exec && !e->path[0];
}

/*
 * Where the interpreter is, from the JVM's tables (javamethod.h), asked
 * once: a JVM whose perf map is not written yet (before the first
 * session's attach has it written, or with no attach at all) still has
 * its interpreted frames found. Else the perf map tells, once seen.
 */
static void interp_find(struct javastack *js)
{
	int ret;

	js->jm_tried = true;
	ret = javamethod_new(js->maps, &js->jm);
	if (!ret)
		ret = javamethod_interpreter(js->jm, &js->interp_start,
					     &js->interp_end, &js->call_ra);
	if (ret) {
		js->interp_start = js->interp_end = js->call_ra = 0;
		pr_debug("java: %d: the interpreter not found in the JVM's "
			 "tables (%s): by the perf map", (int)js->pid,
			 strerror(-ret));
	}
}

/*
 * The perf map's name of the code at pc (java.h has the JVM write the
 * map), or NULL; "Interpreter" for the interpreter's code. Its range is
 * remembered once known: its calls push a return entry of the bytecode,
 * then jump, so its return addresses follow no call.
 */
static const char *code_name(struct javastack *js, uint64_t pc)
{
	uint64_t start, end;
	const char *name;

	if (!js->jm_tried)
		interp_find(js);
	if (js->interp_end && pc >= js->interp_start && pc < js->interp_end)
		return "Interpreter";
	if (!js->map && jitmap_new(js->pid, &js->map))
		return NULL;
	if (jitmap_lookup_range(js->map, pc, &name, &start, &end))
		return NULL;
	if (!strcmp(name, "Interpreter")) {
		js->interp_start = start;
		js->interp_end = end;
		return "Interpreter";
	}
	return name;
}

static bool interpreter(struct javastack *js, uint64_t w)
{
	const char *name = code_name(js, w);

	return name && !strcmp(name, "Interpreter");
}

/* The bytes before ra end a call: rel32, through a register, or through
 * memory (RIP-relative, or a register plus an 8- or 32-bit offset: the
 * vtable and itable calls). */
static bool after_call(const uint8_t b[8])
{
	return b[3] == 0xe8 ||				/* call rel32 */
	       (b[6] == 0xff && (b[7] & 0xf8) == 0xd0) ||	/* *%reg */
	       (b[5] == 0xff && (b[6] & 0xf8) == 0x50) ||	/* *d8(%reg) */
	       (b[2] == 0xff && (b[3] == 0x15 ||		/* *d32(%rip) */
				 (b[3] & 0xf8) == 0x90));	/* *d32(%reg) */
}

/* Whether w returns into the JVM's code right after a call. */
static bool return_address(struct javastack *js, uint64_t w)
{
	size_t k = (w * 0x9e3779b97f4a7c15ull) >> 52;	/* 12 bits */
	const struct map_entry *e;
	uint8_t b[8];
	bool ok;

	if (w < 4096)
		return false;
	if (js->ra_key[k] == w)
		return js->ra_ok[k];
	e = maps_find(js->maps, w);
	ok = e && e->exec && (!e->path[0] || is_libjvm(e->path)) &&
	     w - 8 >= e->start &&
	     ((!e->path[0] && interpreter(js, w)) ||
	      (!proc_mem_read(js->pid, w - 8, b, sizeof(b)) && after_call(b)));
	/* not remembered while the interpreter is not known yet */
	if (ok || js->interp_end || (e && e->path[0])) {
		js->ra_key[k] = w;
		js->ra_ok[k] = ok;
	}
	return ok;
}

/* Frames built by "enter" that keep RBP pointing at it: the
 * interpreter's, and the call stub's (where JavaCalls enters Java; a
 * caller's pc in it is the one before its return address, known from
 * the JVM's tables before the perf map is). */
static bool fp_frame(struct javastack *js, uint64_t pc, bool *interp)
{
	const char *name = code_name(js, pc);

	*interp = name && !strcmp(name, "Interpreter");
	if (js->call_ra && pc + 1 == js->call_ra)
		return true;
	return name && (*interp || !strncmp(name, "StubRoutines", 12));
}

/* The interpreter keeps its Method at RBP - 3 words and its bytecode
 * pointer at RBP - 8 (x86-64's interpreter_frame_method_offset and
 * interpreter_frame_bcp_offset; the bcp as saved at the frame's last
 * call, or its entry); a word that is no pointer into memory that is
 * not code is not taken. */
static uint64_t frame_method(struct javastack *js, javastack_word_fn word,
			     void *arg, uint64_t bp)
{
	const struct map_entry *e;
	uint64_t m, bcp;

	if (!word(arg, bp - 24, &m) || !m || m & 7)
		return 0;
	e = maps_find(js->maps, m);
	if (!e || e->exec)
		return 0;
	if (!word(arg, bp - 64, &bcp))
		return m;
	return javastack_interp_pc(m, bcp);
}

bool javastack_step(struct javastack *js, javastack_word_fn word, void *arg,
		    uint64_t pc, uint64_t sp, uint64_t bp, uint64_t *ra,
		    uint64_t *caller_sp, uint64_t *caller_bp, bool *bp_known,
		    uint64_t *method)
{
	bool interp;
	uint64_t w;

	*method = 0;
	if (fp_frame(js, pc, &interp)) {
		if (bp <= sp || bp & 7 || !word(arg, bp + 8, ra) ||
		    !word(arg, bp, caller_bp))
			return false;
		if (interp)
			*method = frame_method(js, word, arg, bp);
		*caller_sp = bp + 16;
		*bp_known = true;
		return true;
	}
	for (uint64_t a = sp; a < sp + JAVASTACK_SCAN_BYTES; a += 8) {
		if (!word(arg, a, &w))
			return false;
		if (!return_address(js, w))
			continue;
		*ra = w;
		*caller_sp = a + 8;
		/* RBP was pushed below the return address, unless the frame
		 * is not built yet (or torn down): then it is still RBP */
		*bp_known = true;
		*caller_bp = bp;
		if (a > sp && !word(arg, a - 8, caller_bp))
			*bp_known = false;
		return true;
	}
	return false;
}
