// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dso_dwarf.c - what libdw tells of a dso, loaded at the first
 * dso_symbolize()/dso_caps(): functions, inlined frames and source lines
 * (memoized per address), symbol lookups by name and range, and the
 * .debug_frame section for the CFI unwinder.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "sampler/unwind/cu_index.h"
#include "sampler/unwind/demangle.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/dso_i.h"
#include "sampler/unwind/elfscn.h"
#include "sampler/unwind/gopclntab.h"
#include "sampler/log.h"


/* ---- DWARF ---- */

/* A DWARF section, or GNU's compressed .zdebug_ form of it. */
static bool dwarf_has_section(Dwarf *dw, const char *want)
{
	Elf *elf = dwarf_getelf(dw);
	char z[64];

	snprintf(z, sizeof(z), ".z%s", want + 1);
	return elf && (dso_elf_has_section(elf, want) ||
		       dso_elf_has_section(elf, z));
}

/* The sections loading the symbol table reads through. */
static const char *const symtab_sections[] = {
	".symtab", ".strtab", ".dynsym", ".dynstr", NULL,
};
/* The DWARF sections symbolizing reads (dso_inflate.c keeps these): the
 * unit index touches every unit, and the kernel maps pages around each
 * one touched, so a mapped file's are counted whole. */
static const char *const dwarf_sections[] = {
	".debug_info", ".debug_abbrev", ".debug_line", ".debug_line_str",
	".debug_str", ".debug_str_offsets", ".debug_rnglists",
	".debug_ranges", ".debug_aranges", ".debug_addr", NULL,
};

static void dso_dw_load(struct dso *d);

/* Loads libdw's module once, and counts what it holds (dso_mem.c). */
static void dso_dw_init(struct dso *d)
{
	Dwarf_Addr bias;
	Elf *elf, *debug;

	if (d->dw_tried)
		return;
	d->dw_tried = true;
	dso_dw_load(d);
	d->cuix_bytes = cu_index_mem_bytes(d->cus);
	elf = d->mod ? dwfl_module_getelf(d->mod, &bias) : NULL;
	debug = d->dw ? dwarf_getelf(d->dw) : NULL;
	d->file_bytes += dso_sections_bytes(elf, symtab_sections);
	if (debug && debug != elf && !d->memfd_bytes)
		d->file_bytes += dso_sections_bytes(debug, symtab_sections);
	if (debug && !d->memfd_bytes)	/* not inflated: the file's own */
		d->file_bytes += dso_sections_bytes(debug, dwarf_sections);
	dso_mem_update(d);
	pr_debug("dso: %s: loaded: %llu bytes, of which inflated debug file "
		 "%llu, mapped sections %llu; %zu symbols, %zu DWARF units",
		 d->name, (unsigned long long)dso_mem_bytes(d),
		 (unsigned long long)d->memfd_bytes,
		 (unsigned long long)d->file_bytes, d->nsyms,
		 cu_index_units(d->cus));
}

static void dso_dw_load(struct dso *d)
{
	void **ud;

	d->dwfl = dwfl_begin(&dso_dwfl_callbacks);
	if (!d->dwfl)
		goto err;
	dwfl_report_begin(d->dwfl);
	d->mod = dwfl_report_elf(d->dwfl, d->name, d->name, d->fd, 0, true);
	if (!d->mod)
		goto err;
	d->fd = -1;		/* consumed */
	dwfl_report_end(d->dwfl, NULL, NULL);
	dwfl_module_info(d->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	*ud = d;
	dso_load_syms(d);
	if (d->gopcln && !d->nsyms)
		d->caps = (struct dso_caps){ true, true, true, true };
	d->dw = dwfl_module_getdwarf(d->mod, &d->dw_bias);
	if (d->dw && cu_index_build(d->dw, &d->cus))
		pr_debug("dso: %s: no memory for the DWARF unit index",
			 d->name);
	if (d->dw) {
		d->caps.inline_frames = true;
		d->caps.line_numbers = dwarf_has_section(d->dw, ".debug_line");
		d->caps.filenames = d->caps.line_numbers;
	}
	return;
err:
	pr_debug("dso: %s: libdwfl: %s", d->name, dwfl_errmsg(-1));
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	d->mod = NULL;
}

static const char *die_name(Dwarf_Die *die)
{
	static const int attrs[] = {
		DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name,
	};
	Dwarf_Attribute a;
	const char *s = NULL;
	size_t i;

	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]) && !s; i++)
		s = dwarf_formstring(dwarf_attr_integrate(die, attrs[i], &a));
	return s;
}

