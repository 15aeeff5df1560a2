// SPDX-License-Identifier: GPL-2.0-or-later
/* javamethod.c - a HotSpot Method's name through the JVM's own tables. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/log.h"
#include "sampler/proc.h"
#include "sampler/runtime/javamethod.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/maps.h"

#define MAX_ENTRIES 20000	/* of the tables: HotSpot 17 has ~3000 */

enum field {
	F_CONST_METHOD, F_CONSTANTS, F_NAME_INDEX, F_POOL_HOLDER,
	F_KLASS_NAME, F_SYM_LENGTH, F_SYM_BODY,
	F__REQUIRED,
	/* for lines (javamethod_line()): without them, names only */
	F_CM_SIZE = F__REQUIRED, F_CM_FLAGS, F_CODE_SIZE, F_SOURCE_FILE,
	F__LINES,
	/* for compiled methods' scopes (javascope.h): without them, none */
	F_SIG_INDEX = F__LINES, F_CB_SIZE, F_CB_HEADER_SIZE, F_CB_CODE_BEGIN,
	F_CB_CODE_END, F_CM_METHOD, F_CM_SCOPES_DATA, F_NM_METADATA,
	F_NM_SCOPES_PCS, F_NM_DEPENDENCIES, F_PC_OFFSET,
	F_PC_SCOPE,
	F__SCOPES,
	/* where the interpreter is (javamethod_interpreter()) */
	F_INTERP_CODE = F__SCOPES, F_SQ_BUFFER, F_SQ_LIMIT, F_CALL_STUB_RA,
	F__COUNT
};

static const struct {
	const char *type, *field;
} fields[F__COUNT] = {
	[F_CONST_METHOD] = { "Method", "_constMethod" },
	[F_CONSTANTS] = { "ConstMethod", "_constants" },
	[F_NAME_INDEX] = { "ConstMethod", "_name_index" },
	[F_POOL_HOLDER] = { "ConstantPool", "_pool_holder" },
	[F_KLASS_NAME] = { "Klass", "_name" },
	[F_SYM_LENGTH] = { "Symbol", "_length" },
	[F_SYM_BODY] = { "Symbol", "_body" },
	[F_CM_SIZE] = { "ConstMethod", "_constMethod_size" },
	[F_CM_FLAGS] = { "ConstMethod", "_flags" },
	[F_CODE_SIZE] = { "ConstMethod", "_code_size" },
	[F_SOURCE_FILE] = { "ConstantPool", "_source_file_name_index" },
	[F_SIG_INDEX] = { "ConstMethod", "_signature_index" },
	[F_CB_SIZE] = { "CodeBlob", "_size" },
	[F_CB_HEADER_SIZE] = { "CodeBlob", "_header_size" },
	[F_CB_CODE_BEGIN] = { "CodeBlob", "_code_begin" },
	[F_CB_CODE_END] = { "CodeBlob", "_code_end" },
	[F_CM_METHOD] = { "CompiledMethod", "_method" },
	[F_CM_SCOPES_DATA] = { "CompiledMethod", "_scopes_data_begin" },
	[F_NM_METADATA] = { "nmethod", "_metadata_offset" },
	[F_NM_SCOPES_PCS] = { "nmethod", "_scopes_pcs_offset" },
	[F_NM_DEPENDENCIES] = { "nmethod", "_dependencies_offset" },
	[F_PC_OFFSET] = { "PcDesc", "_pc_offset" },
	[F_PC_SCOPE] = { "PcDesc", "_scope_decode_offset" },
	/* a static field: its address, less libjvm's bias */
	[F_INTERP_CODE] = { "AbstractInterpreter", "_code" },
	[F_SQ_BUFFER] = { "StubQueue", "_stub_buffer" },
	[F_SQ_LIMIT] = { "StubQueue", "_buffer_limit" },
	[F_CALL_STUB_RA] = { "StubRoutines", "_call_stub_return_address" },
};

/* Static fields: their address is kept (less libjvm's bias), not an
 * offset. */
static bool is_static(int f)
{
	return f == F_INTERP_CODE || f == F_CALL_STUB_RA;
}

