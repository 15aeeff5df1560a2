// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * gort.c - a Go program's goroutines from runtime.allgs, read with
 * process_vm_readv while the program runs (gort.h).
 *
 * Every g is read in one piece (its first G_READ bytes), checked, and
 * kept or dropped; nothing read is followed before it is checked
 * against what it must be (a stack pointer inside the g's own stack, a
 * pc inside the program's Go functions).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/bytes.h"
#include "sampler/log.h"
#include "sampler/proc.h"
#include "sampler/runtime/golabels.h"
#include "sampler/runtime/gort.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/gopclntab.h"
#include "sampler/unwind/maps.h"

#define GORT_MAX_G (1u << 20)	/* more than any program runs */
#define BSS_MAX (64u << 20)	/* of .bss searched for allgs */
#define BSS_CHUNK (1u << 20)	/* read at a time */
#define STACK_SIZE_MAX (1ull << 30)	/* Go's own limit on 64-bit */
#define SCAN_BIT 0x1000u	/* _Gscan */

/* Where runtime.g's fields are, and m.procid, for one Go version. */
struct g_layout {
	const char *version;	/* "go1.19": go1.19, go1.19.8, ...; or
				 * "DWARF" */
	unsigned stack_lo, stack_hi, m, sched_sp, sched_pc, sched_bp;
	unsigned status, goid, waitsince, waitreason, lockedm, gopc, startpc;
	unsigned labels;	/* g.labels, 0: not read */
	struct golabels_layout map;	/* of the labelMap it points at */
	unsigned size;		/* bytes read: past the last one used */
	unsigned m_procid;
	uint8_t wrapper;	/* funcID_wrapper: frames Go's traceback hides */
	const char *const *reasons;	/* waitReasonStrings */
	unsigned nreasons;
};

/* Go 1.19's runtime2.go, as it prints them. */
static const char *const reasons_119[] = {
	"", "GC assist marking", "IO wait", "chan receive (nil chan)",
	"chan send (nil chan)", "dumping heap", "garbage collection",
	"garbage collection scan", "panicwait", "select",
	"select (no cases)", "GC assist wait", "GC sweep wait",
	"GC scavenge wait", "chan receive", "chan send", "finalizer wait",
	"force gc (idle)", "semacquire", "sleep", "sync.Cond.Wait",
	"timer goroutine (idle)", "trace reader (blocked)",
	"wait for GC cycle", "GC worker (idle)", "preempted", "debug call",
};

/* From the DWARF of a program built by Debian's golang-go 1.19.8. */
static const struct g_layout layouts[] = {
	{ .version = "go1.19", .stack_lo = 0, .stack_hi = 8, .m = 48,
	  .sched_sp = 56, .sched_pc = 64, .sched_bp = 104, .status = 144,
	  .goid = 152, .waitsince = 168, .waitreason = 176, .lockedm = 232,
	  .gopc = 296,
	  .startpc = 312, .labels = 360, .size = 368, .m_procid = 72,
	  .wrapper = 21,
	  .reasons = reasons_119,
	  .nreasons = sizeof(reasons_119) / sizeof(reasons_119[0]) },
};

static const char *const status_names[] = {
	[GORT_IDLE] = "idle", [GORT_RUNNABLE] = "runnable",
	[GORT_RUNNING] = "running", [GORT_SYSCALL] = "syscall",
	[GORT_WAITING] = "waiting", [GORT_DEAD] = "dead",
	[GORT_COPYSTACK] = "copystack", [GORT_PREEMPTED] = "preempted",
};

#define MAX_REASONS 64
#define REASON_MAX 64		/* bytes of one wait reason */

/* One read: the layout, from the table or the program's DWARF, and the
 * wait reasons, Go's table or read from the program. */
struct gort {
	struct g_layout l;
	const char *reasons[MAX_REASONS];
	char rbuf[MAX_REASONS][REASON_MAX];
};

/* The members dwarf_layout() asks the DWARF for, in g_layout's order. */
static const char *const g_members[] = {
	"stack.lo", "stack.hi", "m", "sched.sp", "sched.pc", "sched.bp",
	"atomicstatus", "goid", "waitsince", "waitreason", "lockedm",
	"gopc", "startpc",
};

/* runtime.g's layout from the program's DWARF, where it has one (a
 * program not built with -w): any Go version. */
static bool dwarf_layout(struct dso *d, struct g_layout *l)
{
	static const char *const m_members[] = { "procid" };
	long off[sizeof(g_members) / sizeof(g_members[0])], procid;
	unsigned *dst[] = {
		&l->stack_lo, &l->stack_hi, &l->m, &l->sched_sp, &l->sched_pc,
		&l->sched_bp, &l->status, &l->goid, &l->waitsince,
		&l->waitreason, &l->lockedm, &l->gopc, &l->startpc,
	};

	if (dso_struct_offsets(d, "runtime", "runtime.g", g_members, off,
			       sizeof(off) / sizeof(off[0])) ||
	    dso_struct_offsets(d, "runtime", "runtime.m", m_members, &procid,
			       1) || procid < 0)
		return false;
	l->size = 0;
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		if (off[i] < 0 || off[i] > 4096)
			return false;
		*dst[i] = (unsigned)off[i];
		if (*dst[i] + 8 > l->size)
			l->size = *dst[i] + 8;
	}
	l->m_procid = (unsigned)procid;
	l->version = "DWARF";
	return true;
}