static bool die_is_func(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/* Innermost inlined subroutine first, the subprogram last. */
static int dwarf_func_dies(struct dso *d, Dwarf_Die *cu, Dwarf_Addr pc,
			   Dwarf_Die *dies)
{
	Dwarf_Die path[64];
	int i, np, n = 0, outer = -1;

	np = cu_index_scopes(d->cus, cu, pc, path, 64);
	for (i = 0; i < np && outer < 0; i++)
		if (die_is_func(dwarf_tag(&path[i])))
			outer = i;
	for (i = np - 1; i > outer && n < DSO_MAX_FRAMES - 1; i--)
		if (die_is_func(dwarf_tag(&path[i])))
			dies[n++] = path[i];
	if (outer >= 0)
		dies[n++] = path[outer];
	return n;
}

/* Where the inlined subroutine die was called from. */
static void dwarf_call_site(struct dso *d, Dwarf_Die *die,
			    struct dso_frame *f)
{
	Dwarf_Word file, line;
	Dwarf_Attribute a;
	Dwarf_Files *files;
	Dwarf_Die cu;
	size_t nfiles;

	if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &line))
		f->line = line <= INT_MAX ? (int)line : 0;
	if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &file) &&
	    dwarf_diecu(die, &cu, NULL, NULL) &&
	    !dwarf_getsrcfiles(&cu, &files, &nfiles) && file < nfiles)
		f->file = dso_abs_path(d, dwarf_formstring(dwarf_attr(&cu,
					DW_AT_comp_dir, &a)),
				       dwarf_filesrc(files, file, NULL, NULL));
}

static const char *dso_demangle(struct dso *d, const char *raw)
{
	uint64_t v;
	char *s;

	if (!raw || raw[0] != '_' || (raw[1] != 'Z' && raw[1] != 'R'))
		return raw;
	if (dso_map_get(&d->demangled, (uintptr_t)raw, &v))
		return (const char *)(uintptr_t)v;
	if (demangle(raw, &s))
		s = (char *)raw;
	if (dso_map_put(&d->demangled, (uintptr_t)raw, (uintptr_t)s)) {
		if (s != raw)
			free(s);
		return raw;
	}
	if (s != raw)
		d->str_bytes += dso_alloc_bytes(strlen(s) + 1);
	return s;
}

/* Frames from .gopclntab, for a Go program without symbols or DWARF. */
static int dso_go_frames(struct dso *d, uint64_t vaddr, struct dso_frame *f)
{
	struct gopcln_frame g[DSO_MAX_FRAMES];
	int i, n;

	if (!d->gopcln || gopcln_frames(d->gopcln, vaddr, g, DSO_MAX_FRAMES,
					&n))
		return 0;
	for (i = 0; i < n; i++)
		f[i] = (struct dso_frame){ .function = g[i].function,
					   .system_name = g[i].function,
					   .file = g[i].file,
					   .line = g[i].line };
	return n;
}

/*
 * The first lookup in a unit loads its tables (cu_index's table of its
 * functions, libdw's abbrevs and lines): done here once per unit, what
 * they hold counted (dso_mem.c).
 */
static void dso_unit_load(struct dso *d, Dwarf_Die *cu, Dwarf_Addr pc)
{
	Dwarf_Die path[64];
	Dwarf_Lines *lines;
	uint64_t off = dwarf_dieoffset(cu), v;
	size_t n = 0;

	if (dso_map_get(&d->cus_seen, off, &v) ||
	    dso_map_put(&d->cus_seen, off, 1))
		return;
	d->ncus_seen++;
	cu_index_scopes(d->cus, cu, pc, path, 64);
	if (dwarf_getsrclines(cu, &lines, &n))
		n = 0;
	d->dw_lines += n;
	d->cuix_bytes = cu_index_mem_bytes(d->cus);
}