struct javamethod {
	struct proc_maps *maps;
	pid_t pid;
	bool tried, ready;
	bool lines;		/* the fields and sizes lines need are known */
	bool scopes;		/* ... and those of compiled methods */
	bool interp;		/* those of the interpreter's place */
	uint64_t off[F__COUNT];
	uint64_t nm_size;	/* sizeof(nmethod) */
	uint64_t pc_size;	/* sizeof(PcDesc) */
	uint64_t pool_size;	/* sizeof(ConstantPool): its slots follow */
	uint64_t cm_size;	/* sizeof(ConstMethod): its bytecodes follow */
	uint64_t has_lines;	/* ConstMethod::_has_linenumber_table */
};

/*
 * The offsets are constants of a libjvm.so build: found once per build
 * in the daemon, not once per session, since finding them costs
 * thousands of reads of the target and a scan of libjvm's symbols
 * (milliseconds, as much as a few thousand samples). They are kept with
 * libjvm.so's dso (dso_memo_get()), which the cache shares between the
 * processes that map the same file, for as long as it keeps the object.
 */
struct jvm_memo {
	uint64_t off[F__COUNT];
	uint64_t pool_size, cm_size, has_lines, nm_size, pc_size;
	bool lines, scopes, interp;
};

static bool known_get(struct javamethod *m, struct dso *d)
{
	struct jvm_memo k;

	if (dso_memo_get(d, DSO_MEMO_JVM_LAYOUT, &k, sizeof(k)))
		return false;
	memcpy(m->off, k.off, sizeof(m->off));
	m->pool_size = k.pool_size;
	m->cm_size = k.cm_size;
	m->has_lines = k.has_lines;
	m->nm_size = k.nm_size;
	m->pc_size = k.pc_size;
	m->lines = k.lines;
	m->scopes = k.scopes;
	m->interp = k.interp;
	return true;
}

static void known_put(const struct javamethod *m, struct dso *d)
{
	struct jvm_memo k = {
		.pool_size = m->pool_size, .cm_size = m->cm_size,
		.has_lines = m->has_lines, .nm_size = m->nm_size,
		.pc_size = m->pc_size, .lines = m->lines,
		.scopes = m->scopes, .interp = m->interp,
	};

	memcpy(k.off, m->off, sizeof(k.off));
	dso_memo_put(d, DSO_MEMO_JVM_LAYOUT, &k, sizeof(k));
}

int javamethod_new(struct proc_maps *maps, struct javamethod **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->maps = maps;
	(*out)->pid = maps_pid(maps);
	return 0;
}

void javamethod_free(struct javamethod *m)
{
	free(m);
}

static int rd(struct javamethod *m, uint64_t addr, void *buf, size_t len)
{
	return addr ? proc_mem_read(m->pid, addr, buf, len) : -EFAULT;
}

static int rd64(struct javamethod *m, uint64_t addr, uint64_t *v)
{
	return rd(m, addr, v, sizeof(*v));
}

/* A C string of the target, at most size - 1 bytes. */
static int rd_str(struct javamethod *m, uint64_t addr, char *buf,
		  size_t size)
{
	memset(buf, 0, size);
	/* may run into an unreadable page: read less */
	for (size_t len = size - 1; len >= 8; len /= 2)
		if (!rd(m, addr, buf, len)) {
			buf[len] = '\0';
			return 0;
		}
	return -EFAULT;
}

/* The value of a libjvm.so symbol that holds a 64-bit number. */
static int sym64(struct javamethod *m, struct map_entry *e, const char *name,
		 uint64_t *v)
{
	uint64_t vaddr, size;

	if (dso_object_vaddr(e->dso, name, &vaddr, &size))
		return -ENOENT;
	return rd64(m, vaddr + e->bias, v);
}

static struct map_entry *libjvm(struct javamethod *m)
{
	for (size_t i = 0; i < maps_count(m->maps); i++) {
		const struct map_entry *p = maps_peek(m->maps, i);
		const char *base = strrchr(p->path, '/');
		struct map_entry *e;

		if (!p->exec || !base || strcmp(base + 1, "libjvm.so"))
			continue;
		e = maps_at(m->maps, i);
		if (e->dso)
			return e;
	}
	return NULL;
}

/* Whether one of the fields wanted is of type name. */
static bool type_wanted(const char *name)
{
	for (int f = 0; f < F__COUNT; f++)
		if (!strcmp(name, fields[f].type))
			return true;
	return false;
}

