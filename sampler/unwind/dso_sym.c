// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dso_sym.c - the address map the dso memoizes in, the separate debug
 * files libdwfl is pointed to, and the symbol table: our own sorted one,
 * not dwfl_module_addrsym(), which scans every symbol on each call.
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
#include "sampler/log.h"


/* ---- u64 -> u64 map ---- */

static size_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k;
}

uint64_t dso_hash_str(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

bool dso_map_get(const struct u64map *m, uint64_t k, uint64_t *v)
{
	size_t i;

	if (!m->mask)
		return false;
	for (i = hash64(k) & m->mask; m->slots[i].key != U64MAP_EMPTY;
	     i = (i + 1) & m->mask) {
		if (m->slots[i].key == k) {
			*v = m->slots[i].val;
			return true;
		}
	}
	return false;
}

static void u64map_insert(struct u64map *m, uint64_t k, uint64_t v)
{
	size_t i = hash64(k) & m->mask;

	while (m->slots[i].key != U64MAP_EMPTY && m->slots[i].key != k)
		i = (i + 1) & m->mask;
	m->n += m->slots[i].key == U64MAP_EMPTY;
	m->slots[i] = (struct u64map_slot){ .key = k, .val = v };
}

int dso_map_put(struct u64map *m, uint64_t k, uint64_t v)
{
	struct u64map big;
	size_t i, cap;

	if (m->mask && (m->n + 1) * 2 <= m->mask + 1) {
		u64map_insert(m, k, v);
		return 0;
	}
	cap = m->mask ? (m->mask + 1) * 2 : 64;
	big = (struct u64map){ .mask = cap - 1 };
	big.slots = malloc(cap * sizeof(*big.slots));
	if (!big.slots)
		return -ENOMEM;
	for (i = 0; i < cap; i++)
		big.slots[i].key = U64MAP_EMPTY;
	for (i = 0; m->mask && i <= m->mask; i++)
		if (m->slots[i].key != U64MAP_EMPTY)
			u64map_insert(&big, m->slots[i].key, m->slots[i].val);
	free(m->slots);
	*m = big;
	u64map_insert(m, k, v);
	return 0;
}

void dso_map_free(struct u64map *m)
{
	free(m->slots);
	*m = (struct u64map){ 0 };
}

/* ---- separate debug files ---- */

static uint32_t crc32_mem(const unsigned char *p, size_t n)
{
	uint32_t tab[256], c = 0xffffffff;
	uint32_t i, k, v;

	for (i = 0; i < 256; i++) {
		for (v = i, k = 0; k < 8; k++)
			v = v & 1 ? 0xedb88320 ^ (v >> 1) : v >> 1;
		tab[i] = v;
	}
	while (n--)
		c = tab[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffff;
}

/* A candidate is ours if its build-id matches ours, or, for a file
 * without one, if its CRC is the one .gnu_debuglink records. */
static bool debug_file_matches(const struct dso *d, int fd, size_t size,
			       GElf_Word crc)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *id, *map;
	bool ok = false;
	ssize_t len, i;
	Elf *elf;

	if (!d->build_id[0]) {
		map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED)
			return false;
		ok = crc32_mem(map, size) == crc;
		munmap((void *)map, size);
		return ok;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	len = elf ? dwelf_elf_gnu_build_id(elf, (const void **)&id) : -1;
	if (len > 0 && (size_t)len * 2 == strlen(d->build_id)) {
		for (ok = true, i = 0; i < len && ok; i++)
			ok = d->build_id[2 * i] == hex[id[i] >> 4] &&
			     d->build_id[2 * i + 1] == hex[id[i] & 15];
	}
	elf_end(elf);
	return ok;
}

static int debug_try(const struct dso *d, const char *path, GElf_Word crc,
		     char **found)
{
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (st.st_dev == d->dev && st.st_ino == d->ino) ||
	    !debug_file_matches(d, fd, st.st_size, crc) ||
	    !(*found = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ROOT/.build-id/xx/rest.debug, or with link ROOT/DIR/link, for each
 * debug root. */
static int debug_try_roots(const struct dso *d, const char *prefix,
			   const char *link, int dirlen, GElf_Word crc,
			   char **found)
{
	char path[PATH_MAX];
	const char *root;
	int rlen, fd = -1;

	for (root = d->debug_roots; *root && fd < 0; root += rlen) {
		rlen = strcspn(root, ":");
		if (!rlen) {
			rlen = 1;
			continue;
		}
		if (!link)
			snprintf(path, sizeof(path),
				 "%s%.*s/.build-id/%.2s/%s.debug", prefix,
				 rlen, root, d->build_id, d->build_id + 2);
		else
			snprintf(path, sizeof(path), "%s%.*s%.*s/%s", prefix,
				 rlen, root, dirlen, d->name, link);
		fd = debug_try(d, path, crc, found);
	}
	return fd;
}

/* Build-id under each root, then the debuglink next to the file, in its
 * .debug/, and under each root, all below prefix. */
static int debug_search(const struct dso *d, const char *prefix,
			const char *link, GElf_Word crc, char **found)
{
	const char *slash = strrchr(d->name, '/');
	int dirlen = slash ? (int)(slash - d->name) : -1;
	char path[PATH_MAX];
	int fd = -1;

	if (strlen(d->build_id) > 2)
		fd = debug_try_roots(d, prefix, NULL, 0, crc, found);
	if (fd >= 0 || !link || d->name[0] != '/')
		return fd;
	snprintf(path, sizeof(path), "%s%.*s/%s", prefix, dirlen, d->name,
		 link);
	fd = debug_try(d, path, crc, found);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "%s%.*s/.debug/%s", prefix, dirlen,
		 d->name, link);
	fd = debug_try(d, path, crc, found);
	if (fd >= 0)
		return fd;
	return debug_try_roots(d, prefix, link, dirlen, crc, found);
}

static int dso_find_debuginfo(Dwfl_Module *mod, void **userdata,
			      const char *modname, Dwarf_Addr base,
			      const char *file_name, const char *link,
			      GElf_Word crc, char **found)
{
	struct dso *d = *userdata;
	struct stat st;
	int fd = -1, mfd;

	(void)mod, (void)modname, (void)base, (void)file_name;
	if (!d)
		return -1;
	if (d->sysroot[0])
		fd = debug_search(d, d->sysroot, link, crc, found);
	if (fd < 0)
		fd = debug_search(d, "", link, crc, found);
	if (fd < 0) {
		pr_debug("dso: %s: no separate debug file", d->name);
		return fd;
	}
	if (!dso_debug_inflate_cached(fd, d->inflate_dir, DSO_DEBUG_CACHE_MAX,
				      &mfd)) {
		close(fd);
		fd = mfd;
		/* called under d->lock, from dso_dw_init() */
		if (!fstat(fd, &st))
			d->memfd_bytes = st.st_size;
	}
	return fd;
}

/* Never called: every module is reported with an open fd. */
static int dso_find_elf(Dwfl_Module *mod, void **userdata,
			const char *modname, Dwarf_Addr base,
			char **file_name, Elf **elfp)
{
	(void)mod, (void)userdata, (void)modname, (void)base;
	(void)file_name, (void)elfp;
	return -1;
}

const Dwfl_Callbacks dso_dwfl_callbacks = {
	.find_elf = dso_find_elf,
	.find_debuginfo = dso_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Our copy of str, shared by equal strings. str on failure. */
static const char *dso_intern(struct dso *d, const char *str)
{
	struct dso_str *e, *head = NULL;
	size_t len = strlen(str);
	uint64_t h, v;

	h = dso_hash_str(str);
	h -= h == U64MAP_EMPTY;
	if (dso_map_get(&d->strs, h, &v))
		head = (struct dso_str *)(uintptr_t)v;
	for (e = head; e; e = e->next)
		if (!strcmp(e->s, str))
			return e->s;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return str;
	memcpy(e->s, str, len + 1);
	e->next = head;
	if (dso_map_put(&d->strs, h, (uintptr_t)e)) {
		free(e);
		return str;
	}
	d->str_bytes += dso_alloc_bytes(sizeof(*e) + len + 1);
	return e->s;
}

/* dir/name for a name relative to its CU's directory. */
const char *dso_abs_path(struct dso *d, const char *dir,
				const char *name)
{
	char buf[PATH_MAX];

	if (!name || name[0] == '/' || !dir || !dir[0] ||
	    snprintf(buf, sizeof(buf), "%s/%s", dir, name) >= (int)sizeof(buf))
		return name;
	return dso_intern(d, buf);
}

/* ---- symbol table ---- */

static int sym_cmp(const void *a, const void *b)
{
	const struct dso_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return strcmp(x->name, y->name);
}

/* Prefer sized, global, then weak, unversioned, then fewer leading
 * underscores: the name a user would look for among aliases (malloc over
 * __libc_malloc, clntraw_create over clntraw_create@GLIBC_2.2.5). */
static uint8_t sym_rank(const GElf_Sym *sym, const char *name)
{
	static const uint8_t bind_rank[] = {
		[STB_LOCAL] = 2, [STB_GLOBAL] = 0, [STB_WEAK] = 1,
	};
	unsigned int bind = GELF_ST_BIND(sym->st_info);
	size_t under = strspn(name, "_");

	return (sym->st_size ? 0 : 128) +
	       (bind <= STB_WEAK ? bind_rank[bind] : 3) * 32 +
	       (strchr(name, '@') ? 16 : 0) + (under < 7 ? under : 7);
}

/* Fills s from symbol i when it names code; false to skip it. */
static bool sym_take(struct dso *d, int i, struct dso_sym *s)
{
	char buf[512];
	GElf_Word shndx;
	GElf_Shdr shdr;
	GElf_Addr addr;
	const char *name;
	Elf_Scn *scn;
	GElf_Sym sym;
	uint8_t rank;
	Elf *elf;
	int type;

	name = dwfl_module_getsym_info(d->mod, i, &sym, &addr, &shndx, &elf,
				       NULL);
	if (!name || !name[0] || name[0] == '$')
		return false;
	type = GELF_ST_TYPE(sym.st_info);
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
		return false;
	if (shndx == SHN_UNDEF || shndx >= SHN_LORESERVE)
		return false;
	scn = elf_getscn(elf, shndx);
	if (!scn || !gelf_getshdr(scn, &shdr) ||
	    !(shdr.sh_flags & SHF_EXECINSTR))
		return false;
	rank = sym_rank(&sym, name);
	/* compat symbols (.symver) carry their version in .symtab */
	if (strchr(name, '@') && strcspn(name, "@") < sizeof(buf)) {
		snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(name, "@"),
			 name);
		name = dso_intern(d, buf);
	}
	*s = (struct dso_sym){
		.addr = addr, .name = name, .rank = rank,
		.sized = sym.st_size != 0,
		/* a label runs to the next symbol, at most to its section's
		 * end (addr - st_value turns section vaddr into ours) */
		.end = sym.st_size ? addr + sym.st_size :
		       shdr.sh_addr + shdr.sh_size + (addr - sym.st_value),
	};
	return s->end > s->addr;
}

/* Sorted by address, one symbol per address, labels inside a sized
 * symbol dropped (dwfl_module_addrsym() makes the same choice). */
void dso_load_syms(struct dso *d)
{
	uint64_t sized_end = 0;
	size_t i, n = 0;
	int cnt, k;

	cnt = dwfl_module_getsymtab(d->mod);
	if (cnt <= 1)
		return;
	d->syms = malloc(cnt * sizeof(*d->syms));
	if (!d->syms)
		return;
	d->syms_cap = cnt;
	for (k = 1; k < cnt; k++)
		n += sym_take(d, k, &d->syms[n]);
	qsort(d->syms, n, sizeof(*d->syms), sym_cmp);
	for (i = 0; i < n; i++) {
		if ((d->nsyms && d->syms[d->nsyms - 1].addr == d->syms[i].addr)
		    || (!d->syms[i].sized && d->syms[i].addr < sized_end))
			continue;
		if (d->syms[i].sized && d->syms[i].end > sized_end)
			sized_end = d->syms[i].end;
		d->syms[d->nsyms++] = d->syms[i];
	}
	for (i = 0; i + 1 < d->nsyms; i++)
		if (!d->syms[i].sized && d->syms[i].end > d->syms[i + 1].addr)
			d->syms[i].end = d->syms[i + 1].addr;
	d->caps.functions = d->nsyms > 0;
	d->sym_addrs = d->nsyms ? malloc(d->nsyms * sizeof(uint64_t)) : NULL;
	for (i = 0; d->sym_addrs && i < d->nsyms; i++)
		d->sym_addrs[i] = d->syms[i].addr;
}

const struct dso_sym *dso_sym_find(const struct dso *d, uint64_t a)
{
	size_t lo = 0, hi = d->nsyms, mid;

	while (lo < hi) {	/* first symbol above a */
		mid = lo + (hi - lo) / 2;
		if ((d->sym_addrs ? d->sym_addrs[mid] : d->syms[mid].addr) <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || a >= d->syms[lo - 1].end)
		return NULL;
	return &d->syms[lo - 1];
}