/* Frames for vaddr into f; 0 when nothing covers it. */
static int dso_resolve(struct dso *d, uint64_t vaddr, struct dso_frame *f)
{
	Dwarf_Die dies[DSO_MAX_FRAMES], cu;
	Dwarf_Addr pc = vaddr - d->dw_bias;
	const struct dso_sym *sym;
	Dwarf_Attribute a;
	const char *file;
	Dwarf_Line *line;
	bool have_cu;
	int i, n = 0;

	dso_dw_init(d);
	if (!d->mod)
		return dso_go_frames(d, vaddr, f);
	sym = dso_sym_find(d, vaddr);
	have_cu = d->cus && cu_index_find(d->cus, pc, &cu);
	if (have_cu)
		dso_unit_load(d, &cu, pc);
	if (have_cu)
		n = dwarf_func_dies(d, &cu, pc, dies);
	for (i = 0; i < n; i++) {
		f[i] = (struct dso_frame){ .system_name = die_name(&dies[i]) };
		dwarf_decl_line(&dies[i], &f[i].start_line);
		if (i)
			dwarf_call_site(d, &dies[i - 1], &f[i]);
	}
	if (sym) {
		if (!n)
			f[n++] = (struct dso_frame){ 0 };
		f[n - 1].system_name = sym->name;
	}
	if (!n)
		return dso_go_frames(d, vaddr, f);
	line = have_cu ? dwarf_getsrc_die(&cu, pc) : NULL;
	file = line ? dwarf_linesrc(line, NULL, NULL) : NULL;
	if (file && !dwarf_lineno(line, &f[0].line))
		f[0].file = dso_abs_path(d, dwarf_formstring(dwarf_attr(&cu,
					DW_AT_comp_dir, &a)), file);
	for (i = 0; i < n; i++)
		f[i].function = dso_demangle(d, f[i].system_name);
	return n;
}

/* Called with d->lock held. */
static int dso_memo(struct dso *d, uint64_t vaddr, uint64_t *v)
{
	struct dso_frame f[DSO_MAX_FRAMES], *pool;
	size_t cap;
	int n;

	n = dso_resolve(d, vaddr, f);
	if (d->npool + n > d->cap_pool) {
		cap = d->cap_pool ? d->cap_pool * 2 : 256;
		pool = realloc(d->pool, cap * sizeof(*pool));
		if (!pool)
			return -ENOMEM;
		d->pool = pool;
		d->cap_pool = cap;
	}
	*v = (uint64_t)d->npool << 8 | n;
	if (dso_map_put(&d->addrs, vaddr, *v))
		return -ENOMEM;
	if (n)
		memcpy(d->pool + d->npool, f, n * sizeof(*f));
	d->npool += n;
	dso_mem_update(d);
	return 0;
}

/* When max is short, the outermost frame (the function holding the
 * code) is kept in the last slot and the innermost ones before it. */