/* The field offsets out of gHotSpotVMStructs: its entries read by the
 * chunk, a type's name read once for its run of entries, a field's name
 * only for the types wanted. */
static int read_structs(struct javamethod *m, struct map_entry *e)
{
	uint64_t base, o_type, o_field, o_off, o_addr, stride, tp, fp;
	uint64_t last_tp = 0;
	uint8_t chunk[4096];
	char type[64], field[64];
	bool wanted = false;
	unsigned found = 0, per, first = 0, have = 0;

	if (sym64(m, e, "gHotSpotVMStructs", &base) ||
	    sym64(m, e, "gHotSpotVMStructEntryTypeNameOffset", &o_type) ||
	    sym64(m, e, "gHotSpotVMStructEntryFieldNameOffset", &o_field) ||
	    sym64(m, e, "gHotSpotVMStructEntryOffsetOffset", &o_off) ||
	    sym64(m, e, "gHotSpotVMStructEntryArrayStride", &stride))
		return -ENOENT;
	if (!stride || stride > sizeof(chunk) || o_type > stride - 8 ||
	    o_field > stride - 8 || o_off > stride - 8)
		return -ENOENT;
	/* a static field's address (none: no interpreter's place) */
	if (sym64(m, e, "gHotSpotVMStructEntryAddressOffset", &o_addr) ||
	    o_addr > stride - 8)
		o_addr = UINT64_MAX;
	per = sizeof(chunk) / stride;
	for (unsigned i = 0; i < MAX_ENTRIES && found < F__COUNT; i++) {
		const uint8_t *entry;

		if (i >= first + have) {
			/* the last chunk may run past the map: one entry */
			first = i;
			have = per;
			if (rd(m, base + i * stride, chunk, per * stride)) {
				have = 1;
				if (rd(m, base + i * stride, chunk, stride))
					return -EFAULT;
			}
		}
		entry = chunk + (i - first) * stride;
		memcpy(&tp, entry + o_type, 8);
		if (!tp)
			break;	/* the table's end */
		if (tp != last_tp) {
			last_tp = tp;
			wanted = !rd_str(m, tp, type, sizeof(type)) &&
				 type_wanted(type);
		}
		memcpy(&fp, entry + o_field, 8);
		if (!wanted || !fp || rd_str(m, fp, field, sizeof(field)))
			continue;
		for (int f = 0; f < F__COUNT; f++) {
			if (strcmp(type, fields[f].type) ||
			    strcmp(field, fields[f].field) || m->off[f])
				continue;
			if (is_static(f)) {
				if (o_addr == UINT64_MAX)
					continue;
				memcpy(&m->off[f], entry + o_addr, 8);
				m->off[f] -= e->bias;
			} else {
				memcpy(&m->off[f], entry + o_off, 8);
			}
			m->off[f]++;	/* 0: not found */
			found++;
		}
	}
	m->lines = m->scopes = m->interp = true;
	for (int f = 0; f < F__COUNT; f++) {
		if (!m->off[f]) {
			pr_info("java: %d: no %s::%s in gHotSpotVMStructs%s",
				(int)m->pid, fields[f].type, fields[f].field,
				f < F__REQUIRED ? "" : f < F__LINES ?
				": no lines" : f < F__SCOPES ?
				": no inlined frames" :
				": the interpreter found by the perf map");
			if (f < F__REQUIRED)
				return -ENOENT;
			if (f >= F__SCOPES) {
				m->interp = false;
				continue;
			}
			if (f < F__LINES)
				m->lines = false;
			m->scopes = false;
			continue;
		}
		m->off[f]--;
	}
	return 0;
}