/* Whether version's runtime/pprof.labelMap is a map[string]string:
 * from Go 1.9 (labels came) to 1.20 (1.21 made it a slice). */
static bool labels_are_map(const char *version)
{
	unsigned minor;
	char c;

	return sscanf(version, "go1.%u%c", &minor, &c) >= 1 && minor >= 9 &&
	       minor <= 20;
}

/* Where g.labels is and how its map is laid out, into l: from the DWARF
 * where it says, else from the table t of the version (or none: labels
 * 0). */
static void labels_layout(struct dso *d, const char *version,
			  const struct g_layout *t, struct g_layout *l)
{
	static const char *const member[] = { "labels" };
	long off;

	l->labels = 0;
	if (!labels_are_map(version))
		return;
	if (!dso_struct_offsets(d, "runtime", "runtime.g", member, &off, 1) &&
	    off > 0 && off <= 4096 &&
	    !golabels_layout_dwarf(d, &l->map)) {
		l->labels = (unsigned)off;
	} else if (t && t->labels) {
		l->labels = t->labels;
		golabels_layout_119(&l->map);
	}
	if (l->labels + 8 > l->size)
		l->size = l->labels + 8;
}

/* Go's waitReasonStrings, read from the program where its symbol table
 * names them (any version): 0, or -ENOENT. */
static int read_reasons(struct gort *c, pid_t pid, struct map_entry *e)
{
	uint64_t va, size, str[2 * MAX_REASONS];
	size_t n;

	if (dso_object_vaddr(e->dso, "runtime.waitReasonStrings", &va, &size) ||
	    !size || size % 16 || size / 16 > MAX_REASONS ||
	    proc_mem_read(pid, va + e->bias, str, size))
		return -ENOENT;
	n = size / 16;
	for (size_t i = 0; i < n; i++) {
		uint64_t len = str[2 * i + 1];

		if (len >= REASON_MAX || (len && proc_mem_read(pid, str[2 * i],
							       c->rbuf[i],
							       len)))
			return -ENOENT;
		c->rbuf[i][len] = '\0';
		c->reasons[i] = c->rbuf[i];
	}
	c->l.reasons = c->reasons;
	c->l.nreasons = (unsigned)n;
	return 0;
}

void gort_free(struct gort *c)
{
	free(c);
}

struct reader {
	pid_t pid;
	const struct g_layout *l;
	const struct gopcln *tab;
	uint64_t bias;
	uint8_t *buf;		/* l->size */
};

static const struct g_layout *layout_of(const char *version)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		size_t n = strlen(layouts[i].version);

		if (!strncmp(version, layouts[i].version, n) &&
		    (version[n] == '\0' || version[n] == '.' ||
		     version[n] == 'r' || version[n] == 'b'))
			return &layouts[i];
	}
	return NULL;
}

/* The Go function holding pc, by name, or NULL. */
static const char *go_func(const struct reader *r, uint64_t pc)
{
	struct gopcln_func f;

	if (!pc || pc < r->bias || gopcln_func(r->tab, pc - r->bias, &f))
		return NULL;
	return f.name;
}

/* Goroutine 1 at g, with a stack: allgs' first entry. */
static bool looks_like_g1(struct reader *r, uint64_t g)
{
	const struct g_layout *l = r->l;
	uint64_t lo, hi;

	if (!g || g & 7 || proc_mem_read(r->pid, g, r->buf, l->size))
		return false;
	lo = ld_u64(r->buf, l->stack_lo);
	hi = ld_u64(r->buf, l->stack_hi);
	return (int64_t)ld_u64(r->buf, l->goid) == 1 && lo && lo < hi &&
	       hi - lo <= STACK_SIZE_MAX &&
	       (ld_u32(r->buf, l->status) & ~SCAN_BIT) <= GORT_PREEMPTED;
}