int dso_symbolize(struct dso *d, uint64_t vaddr, struct dso_frame *frames,
		  int max, int *n)
{
	const struct dso_frame *f;
	int cnt, ret = 0;
	uint64_t v;

	*n = 0;
	if (max <= 0)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	if (!dso_map_get(&d->addrs, vaddr, &v))
		ret = dso_memo(d, vaddr, &v);
	cnt = ret ? 0 : v & 0xff;
	if (cnt) {
		f = d->pool + (v >> 8);
		*n = cnt < max ? cnt : max;
		memcpy(frames, f, (*n - 1) * sizeof(*f));
		frames[*n - 1] = f[cnt - 1];
	} else if (!ret) {
		ret = -ENOENT;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

const char *dso_symbol_name(struct dso *d, uint64_t vaddr)
{
	const struct dso_sym *sym;

	pthread_mutex_lock(&d->lock);
	dso_dw_init(d);
	sym = dso_sym_find(d, vaddr);
	pthread_mutex_unlock(&d->lock);
	if (!sym && d->gopcln) {
		struct gopcln_func f;

		return gopcln_func(d->gopcln, vaddr, &f) ? NULL : f.name;
	}
	return sym ? sym->name : NULL;
}

/* name, or name@VERSION / name@@VERSION, is the symbol called want. */
static bool sym_named(const char *name, const char *want)
{
	size_t n = strlen(want);

	return !strncmp(name, want, n) && (!name[n] || name[n] == '@');
}

/* The first defined symbol called name of type type (an IFUNC's address
 * is its resolver's, not the function's). */
static int symbol_of_type(struct dso *d, const char *name, int type,
			  uint64_t *vaddr, uint64_t *size)
{
	int ret = -ENOENT, cnt;

	pthread_mutex_lock(&d->lock);
	dso_dw_init(d);
	/* Rare (an agent load, a runtime found), so a scan of every
	 * symbol, aliases included: the sorted table keeps one name per
	 * address. */
	cnt = d->mod ? dwfl_module_getsymtab(d->mod) : 0;
	for (int i = 1; i < cnt; i++) {
		GElf_Word shndx;
		GElf_Addr addr;
		GElf_Sym sym;
		const char *s;

		s = dwfl_module_getsym_info(d->mod, i, &sym, &addr, &shndx,
					    NULL, NULL);
		if (s && GELF_ST_TYPE(sym.st_info) == type &&
		    shndx != SHN_UNDEF && sym_named(s, name)) {
			*vaddr = addr;
			if (size)
				*size = sym.st_size;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

int dso_symbol_vaddr(struct dso *d, const char *name, uint64_t *vaddr)
{
	return symbol_of_type(d, name, STT_FUNC, vaddr, NULL);
}

int dso_object_vaddr(struct dso *d, const char *name, uint64_t *vaddr,
		     uint64_t *size)
{
	return symbol_of_type(d, name, STT_OBJECT, vaddr, size);
}

/* The type die refers to, through typedefs. */
static bool die_type(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute a;

	for (int i = 0; i < 8; i++) {
		if (!dwarf_formref_die(dwarf_attr_integrate(die, DW_AT_type, &a),
				       out))
			return false;
		if (dwarf_tag(out) != DW_TAG_typedef)
			return true;
		die = out;
	}
	return false;
}

/* The offset of path ("sched.sp": members of members) in struct st. */
static long member_offset(Dwarf_Die *st, const char *path)
{
	const char *dot = strchr(path, '.');
	size_t n = dot ? (size_t)(dot - path) : strlen(path);
	Dwarf_Die m, t;
	Dwarf_Attribute a;
	Dwarf_Word off;
	const char *name;
	long inner;

	if (dwarf_child(st, &m))
		return -1;
	do {
		if (dwarf_tag(&m) != DW_TAG_member ||
		    !(name = dwarf_diename(&m)) || strlen(name) != n ||
		    strncmp(name, path, n) ||
		    dwarf_formudata(dwarf_attr(&m, DW_AT_data_member_location,
					       &a), &off) || off > LONG_MAX / 2)
			continue;
		if (!dot)
			return (long)off;
		if (!die_type(&m, &t) || dwarf_tag(&t) != DW_TAG_structure_type)
			return -1;
		inner = member_offset(&t, dot + 1);
		return inner < 0 ? -1 : (long)off + inner;
	} while (!dwarf_siblingof(&m, &m));
	return -1;
}

/* The structure type called type among the top-level dies of the units
 * named unit (NULL: every unit). */
static bool find_struct(Dwarf *dw, const char *unit, const char *type,
			Dwarf_Die *out)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (!dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL)) {
		Dwarf_Die cu, c;
		const char *name;

		if (dwarf_offdie(dw, off + hsize, &cu) &&
		    (!unit || ((name = dwarf_diename(&cu)) &&
			       !strcmp(name, unit))) &&
		    !dwarf_child(&cu, &c)) {
			do {
				if (dwarf_tag(&c) == DW_TAG_structure_type &&
				    (name = dwarf_diename(&c)) &&
				    !strcmp(name, type)) {
					*out = c;
					return true;
				}
			} while (!dwarf_siblingof(&c, &c));
		}
		off = next;
	}
	return false;
}

int dso_struct_offsets(struct dso *d, const char *unit, const char *type,
		       const char *const *members, long *offs, size_t n)
{
	Dwarf_Die st;
	int ret = -ENOENT;

	pthread_mutex_lock(&d->lock);
	dso_dw_init(d);
	if (d->dw && (find_struct(d->dw, unit, type, &st) ||
		      (unit && find_struct(d->dw, NULL, type, &st)))) {
		for (size_t i = 0; i < n; i++)
			offs[i] = member_offset(&st, members[i]);
		ret = 0;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

static int range_cmp(const void *a, const void *b)
{
	const struct dso_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sort and merge touching or overlapping ranges in place. */
static size_t ranges_merge(struct dso_range *r, size_t n)
{
	size_t k = 0;

	if (!n)
		return 0;	/* r may be NULL: qsort's may not */
	qsort(r, n, sizeof(*r), range_cmp);
	for (size_t i = 0; i < n; i++) {
		if (k && r[i].start <= r[k - 1].end) {
			if (r[i].end > r[k - 1].end)
				r[k - 1].end = r[i].end;
			continue;
		}
		r[k++] = r[i];
	}
	return k;
}

/* Where a symbol of code ends: its size, else what the sorted table (which
 * bounds labels by the next symbol) says of its address. 0: not code. */
static uint64_t sym_range_end(const struct dso *d, const GElf_Sym *sym,
			      GElf_Addr addr)
{
	const struct dso_sym *s;

	if (sym->st_size)
		return addr + sym->st_size;
	s = dso_sym_find(d, addr);
	return s && s->addr == addr ? s->end : 0;
}

int dso_symbol_ranges(struct dso *d, bool (*match)(void *arg,
						   const char *name),
		      void *arg, struct dso_range **out, size_t *n)
{
	struct dso_range *r = NULL;
	size_t cnt_r = 0, cap = 0;
	char buf[512];
	int ret = 0, cnt;

	pthread_mutex_lock(&d->lock);
	dso_dw_init(d);
	cnt = d->mod ? dwfl_module_getsymtab(d->mod) : 0;
	for (int i = 1; i < cnt && !ret; i++) {
		GElf_Word shndx;
		GElf_Addr addr;
		GElf_Sym sym;
		const char *s;
		uint64_t end;
		int type;

		s = dwfl_module_getsym_info(d->mod, i, &sym, &addr, &shndx,
					    NULL, NULL);
		type = s ? GELF_ST_TYPE(sym.st_info) : STT_NOTYPE;
		if (!s || (type != STT_FUNC && type != STT_GNU_IFUNC) ||
		    shndx == SHN_UNDEF || shndx >= SHN_LORESERVE)
			continue;
		snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(s, "@"), s);
		end = sym_range_end(d, &sym, addr);
		if (end <= addr || !match(arg, buf))
			continue;
		if (cnt_r == cap) {
			struct dso_range *v;

			cap = cap ? 2 * cap : 16;
			v = realloc(r, cap * sizeof(*r));
			if (!v) {
				ret = -ENOMEM;
				break;
			}
			r = v;
		}
		r[cnt_r++] = (struct dso_range){ addr, end };
	}
	pthread_mutex_unlock(&d->lock);
	if (ret) {
		free(r);
		return ret;
	}
	*n = ranges_merge(r, cnt_r);
	*out = r;
	return 0;
}

ssize_t dso_range_below(const struct dso_range *r, size_t n, uint64_t v)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].start <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ssize_t)lo - 1;
}

bool dso_ranges_hold(const struct dso_range *r, size_t n, uint64_t v)
{
	ssize_t i = dso_range_below(r, n, v);

	return i >= 0 && v < r[i].end;
}

void dso_caps(struct dso *d, struct dso_caps *caps)
{
	pthread_mutex_lock(&d->lock);
	dso_dw_init(d);
	*caps = d->caps;
	pthread_mutex_unlock(&d->lock);
}

/* ---- .debug_frame ---- */

/* A zero-padded copy of elf's .debug_frame, decompressed; NULL if none. */
static uint8_t *elf_debug_frame(Elf *elf, size_t *size)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = elf_section_named(elf, ".debug_frame", &shdr);
	Elf_Data *data;
	uint8_t *copy;

	if (!scn || shdr.sh_type != SHT_PROGBITS ||
	    ((shdr.sh_flags & SHF_COMPRESSED) &&
		     elf_compress(scn, 0, 0) < 0))
		return NULL;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || !data->d_size ||
	    data->d_size > SIZE_MAX / 2)
		return NULL;
	/* whole words: libunwind reads aligned 8-byte words */
	copy = calloc(1, (data->d_size + DSO_DEBUG_FRAME_PAD + 7) & ~7ul);
	if (!copy)
		return NULL;
	memcpy(copy, data->d_buf, data->d_size);
	*size = data->d_size;
	return copy;
}