/* ConstMethod::_has_linenumber_table out of gHotSpotVMIntConstants. */
static void read_constants(struct javamethod *m, struct map_entry *e)
{
	uint64_t base, o_name, o_value, stride, np;
	char name[64];
	int32_t v;

	if (sym64(m, e, "gHotSpotVMIntConstants", &base) ||
	    sym64(m, e, "gHotSpotVMIntConstantEntryNameOffset", &o_name) ||
	    sym64(m, e, "gHotSpotVMIntConstantEntryValueOffset", &o_value) ||
	    sym64(m, e, "gHotSpotVMIntConstantEntryArrayStride", &stride))
		goto none;
	for (unsigned i = 0; i < MAX_ENTRIES; i++) {
		uint64_t entry = base + i * stride;

		if (rd64(m, entry + o_name, &np) || !np)
			break;
		if (rd_str(m, np, name, sizeof(name)) ||
		    strcmp(name, "ConstMethod::_has_linenumber_table"))
			continue;
		if (rd(m, entry + o_value, &v, sizeof(v)) || v <= 0)
			break;
		m->has_lines = (uint64_t)v;
		return;
	}
none:
	pr_info("java: %d: no ConstMethod::_has_linenumber_table: no lines",
		(int)m->pid);
	m->lines = false;
}

/* sizeof(ConstantPool) and sizeof(ConstMethod) out of gHotSpotVMTypes. */
static int read_types(struct javamethod *m, struct map_entry *e)
{
	uint64_t base, o_name, o_size, stride, np;
	char name[64];

	if (sym64(m, e, "gHotSpotVMTypes", &base) ||
	    sym64(m, e, "gHotSpotVMTypeEntryTypeNameOffset", &o_name) ||
	    sym64(m, e, "gHotSpotVMTypeEntrySizeOffset", &o_size) ||
	    sym64(m, e, "gHotSpotVMTypeEntryArrayStride", &stride))
		return -ENOENT;
	for (unsigned i = 0; i < MAX_ENTRIES; i++) {
		uint64_t entry = base + i * stride;

		if (rd64(m, entry + o_name, &np))
			return -EFAULT;
		if (!np)
			break;
		if (rd_str(m, np, name, sizeof(name)))
			continue;
		if (!strcmp(name, "ConstantPool") &&
		    rd64(m, entry + o_size, &m->pool_size))
			return -EFAULT;
		if (!strcmp(name, "ConstMethod") &&
		    rd64(m, entry + o_size, &m->cm_size))
			return -EFAULT;
		if (!strcmp(name, "nmethod") &&
		    rd64(m, entry + o_size, &m->nm_size))
			return -EFAULT;
		if (!strcmp(name, "PcDesc") &&
		    rd64(m, entry + o_size, &m->pc_size))
			return -EFAULT;
		if (m->pool_size && m->cm_size && m->nm_size && m->pc_size)
			break;
	}
	if (!m->cm_size)
		m->lines = false;
	if (!m->lines || !m->nm_size || m->nm_size > 4096 || !m->pc_size ||
	    m->pc_size > 64)
		m->scopes = false;
	if (m->pool_size)
		return 0;
	pr_info("java: %d: no ConstantPool in gHotSpotVMTypes", (int)m->pid);
	return -ENOENT;
}

static int ready(struct javamethod *m)
{
	struct map_entry *e;

	if (!m->tried) {
		m->tried = true;
		e = libjvm(m);
		if (e && known_get(m, e->dso)) {
			m->ready = true;
		} else {
			m->ready = e && !read_structs(m, e) &&
				   !read_types(m, e);
			if (m->ready && m->lines)
				read_constants(m, e);
			if (!m->lines)
				m->scopes = false;
			if (m->ready)
				known_put(m, e->dso);
		}
	}
	return m->ready ? 0 : -ENOENT;
}

/* A Symbol's text, '/' as '.', appended to buf at *len. */
static int symbol(struct javamethod *m, uint64_t sym, char *buf, size_t size,
		  size_t *len)
{
	uint16_t n;
	char text[256];

	if (rd(m, sym + m->off[F_SYM_LENGTH], &n, sizeof(n)) || !n ||
	    n >= sizeof(text) || *len + n + 1 >= size ||
	    rd(m, sym + m->off[F_SYM_BODY], text, n))
		return -EFAULT;
	for (uint16_t i = 0; i < n; i++) {
		char c = text[i];

		if ((unsigned char)c < 0x20 || c == 0x7f)
			return -EFAULT;	/* not a name: not a Method */
		buf[(*len)++] = c == '/' ? '.' : c;
	}
	buf[*len] = '\0';
	return 0;
}