/* The slice header {array, len, cap} at hdr (an address of the
 * process), if it is allgs': its array's first g is goroutine 1. */
static bool allgs_at(struct reader *r, const uint64_t hdr[3], uint64_t *array,
		     uint64_t *len)
{
	uint64_t a = hdr[0], cnt = hdr[1], c = hdr[2], g;

	if (!a || a & 7 || !cnt || cnt > c || c > GORT_MAX_G ||
	    proc_mem_read(r->pid, a, &g, sizeof(g)) || !looks_like_g1(r, g))
		return false;
	*array = a;
	*len = cnt;
	return true;
}

/*
 * A stripped program: the slice header {array, len, cap} in .bss whose
 * array's first g is goroutine 1. allgs is the runtime's only slice of
 * g's in .bss that starts there (allm and allp hold m's and p's). Its
 * ELF address into *at.
 */
static int search_allgs(struct reader *r, struct map_entry *e,
			uint64_t *array, uint64_t *len, uint64_t *at_va)
{
	uint64_t vaddr, size, *bss;
	size_t got = 0, n;
	int ret = -ENOENT;

	if (dso_section(e->dso, ".bss", &vaddr, &size))
		return -ENOENT;
	if (size > BSS_MAX)
		size = BSS_MAX;
	bss = malloc(BSS_CHUNK + 16);
	if (!bss)
		return -ENOMEM;
	/* chunks that overlap by the two words a header may run over */
	for (uint64_t at = 0; at < size && ret; at += BSS_CHUNK) {
		n = proc_mem_copy(r->pid, vaddr + r->bias + at, bss,
				  size - at < BSS_CHUNK + 16 ? size - at :
							       BSS_CHUNK + 16);
		got += n;
		for (size_t i = 0; i + 3 <= n / 8 && i < BSS_CHUNK / 8 && ret;
		     i++) {
			if (!allgs_at(r, &bss[i], array, len))
				continue;
			*at_va = vaddr + at + 8 * i;
			ret = 0;
		}
		if (n < BSS_CHUNK)
			break;
	}
	free(bss);
	if (!got)
		return -ESRCH;
	return ret;
}

/* What the dso keeps of a stripped program (dso_memo_get()): where its
 * allgs is, found by search_allgs() once for every process of it. */
struct allgs_memo {
	uint64_t vaddr;		/* of the slice header */
};

/* A stripped program's allgs: where an earlier read of the same
 * program found it, else searched for (and kept for the next). */
static int stripped_allgs(struct reader *r, struct map_entry *e,
			  struct gort_stats *st, uint64_t *array,
			  uint64_t *len)
{
	struct allgs_memo m;
	uint64_t hdr[3];
	int ret;

	st->stripped = true;
	if (!dso_memo_get(e->dso, DSO_MEMO_GO_ALLGS, &m, sizeof(m)) &&
	    !proc_mem_read(r->pid, m.vaddr + r->bias, hdr, sizeof(hdr)) &&
	    allgs_at(r, hdr, array, len)) {
		st->remembered = true;
		return 0;
	}
	st->searched = true;
	ret = search_allgs(r, e, array, len, &m.vaddr);
	if (!ret)
		dso_memo_put(e->dso, DSO_MEMO_GO_ALLGS, &m, sizeof(m));
	return ret;
}

/* allgs' array and length, from the symbol table or by search. */
static int find_allgs(struct reader *r, struct map_entry *e,
		      struct gort_stats *st, uint64_t *array, uint64_t *len)
{
	uint64_t va, size, hdr[3], glen;

	if (dso_object_vaddr(e->dso, "runtime.allgs", &va, &size))
		return stripped_allgs(r, e, st, array, len);
	if (proc_mem_read(r->pid, va + r->bias, hdr, sizeof(hdr)))
		return -ESRCH;
	*array = hdr[0];
	*len = hdr[1];
	/* allglen is what the runtime publishes as safe to read */
	if (!dso_object_vaddr(e->dso, "runtime.allglen", &va, &size) &&
	    !proc_mem_read(r->pid, va + r->bias, &glen, sizeof(glen)) &&
	    glen < *len)
		*len = glen;
	if (*len > GORT_MAX_G || hdr[1] > hdr[2] || (*len && !*array))
		return -EINVAL;
	return 0;
}

/* One g at addr into *g: 1 kept, 0 not a goroutine (dead, idle), -1
 * inconsistent. */