/* Called with d->lock held, once. */
static void dso_df_load(struct dso *d, void *(*make_index)(const uint8_t *,
							   size_t),
			void (*drop)(void *))
{
	Dwarf_Addr bias;
	Elf *elf, *debug;

	dso_dw_init(d);
	if (!d->mod)
		return;
	elf = dwfl_module_getelf(d->mod, &bias);
	d->df_data = elf_debug_frame(elf, &d->df_size);
	debug = d->dw ? dwarf_getelf(d->dw) : NULL;
	if (!d->df_data && debug != elf)
		d->df_data = elf_debug_frame(debug, &d->df_size);
	if (!d->df_data)
		return;
	d->df_index = make_index(d->df_data, d->df_size);
	d->df_drop = drop;
	if (!d->df_index) {
		free(d->df_data);
		d->df_data = NULL;
	}
}

int dso_debug_frame(struct dso *d, void *(*make_index)(const uint8_t *data,
						       size_t size),
		    void (*drop)(void *index), struct dso_debug_frame *out)
{
	if (!atomic_load_explicit(&d->df_done, memory_order_acquire)) {
		pthread_mutex_lock(&d->lock);
		if (!atomic_load_explicit(&d->df_done, memory_order_relaxed)) {
			dso_df_load(d, make_index, drop);
			dso_mem_update(d);
		}
		atomic_store_explicit(&d->df_done, true, memory_order_release);
		pthread_mutex_unlock(&d->lock);
	}
	if (!d->df_index)
		return -ENOENT;
	*out = (struct dso_debug_frame){ .data = d->df_data,
					 .size = d->df_size,
					 .index = d->df_index };
	return 0;
}