int javamethod_name(struct javamethod *m, uint64_t addr, char *buf,
		    size_t size)
{
	uint64_t cm, cp, holder, kname, mname;
	uint16_t idx;
	size_t len = 0;
	int ret;

	ret = ready(m);
	if (ret)
		return ret;
	if (addr & 7 || size < 4 ||
	    rd64(m, addr + m->off[F_CONST_METHOD], &cm) || cm & 7 ||
	    rd64(m, cm + m->off[F_CONSTANTS], &cp) || cp & 7 ||
	    rd(m, cm + m->off[F_NAME_INDEX], &idx, sizeof(idx)) ||
	    rd64(m, cp + m->pool_size + 8ull * idx, &mname) ||
	    rd64(m, cp + m->off[F_POOL_HOLDER], &holder) ||
	    rd64(m, holder + m->off[F_KLASS_NAME], &kname))
		return -EFAULT;
	if (symbol(m, kname, buf, size, &len))
		return -EFAULT;
	buf[len++] = '.';
	return symbol(m, mname, buf, size, &len);
}

/* An int of HotSpot's CompressedStream (UNSIGNED5: bytes below 192 end
 * it, each further one worth 64 times more), at *i of t[0..n). */
bool javamethod_u5(const uint8_t *t, size_t n, size_t *i, uint32_t *v)
{
	uint32_t sum = 0;
	int shift = 0;

	for (int k = 0; k < 5; k++, shift += 6) {
		uint32_t b;

		if (*i >= n)
			return false;
		b = t[(*i)++];
		sum += b << shift;
		if (b < 192 || k == 4)
			break;
	}
	*v = sum;
	return true;
}

static bool read_signed(const uint8_t *t, size_t n, size_t *i, int32_t *v)
{
	uint32_t u;

	if (!javamethod_u5(t, n, i, &u))
		return false;
	*v = (int32_t)(u >> 1) ^ -(int32_t)(u & 1);
	return true;
}

/*
 * The line of bytecode index bci in a compressed line number table (what
 * Method::line_number_from_bci() reads: pairs of deltas, one byte
 * bci << 3 | line, or 0xff and two signed ints; 0 ends it): the line of
 * bci's pair, else of the nearest pair before it; -1 when none.
 */
int javamethod_table_line(const uint8_t *t, size_t n, uint32_t bci)
{
	/* 64 bits: a table of the target's is no trusted input, and its
	 * sums must not overflow */
	int64_t pc = 0, line = 0, best_pc = 0, best = -1;
	int32_t dpc, dline;
	size_t i = 0;

	while (i < n && t[i]) {
		uint8_t b = t[i++];

		if (b == 0xff) {
			if (!read_signed(t, n, &i, &dpc) ||
			    !read_signed(t, n, &i, &dline))
				break;
		} else {
			dpc = b >> 3;
			dline = b & 7;
		}
		pc += dpc;
		line += dline;
		if (pc == bci)
			return line > 0 && line <= INT32_MAX ? (int)line : -1;
		if (pc >= best_pc && pc < bci) {
			best_pc = pc;
			best = line;
		}
	}
	return best > 0 && best <= INT32_MAX ? (int)best : -1;
}

/* The source file of the class of the Method at addr, and its
 * ConstMethod's bytecodes' size and base, flags and size in words. */
struct cm_info {
	uint64_t cm, base;
	uint16_t flags, code_size;
	int32_t words;
};

static int cm_read(struct javamethod *m, uint64_t addr, char *file,
		   size_t fsize, struct cm_info *ci)
{
	uint64_t cp, fname;
	uint16_t fidx;
	size_t len = 0;

	if (addr & 7 || rd64(m, addr + m->off[F_CONST_METHOD], &ci->cm) ||
	    ci->cm & 7 || rd64(m, ci->cm + m->off[F_CONSTANTS], &cp) ||
	    rd(m, ci->cm + m->off[F_CM_FLAGS], &ci->flags,
	       sizeof(ci->flags)) ||
	    rd(m, ci->cm + m->off[F_CODE_SIZE], &ci->code_size,
	       sizeof(ci->code_size)) ||
	    rd(m, ci->cm + m->off[F_CM_SIZE], &ci->words, sizeof(ci->words)))
		return -EFAULT;
	/* the file, from the class's SourceFile attribute */
	if (!rd(m, cp + m->off[F_SOURCE_FILE], &fidx, sizeof(fidx)) && fidx &&
	    !rd64(m, cp + m->pool_size + 8ull * fidx, &fname) &&
	    symbol(m, fname, file, fsize, &len))
		file[0] = '\0';
	ci->base = ci->cm + m->cm_size;
	return 0;
}