static int read_g(struct reader *r, uint64_t addr, struct gort_g *g)
{
	const struct g_layout *l = r->l;
	const uint8_t *b = r->buf;
	uint32_t status;
	uint64_t m, procid;
	const char *start;

	if (!addr || addr & 7 || proc_mem_read(r->pid, addr, r->buf, l->size))
		return -1;
	memset(g, 0, sizeof(*g));
	g->addr = addr;
	g->layout = l;
	status = ld_u32(b, l->status) & ~SCAN_BIT;
	if (status == GORT_IDLE || status == GORT_DEAD)
		return 0;
	if (status >= sizeof(status_names) / sizeof(status_names[0]) ||
	    !status_names[status] || status == GORT_COPYSTACK)
		return -1;
	g->status = status;
	g->goid = (int64_t)ld_u64(b, l->goid);
	g->waitreason = b[l->waitreason];
	g->waitsince = (int64_t)ld_u64(b, l->waitsince);
	g->stack_lo = ld_u64(b, l->stack_lo);
	g->stack_hi = ld_u64(b, l->stack_hi);
	g->sp = ld_u64(b, l->sched_sp);
	g->pc = ld_u64(b, l->sched_pc);
	g->bp = ld_u64(b, l->sched_bp);
	g->locked = ld_u64(b, l->lockedm) != 0;
	g->gopc = ld_u64(b, l->gopc);
	g->labels = l->labels ? ld_u64(b, l->labels) : 0;
	if (g->goid <= 0 || !g->stack_lo || g->stack_lo >= g->stack_hi ||
	    g->stack_hi - g->stack_lo > STACK_SIZE_MAX)
		return -1;
	start = go_func(r, ld_u64(b, l->startpc));
	g->system = start && !strncmp(start, "runtime.", 8) &&
		    strcmp(start, "runtime.main");
	if (status == GORT_RUNNING || status == GORT_SYSCALL) {
		/* on a thread: its stack is the thread's */
		m = ld_u64(b, l->m);
		if (!m || m & 7 ||
		    proc_mem_read(r->pid, m + l->m_procid, &procid,
				  sizeof(procid)) ||
		    !procid || procid > INT32_MAX)
			return -1;
		g->tid = (pid_t)procid;
		return 1;
	}
	if (g->sp < g->stack_lo || g->sp >= g->stack_hi || !go_func(r, g->pc))
		return -1;
	return 1;
}

/* The layout of the program's runtime.g into c: DWARF first, else the
 * table of its version; its wait reasons from the program, else the
 * table's. */
static int find_layout(struct gort *c, pid_t pid, struct map_entry *e,
		       struct gort_stats *st)
{
	const struct g_layout *t = layout_of(st->version);

	if (dwarf_layout(e->dso, &c->l)) {
		st->dwarf = true;
		/* what the tables know that DWARF does not say */
		c->l.wrapper = t ? t->wrapper : 0xff;
		c->l.reasons = t ? t->reasons : NULL;
		c->l.nreasons = t ? t->nreasons : 0;
	} else if (t) {
		c->l = *t;
	} else {
		return -EPROTONOSUPPORT;
	}
	labels_layout(e->dso, st->version, t, &c->l);
	read_reasons(c, pid, e);
	return 0;
}

int gort_read(pid_t pid, struct proc_maps *maps, size_t max,
	      struct gort **ctx, struct gort_g **out, size_t *n,
	      struct gort_stats *st)
{
	struct map_entry *e = maps_main(maps);
	struct reader r = { .pid = pid };
	uint64_t array = 0, len = 0, *ptrs = NULL;
	struct gort_g *gs = NULL;
	struct gort *c = NULL;
	size_t k = 0;
	int ret;

