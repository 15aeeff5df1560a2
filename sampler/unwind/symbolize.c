// SPDX-License-Identifier: GPL-2.0-or-later
/* symbolize.c - pc -> profile location, once per distinct pc. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/unwind/dso.h"
#include "sampler/unwind/jitmap.h"
#include "sampler/unwind/maps.h"
#include "sampler/model/profile.h"
#include "sampler/runtime/java.h"
#include "sampler/runtime/javastack.h"
#include "sampler/runtime/python.h"
#include "sampler/unwind/symbolize.h"

#define MAX_INLINE 16

struct pc_slot {
	uint64_t pc;		/* 0 = empty */
	uint64_t loc_id;
	uint64_t unnamed_jit;	/* JIT code with no name yet */
};

struct map_slot {
	uint64_t start;		/* mapping start, 0 = empty */
	uint64_t mapping_id;
};

/* A function a dso named, by the addresses of its strings (owned by the
 * dso, so stable while the maps hold it): its id in the profile. */
struct fn_slot {
	const char *function, *system_name, *file;
	int start_line;
	uint64_t id;		/* 0 = empty */
};

/* Functions memoized per session: the table doubles from FN_MEMO_MIN
 * slots, up to FN_MEMO_MAX; past half of that it starts over. */
#define FN_MEMO_MIN	256
#define FN_MEMO_MAX	(1u << 16)

static int add_mapping(struct symbolizer *s, struct map_entry *e,
		       uint64_t *id);

struct symbolizer {
	struct profile *p;
	struct proc_maps *maps;
	struct pc_slot *pcs;
	size_t pcs_cap, pcs_n;
	struct map_slot *mappings;
	size_t map_cap, map_n;
	struct fn_slot *fns;	/* fns_cap slots, once needed */
	size_t fns_n, fns_cap;
	unsigned fns_generation;	/* of the maps the memo's strings
					 * came from */
	struct jitmap *jit;	/* created on the first pc in JIT code */
	struct pyrt *py;	/* NULL: the process runs no CPython */
	struct javart *java;	/* NULL: the process is no JVM */
	bool unnamed_jit;	/* the last new location's pc: JIT code with
				 * no name */
};

static inline size_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x;
}

/* Open addressing tables of (key != 0, value) pairs: both tables above
 * have that shape, so one pair of helpers serves both. */
static uint64_t *slot_find(void *v, size_t cap, size_t stride, uint64_t key,
			   bool *found)
{
	for (size_t i = hash64(key) & (cap - 1);; i = (i + 1) & (cap - 1)) {
		uint64_t *s = (uint64_t *)((char *)v + i * stride);

		if (s[0] == key || !s[0]) {
			*found = s[0] == key;
			return s;
		}
	}
}

static int slot_grow(void **v, size_t *cap, size_t n, size_t stride)
{
	size_t ncap = *cap ? *cap * 2 : 1024;
	void *nv;
	bool found;

	if (*cap && n * 2 < *cap)
		return 0;
	nv = calloc(ncap, stride);
	if (!nv)
		return -ENOMEM;
	for (size_t i = 0; i < *cap; i++) {
		uint64_t *s = (uint64_t *)((char *)*v + i * stride);

		if (s[0])
			memcpy(slot_find(nv, ncap, stride, s[0], &found), s,
			       stride);
	}
	free(*v);
	*v = nv;
	*cap = ncap;
	return 0;
}