/* The line of bci in the ConstMethod's table, into *line. */
static int cm_line(struct javamethod *m, const struct cm_info *ci,
		   uint32_t bci, int *line)
{
	uint8_t *table;
	size_t n;
	int ret;

	if (!(ci->flags & m->has_lines) || bci >= ci->code_size ||
	    ci->words <= 0 ||
	    (uint64_t)ci->words * 8 < m->cm_size + ci->code_size)
		return -ENOENT;
	n = (uint64_t)ci->words * 8 - m->cm_size - ci->code_size;
	if (n > 65536)
		n = 65536;
	table = malloc(n ? n : 1);
	if (!table)
		return -ENOMEM;
	ret = rd(m, ci->base + ci->code_size, table, n) ? -EFAULT : 0;
	if (!ret) {
		*line = javamethod_table_line(table, n, bci);
		if (*line <= 0) {
			*line = 0;
			ret = -ENOENT;
		}
	}
	free(table);
	return ret;
}

static int line_prepare(struct javamethod *m, char *file, size_t fsize,
			int *line)
{
	int ret;

	*line = 0;
	if (fsize)
		file[0] = '\0';
	ret = ready(m);
	if (ret)
		return ret;
	return m->lines ? 0 : -ENOENT;
}

/* The file and line of Method addr at a bytecode index: the one the low
 * 16 bits of a bytecode pointer give (bcp), or bci itself; a bci < 0
 * (none recorded) gives the file and -ENOENT. */
static int line_of(struct javamethod *m, uint64_t addr, bool bcp, int bci,
		   char *file, size_t fsize, int *line)
{
	struct cm_info ci;
	int ret;

	ret = line_prepare(m, file, fsize, line);
	if (!ret)
		ret = cm_read(m, addr, file, fsize, &ci);
	if (ret)
		return ret;
	if (bcp)
		bci = (uint16_t)((uint16_t)bci - (uint16_t)ci.base);
	return bci >= 0 ? cm_line(m, &ci, (uint32_t)bci, line) : -ENOENT;
}

int javamethod_line(struct javamethod *m, uint64_t addr, uint16_t bcp16,
		    char *file, size_t fsize, int *line)
{
	return line_of(m, addr, true, bcp16, file, fsize, line);
}

int javamethod_line_bci(struct javamethod *m, uint64_t addr, int bci,
			char *file, size_t fsize, int *line)
{
	return line_of(m, addr, false, bci, file, fsize, line);
}

/* Appends text[0..n) to buf at *len. */
static int append(char *buf, size_t size, size_t *len, const char *text,
		  size_t n)
{
	if (*len + n + 1 > size)
		return -ENOSPC;
	memcpy(buf + *len, text, n);
	*len += n;
	buf[*len] = '\0';
	return 0;
}

/* One type of a method descriptor at *d (its '/' already '.'), in
 * Java's words ("java.lang.String[]"), appended to buf. */
static int sig_type(const char **d, const char *end, char *buf, size_t size,
		    size_t *len)
{
	static const char *const prim[] = {
		['B'] = "byte", ['C'] = "char", ['D'] = "double",
		['F'] = "float", ['I'] = "int", ['J'] = "long",
		['S'] = "short", ['Z'] = "boolean", ['V'] = "void",
	};
	const char *t, *semi;
	int dims = 0, ret;

	while (*d < end && **d == '[' && dims < 255) {
		dims++;
		(*d)++;
	}
	if (*d >= end)
		return -EINVAL;
	if (**d == 'L') {
		semi = memchr(*d, ';', end - *d);
		if (!semi)
			return -EINVAL;
		ret = append(buf, size, len, *d + 1, semi - *d - 1);
		*d = semi + 1;
	} else {
		unsigned char c = (unsigned char)**d;

		t = c < sizeof(prim) / sizeof(prim[0]) ? prim[c] : NULL;
		if (!t)
			return -EINVAL;
		ret = append(buf, size, len, t, strlen(t));
		(*d)++;
	}
	for (int i = 0; !ret && i < dims; i++)
		ret = append(buf, size, len, "[]", 2);
	return ret;
}