	memset(st, 0, sizeof(*st));
	*out = NULL;
	*ctx = NULL;
	*n = 0;
	if (!e || !e->dso || !dso_is_go(e->dso) ||
	    !(r.tab = dso_gopcln(e->dso)))
		return -ENOENT;
	snprintf(st->version, sizeof(st->version), "%s",
		 gopcln_version(r.tab));
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	ret = find_layout(c, pid, e, st);
	if (ret) {
		free(c);
		return ret;
	}
	r.l = &c->l;
	r.bias = e->bias;
	r.buf = malloc(r.l->size);
	if (!r.buf) {
		free(c);
		return -ENOMEM;
	}
	ret = find_allgs(&r, e, st, &array, &len);
	if (ret)
		goto out;
	if (len > max) {
		st->unread = (unsigned)(len - max);
		len = max;
	}
	ptrs = malloc((len ? len : 1) * sizeof(*ptrs));
	gs = calloc(len ? len : 1, sizeof(*gs));
	ret = -ENOMEM;
	if (!ptrs || !gs)
		goto out;
	ret = -ESRCH;
	if (len && proc_mem_read(pid, array, ptrs, len * sizeof(*ptrs)))
		goto out;
	ret = 0;
	for (uint64_t i = 0; i < len; i++) {
		int kept = read_g(&r, ptrs[i], &gs[k]);

		st->seen++;
		if (kept > 0)
			k++;
		else if (kept == 0)
			st->dead++;
		else
			st->dropped++;
	}
	*out = gs;
	*n = k;
	*ctx = c;
	gs = NULL;
	c = NULL;
out:
	if (ret && ret != -ENOMEM)
		pr_info("gort: %d: goroutines not read (%s): %s", (int)pid,
			st->version, strerror(-ret));
	free(c);
	free(gs);
	free(ptrs);
	free(r.buf);
	return ret;
}

bool gort_unchanged(pid_t pid, const struct gort_g *g)
{
	const struct g_layout *l = g->layout;
	uint8_t b[4096 + 8];	/* dwarf_layout()'s bound */

	if (l->size > sizeof(b) || proc_mem_read(pid, g->addr, b, l->size))
		return false;
	return (ld_u32(b, l->status) & ~SCAN_BIT) == g->status &&
	       (int64_t)ld_u64(b, l->goid) == g->goid &&
	       ld_u64(b, l->sched_sp) == g->sp &&
	       ld_u64(b, l->sched_pc) == g->pc &&
	       ld_u64(b, l->sched_bp) == g->bp &&
	       (!l->labels || ld_u64(b, l->labels) == g->labels);
}

int gort_labels(pid_t pid, const struct gort_g *g, struct golabels **out)
{
	const struct g_layout *l = g->layout;

	*out = NULL;
	if (!l->labels)
		return -ENOENT;
	return golabels_read(pid, &l->map, g->labels, out);
}

const char *gort_status(const struct gort_g *g)
{
	const struct g_layout *l = g->layout;

	if (g->status == GORT_WAITING && g->waitreason && l->reasons)
		return g->waitreason < l->nreasons ? l->reasons[g->waitreason]
						   : "unknown wait reason";
	if (g->status < sizeof(status_names) / sizeof(status_names[0]) &&
	    status_names[g->status])
		return status_names[g->status];
	return "???";
}

int64_t gort_wait_minutes(const struct gort_g *g, uint64_t now_mono)
{
	if ((g->status != GORT_WAITING && g->status != GORT_SYSCALL) ||
	    g->waitsince <= 0 || (uint64_t)g->waitsince > now_mono)
		return 0;
	return (int64_t)((now_mono - (uint64_t)g->waitsince) / 60000000000ull);
}

bool gort_wrapper(const struct gort_g *g, struct proc_maps *maps,
		  uint64_t pc)
{
	const struct g_layout *l = g->layout;
	struct map_entry *e = maps_main(maps);
	const struct gopcln *tab;
	struct gopcln_func f;

	if (!e || !e->dso || pc < e->start || pc >= e->end)
		return false;
	tab = dso_gopcln(e->dso);
	return tab && !gopcln_func(tab, pc - e->bias, &f) &&
	       f.funcid == l->wrapper;
}

int gort_created_by(const struct gort_g *g, struct proc_maps *maps,
		    const char **func, const char **file, int *line)
{
	struct map_entry *e = maps_main(maps);
	struct gopcln_frame fr[8];
	const struct gopcln *tab;
	struct gopcln_func f;
	uint64_t pc;
	int n = 0;

	if (!e || !e->dso || g->gopc < e->start || g->gopc >= e->end ||
	    !(tab = dso_gopcln(e->dso)))
		return -ENOENT;
	pc = g->gopc - e->bias;
	/* as Go's printCreatedBy: not for main, nor a runtime function */
	if (g->goid == 1 || gopcln_func(tab, pc, &f) ||
	    (!strncmp(f.name, "runtime.", 8) &&
	     !(f.name[8] >= 'A' && f.name[8] <= 'Z')))
		return -ENOENT;
	/* gopc returns from the call to newproc: its line is the call's */
	if (pc > f.entry)
		pc--;
	if (gopcln_frames(tab, pc, fr, 8, &n) || !n || !fr[0].file)
		return -ENOENT;
	*func = f.name;
	*file = fr[0].file;
	*line = fr[0].line;
	return 0;
}