int symbolizer_new(struct profile *p, struct proc_maps *maps,
		   struct symbolizer **out)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	struct map_entry *main_map;
	uint64_t id;

	if (!s)
		return -ENOMEM;
	s->p = p;
	s->maps = maps;
	if (slot_grow((void **)&s->pcs, &s->pcs_cap, 0, sizeof(*s->pcs)) ||
	    slot_grow((void **)&s->mappings, &s->map_cap, 0,
		      sizeof(*s->mappings))) {
		symbolizer_free(s);
		return -ENOMEM;
	}
	*out = s;
	/* pprof takes the first mapping for the main binary. */
	main_map = maps_main(maps);
	if (main_map)
		add_mapping(s, main_map, &id);
	if (pyrt_open(maps, p, &s->py) || javart_open(maps, p, &s->java)) {
		symbolizer_free(s);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

size_t symbolizer_mem_bytes(const struct symbolizer *s)
{
	if (!s)
		return 0;
	return sizeof(*s) + s->pcs_cap * sizeof(*s->pcs) +
	       s->map_cap * sizeof(*s->mappings) +
	       s->fns_cap * sizeof(*s->fns);
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	jitmap_free(s->jit);
	pyrt_free(s->py);
	javart_free(s->java);
	free(s->pcs);
	free(s->mappings);
	free(s->fns);
	free(s);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static int add_mapping(struct symbolizer *s, struct map_entry *e,
		       uint64_t *id)
{
	struct pf_mapping m = {
		.start = e->start, .limit = e->end, .offset = e->pgoff,
	};
	struct dso_caps caps = { 0 };
	struct map_slot *slot;
	bool found;
	int ret;

	slot = (struct map_slot *)slot_find(s->mappings, s->map_cap,
					    sizeof(*slot), e->start, &found);
	if (found) {
		*id = slot->mapping_id;
		return 0;
	}
	if (e->dso)
		dso_caps(e->dso, &caps);
	m.filename = profile_intern(s->p, e->path);
	m.build_id = profile_intern(s->p, e->dso ? dso_build_id(e->dso) : "");
	if (m.filename < 0 || m.build_id < 0)
		return -ENOMEM;
	/* Every location we write is symbolized already, or has no symbol
	 * to find: say so, so that pprof does not try again. */
	m.has_functions = true;
	m.has_filenames = caps.filenames;
	m.has_line_numbers = caps.line_numbers;
	m.has_inline_frames = caps.inline_frames;
	ret = profile_add_mapping(s->p, &m, id);
	if (ret)
		return ret;
	slot->start = e->start;
	slot->mapping_id = *id;
	s->map_n++;
	return slot_grow((void **)&s->mappings, &s->map_cap, s->map_n,
			 sizeof(*slot));
}

/* Executable memory in no ELF file is a JIT compiler's: its runtime may
 * name it in a perf map. A JVM is asked to write its map again when a pc
 * has no name (java.h), at most every JAVA_PERFMAP_MS. A JVM's compiled
 * method gets the methods inlined into it and lines (javart_compiled()),
 * else its name alone. */
static void jit_frame(struct symbolizer *s, const struct map_entry *e,
		      uint64_t pc, struct dso_frame *f, int *nf,
		      bool *runtime)
{
	struct javart_frame jf[MAX_INLINE];
	const char *name = NULL;
	uint64_t start, end;
	int nj;

	if (!e || !e->exec || e->dso)
		return;
	if (!s->jit && jitmap_new(maps_pid(s->maps), &s->jit))
		return;
	if (jitmap_lookup_range(s->jit, pc, &name, &start, &end) &&
	    !javart_perfmap(s->java)) {
		jitmap_reopen(s->jit);
		if (jitmap_lookup_range(s->jit, pc, &name, &start, &end))
			name = NULL;
	}
	s->unnamed_jit = !name;
	if (!name)
		return;
	*f = (struct dso_frame){ .function = name, .system_name = name };
	*nf = 1;
	*runtime = s->java && javart_compiled_method(name);
	if (!*runtime || javart_compiled(s->java, pc, start, end - start,
					 name, jf, MAX_INLINE, &nj))
		return;
	for (int i = 0; i < nj; i++)
		f[i] = (struct dso_frame){ .function = jf[i].name,
					   .system_name = jf[i].name,
					   .file = jf[i].file[0] ?
						   jf[i].file : NULL,
					   .line = jf[i].line };
	*nf = nj;
}

/*
 * The function id of a frame a dso gave: interned once per distinct
 * function in a session, later frames found by the addresses of the
 * dso's strings (a pc's frames repeat those of the pcs around it), not
 * by hashing and comparing the strings. The memo is dropped when the
 * maps change (a dso let go takes its strings with it), and when full.
 */
static size_t fn_hash(const struct dso_frame *f)
{
	return hash64((uintptr_t)f->function ^
		      hash64((uintptr_t)f->system_name ^
			     hash64((uintptr_t)f->file ^
				    (uint64_t)f->start_line)));
}

/* The slot of f in the memo: its own, or the empty one to fill. */
static struct fn_slot *fn_find(struct fn_slot *t, size_t cap,
			       const struct dso_frame *f)
{
	for (size_t i = fn_hash(f) & (cap - 1);; i = (i + 1) & (cap - 1)) {
		struct fn_slot *e = &t[i];

		if (!e->id || (e->function == f->function &&
			       e->system_name == f->system_name &&
			       e->file == f->file &&
			       e->start_line == f->start_line))
			return e;
	}
}

/* Room for one more function in the memo: it doubles, or starts over
 * (at its bound, or when the maps changed: a dso let go takes its
 * strings with it). false without memory (the memo is not used). */
static bool fn_room(struct symbolizer *s)
{
	size_t cap = s->fns_cap ? s->fns_cap * 2 : FN_MEMO_MIN;
	struct fn_slot *t;

	if (s->fns_generation != maps_generation(s->maps) ||
	    (s->fns_n + 1) * 2 > FN_MEMO_MAX) {
		if (s->fns)
			memset(s->fns, 0, s->fns_cap * sizeof(*s->fns));
		s->fns_n = 0;
		s->fns_generation = maps_generation(s->maps);
	}
	if (s->fns && (s->fns_n + 1) * 2 <= s->fns_cap)
		return true;
	t = calloc(cap, sizeof(*t));
	if (!t)
		return false;
	for (size_t i = 0; i < s->fns_cap; i++)
		if (s->fns[i].id) {
			struct dso_frame f = {
				.function = s->fns[i].function,
				.system_name = s->fns[i].system_name,
				.file = s->fns[i].file,
				.start_line = s->fns[i].start_line,
			};

			*fn_find(t, cap, &f) = s->fns[i];
		}
	free(s->fns);
	s->fns = t;
	s->fns_cap = cap;
	return true;
}

/*
 * The function id of a frame a dso gave: interned once per distinct
 * function in a session, later frames found by the addresses of the
 * dso's strings (a pc's frames repeat those of the pcs around it), not
 * by hashing and comparing the strings.
 */
static int dso_function(struct symbolizer *s, const struct dso_frame *f,
			uint64_t *id)
{
	struct fn_slot *e;
	int ret;

	if (!fn_room(s))
		return profile_add_function(s->p, f->function, f->system_name,
					    f->file, f->start_line, id);
	e = fn_find(s->fns, s->fns_cap, f);
	if (e->id) {
		*id = e->id;
		return 0;
	}
	ret = profile_add_function(s->p, f->function, f->system_name, f->file,
				   f->start_line, id);
	if (ret)
		return ret;
	*e = (struct fn_slot){ .function = f->function,
			       .system_name = f->system_name, .file = f->file,
			       .start_line = f->start_line, .id = *id };
	s->fns_n++;
	return 0;
}

/* Lines for a pc: its symbolized frames, else one "object+0xoff" frame. */
static int make_lines(struct symbolizer *s, struct map_entry *e,
		      uint64_t pc, struct pf_line *lines, uint32_t *n)
{
	struct dso_frame frames[MAX_INLINE];
	char fallback[256], method[512], file[256];
	bool runtime = false;	/* a Java method's frame */
	bool from_dso = e && e->dso;	/* the strings are the dso's */
	uint16_t bcp16;
	int nf = 0, ret, line;

	if (e && e->dso)
		dso_symbolize(e->dso, pc - e->bias, frames, MAX_INLINE, &nf);
	else if (e && !e->exec && s->java &&
		 !javart_method(s->java, pc, method, sizeof(method), file,
				sizeof(file), &line)) {
		/* an interpreted frame's Method (javastack.h) */
		frames[0] = (struct dso_frame){ .function = method,
						.system_name = method,
						.file = file[0] ? file : NULL,
						.line = line };
		nf = 1;
		runtime = true;
	} else {
		jit_frame(s, e, pc, frames, &nf, &runtime);
	}
	for (int i = 0; i < nf; i++) {
		ret = from_dso ? dso_function(s, &frames[i],
					      &lines[i].function_id) :
		      profile_add_function(s->p, frames[i].function,
					   frames[i].system_name,
					   frames[i].file,
					   frames[i].start_line,
					   &lines[i].function_id);
		if (!ret && runtime)
			ret = profile_mark_runtime(s->p, lines[i].function_id);
		if (ret)
			return ret;
		lines[i].line = frames[i].line;
	}
	if (nf) {
		*n = nf;
		return 0;
	}
	/* an interpreted frame whose Method has no name: its address */
	if (s->java)
		javastack_interp_split(pc, &pc, &bcp16);
	/* The ELF address nm and addr2line take, where the file is known;
	 * past a file that cannot be read, its offset in it. */
	if (e && e->dso)
		snprintf(fallback, sizeof(fallback), "%s+0x%" PRIx64,
			 base_name(e->path), pc - e->bias);
	else if (e && e->path[0])
		snprintf(fallback, sizeof(fallback), "%s+0x%" PRIx64,
			 base_name(e->path), pc - e->start + e->pgoff);
	else
		snprintf(fallback, sizeof(fallback), "[unknown 0x%" PRIx64 "]",
			 pc);
	ret = profile_add_function(s->p, fallback, fallback, NULL, 0,
				   &lines[0].function_id);
	lines[0].line = 0;
	*n = 1;
	return ret;
}

static int new_location(struct symbolizer *s, uint64_t pc, uint64_t *loc_id)
{
	struct pf_line lines[MAX_INLINE];
	uint64_t mapping_id = 0, addr = pc;
	struct map_entry *e;
	uint16_t bcp16;
	uint32_t n;
	int ret;

	/* an interpreted Java frame: its Method's address, and where in it
	 * (javastack.h), which make_lines() reads */
	if (s->java)
		javastack_interp_split(pc, &addr, &bcp16);
	e = maps_find(s->maps, addr);
	if (!e && !maps_reload(s->maps))
		e = maps_find(s->maps, addr);
	if (e) {
		ret = add_mapping(s, e, &mapping_id);
		if (ret)
			return ret;
	}
	s->unnamed_jit = false;
	ret = make_lines(s, e, pc, lines, &n);
	if (ret)
		return ret;
	return profile_add_location(s->p, mapping_id, addr, lines, n, loc_id);
}

/* Whether JIT code at pc that had no name may have one now: a JVM's once
 * it is due to write its map again; another runtime's once its map has
 * the line. The map is read again at most every JITMAP_RELOAD_MS, so the
 * pcs of code that ran before its line was read - at 999 Hz, every pc of
 * a hot loop - kept no name for the whole read: node started with the
 * read had 210 of 3,183 samples in its JIT code named in one CI run. A
 * retry costs a binary search, and a read of the map at most every
 * JITMAP_RELOAD_MS. */
static bool jit_named_now(struct symbolizer *s, uint64_t pc)
{
	const char *name;
	uint64_t start, end;

	if (s->java)
		return javart_perfmap_due(s->java);
	return s->jit && !jitmap_lookup_range(s->jit, pc, &name, &start, &end);
}

int symbolizer_location(struct symbolizer *s, uint64_t pc, uint64_t *loc_id)
{
	struct pc_slot *slot;
	uint64_t key = pc ? pc : 1;	/* 0 marks an empty slot */
	bool found;
	int ret;

	slot = (struct pc_slot *)slot_find(s->pcs, s->pcs_cap, sizeof(*slot),
					   key, &found);
	if (found && !(slot->unnamed_jit && jit_named_now(s, pc))) {
		*loc_id = slot->loc_id;
		return 0;
	}
	ret = new_location(s, pc, loc_id);
	if (ret)
		return ret;
	slot->loc_id = *loc_id;
	slot->unnamed_jit = s->unnamed_jit;
	if (found)
		return 0;
	slot->pc = key;
	s->pcs_n++;
	return slot_grow((void **)&s->pcs, &s->pcs_cap, s->pcs_n,
			 sizeof(*slot));
}

/*
 * A JVM's thread with Java frames in the last thread dump: its native
 * frames up to the first one in code of no ELF file (the JIT's or the
 * interpreter's, where unwinding by CFI ends), then its Java frames.
 */
static int java_merge(struct symbolizer *s, pid_t tid, const uint64_t *pcs,
		      int n, uint64_t *locs, int max, int *nlocs)
{
	const struct map_entry *e;
	const char *name;
	int cut = 0, nj, ret;

	if (*nlocs != n)
		return 0;
	/* no dump, or no Java thread: nothing to look at */
	javart_frames(s->java, tid, NULL, 0, &nj, &name);
	if (!name)
		return 0;
	while (cut < n) {
		e = maps_find(s->maps, pcs[cut]);
		if (!e || !e->dso)
			break;
		cut++;
	}
	ret = javart_frames(s->java, tid, &locs[cut], max - cut, &nj, &name);
	if (!ret && nj)
		*nlocs = cut + nj;
	return ret;
}

static int native_location(void *arg, uint64_t pc, uint64_t *loc_id)
{
	return symbolizer_location(arg, pc, loc_id);
}

int symbolizer_stack(struct symbolizer *s, pid_t tid, const uint64_t *pcs,
		     int n, uint64_t *locs, int max, int *nlocs,
		     const char **gil)
{
	enum pyrt_gil g;
	int ret;

	ret = pyrt_locations(s->py, &(struct pyrt_native){
				.location = native_location, .arg = s },
			     tid, pcs, n, locs, max, nlocs, &g);
	if (gil)
		*gil = g == PYRT_GIL_HELD ? "held" :
		       g == PYRT_GIL_NOT_HELD ? "not held" : NULL;
	if (!ret && s->java && !s->py)
		ret = java_merge(s, tid, pcs, n, locs, max, nlocs);
	return ret;
}

int symbolizer_dump(struct symbolizer *s)
{
	return s ? javart_dump(s->java) : 0;
}

const char *symbolizer_thread_name(struct symbolizer *s, pid_t tid)
{
	const char *name = NULL;
	int n;

	if (s && s->java)
		javart_frames(s->java, tid, NULL, 0, &n, &name);
	else if (s)
		name = pyrt_thread_name(s->py, tid);
	return name;
}

void symbolizer_allow_attach(struct symbolizer *s)
{
	if (s)
		javart_allow_attach(s->java);
}

int symbolizer_hold(struct symbolizer *s, pid_t tid)
{
	return pyrt_snapshot(s->py, tid);
}

int symbolizer_note(struct symbolizer *s)
{
	return s ? pyrt_note(s->py) : 0;
}

bool symbolizer_runtime(const struct symbolizer *s)
{
	return s && s->py;
}

struct pyrt *symbolizer_python(struct symbolizer *s)
{
	return s ? s->py : NULL;
}