int javamethod_external(const char *name, const char *desc, size_t dlen,
			char *buf, size_t size)
{
	const char *d, *end = desc + dlen, *close;
	size_t len = 0;

	close = memchr(desc, ')', dlen);
	if (!dlen || desc[0] != '(' || !close || !size)
		return -EINVAL;
	buf[0] = '\0';
	/* "RET pkg.Class.method(T1, T2)", as Method::external_name() */
	d = close + 1;
	if (sig_type(&d, end, buf, size, &len) || d != end ||
	    append(buf, size, &len, " ", 1) ||
	    append(buf, size, &len, name, strlen(name)) ||
	    append(buf, size, &len, "(", 1))
		return -EINVAL;
	for (d = desc + 1; d < close;) {
		if ((d > desc + 1 && append(buf, size, &len, ", ", 2)) ||
		    sig_type(&d, close, buf, size, &len))
			return -EINVAL;
	}
	return append(buf, size, &len, ")", 1) ? -EINVAL : 0;
}

int javamethod_external_name(struct javamethod *m, uint64_t addr, char *buf,
			     size_t size)
{
	char name[512], desc[256];
	uint64_t cm, cp, sym;
	uint16_t idx;
	size_t dlen = 0;
	int ret;

	ret = javamethod_name(m, addr, name, sizeof(name));
	if (ret)
		return ret;
	if (!m->scopes)
		return -ENOENT;
	/* the descriptor's '/' become '.', as Java names its classes */
	if (rd64(m, addr + m->off[F_CONST_METHOD], &cm) ||
	    rd64(m, cm + m->off[F_CONSTANTS], &cp) ||
	    rd(m, cm + m->off[F_SIG_INDEX], &idx, sizeof(idx)) ||
	    rd64(m, cp + m->pool_size + 8ull * idx, &sym) ||
	    symbol(m, sym, desc, sizeof(desc), &dlen) ||
	    javamethod_external(name, desc, dlen, buf, size))
		return -EFAULT;
	return 0;
}

int javamethod_layout(struct javamethod *m, struct javamethod_nm *nm)
{
	int ret = ready(m);

	if (ret)
		return ret;
	if (!m->scopes)
		return -ENOENT;
	*nm = (struct javamethod_nm){
		.size = m->off[F_CB_SIZE],
		.header_size = m->off[F_CB_HEADER_SIZE],
		.code_begin = m->off[F_CB_CODE_BEGIN],
		.code_end = m->off[F_CB_CODE_END],
		.method = m->off[F_CM_METHOD],
		.scopes_data_begin = m->off[F_CM_SCOPES_DATA],
		.metadata_offset = m->off[F_NM_METADATA],
		.scopes_pcs_offset = m->off[F_NM_SCOPES_PCS],
		.dependencies_offset = m->off[F_NM_DEPENDENCIES],
		.pc_offset = m->off[F_PC_OFFSET],
		.scope_offset = m->off[F_PC_SCOPE],
		.nm_size = m->nm_size,
		.pc_size = m->pc_size,
	};
	return 0;
}

int javamethod_interpreter(struct javamethod *m, uint64_t *start,
			   uint64_t *end, uint64_t *call_ra)
{
	struct map_entry *e;
	uint64_t code, buf, ra;
	int32_t limit;
	int ret = ready(m);

	if (ret)
		return ret;
	e = libjvm(m);
	if (!m->interp || !e)
		return -ENOENT;
	if (rd64(m, m->off[F_INTERP_CODE] + e->bias, &code) || !code ||
	    rd64(m, code + m->off[F_SQ_BUFFER], &buf) ||
	    rd(m, code + m->off[F_SQ_LIMIT], &limit, sizeof(limit)))
		return -EFAULT;
	if (!buf || limit <= 0 || limit > (64 << 20) ||
	    rd64(m, m->off[F_CALL_STUB_RA] + e->bias, &ra) || !ra)
		return -EFAULT;
	*start = buf;
	*end = buf + (uint64_t)limit;
	*call_ra = ra;
	return 0;
}
