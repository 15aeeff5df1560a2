// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dso.c - ELF objects for the unwinder and the symbolizer.
 *
 * Loading is cheap and eager: open, fstat, mmap the whole file, read the
 * program headers and the build-id with libelf. Everything libdw does
 * (finding a separate debug file, symbol table, DWARF) waits for the first
 * dso_symbolize()/dso_caps(), because most dsos are only unwound through.
 * The fd stays open until then: /proc/PID/map_files paths vanish with the
 * process, and libdwfl consumes the fd.
 *
 * Symbols are looked up in our own sorted table, not with
 * dwfl_module_addrsym(), which scans every symbol on each call. Results
 * are memoized per address: profiles meet the same pcs again and again.
 *
 * Three files, along the module's sections (dso_i.h is what they share):
 * this one, the ELF headers, the cache and addresses; dso_sym.c, the
 * address map, separate debug files and the symbol table; dso_dwarf.c,
 * DWARF and .debug_frame. Beside them: dso_expire.c (the cache's bounds
 * and expiry) and dso_mem.c (what an object holds, in bytes).
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

#include "sampler/clock.h"
#include "sampler/unwind/cu_index.h"
#include "sampler/unwind/demangle.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/dso_i.h"
#include "sampler/unwind/elfscn.h"
#include "sampler/unwind/gopclntab.h"
#include "sampler/log.h"

/* ---- ELF headers ---- */

static int dso_parse_phdrs(struct dso *d, Elf *elf, const char **why)
{
	size_t i, phnum;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &phnum) || !phnum) {
		*why = "no program headers";
		return -ENOEXEC;
	}
	d->segs = calloc(phnum, sizeof(*d->segs));
	if (!d->segs)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, i, &ph)) {
			*why = "bad program header";
			return -ENOEXEC;
		}
		if (ph.p_type == PT_GNU_EH_FRAME) {
			d->has_eh = true;
			d->eh_vaddr = ph.p_vaddr;
			d->eh_size = ph.p_memsz;
		}
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset > d->map_size ||
		    ph.p_filesz > d->map_size - ph.p_offset ||
		    ph.p_vaddr + ph.p_filesz < ph.p_vaddr) {
			*why = "PT_LOAD beyond end of file";
			return -ENOEXEC;
		}
		d->segs[d->nsegs++] = (struct dso_seg){
			.vaddr = ph.p_vaddr, .offset = ph.p_offset,
			.filesz = ph.p_filesz, .flags = ph.p_flags,
		};
	}
	if (!d->nsegs) {
		*why = "no PT_LOAD";
		return -ENOEXEC;
	}
	return 0;
}

static int dso_parse_build_id(struct dso *d, Elf *elf)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *id;
	ssize_t len, i;

	len = dwelf_elf_gnu_build_id(elf, (const void **)&id);
	if (len < 0)
		len = 0;
	d->build_id = malloc(2 * len + 1);
	if (!d->build_id)
		return -ENOMEM;
	for (i = 0; i < len; i++) {
		d->build_id[2 * i] = hex[id[i] >> 4];
		d->build_id[2 * i + 1] = hex[id[i] & 15];
	}
	d->build_id[2 * len] = '\0';
	return 0;
}

bool dso_elf_has_section(Elf *elf, const char *want)
{
	GElf_Shdr shdr;

	return elf_section_named(elf, want, &shdr);
}

/* Rejects what the kernel would not load and what a cut-off copy looks
 * like, so later users of the mapping never read past its end. */
static int dso_parse(struct dso *d, const char **why)
{
	size_t shnum, shsize;
	GElf_Ehdr eh;
	Elf *elf;
	int ret = -ENOEXEC;

	elf = elf_memory((char *)d->map, d->map_size);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		*why = "not an ELF file";
		goto out;
	}
	if (!gelf_getehdr(elf, &eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
		*why = "not an executable or shared object";
		goto out;
	}
	/* From the header: libelf quietly drops a table that does not fit.
	 * Past 0xff00 sections the count is in section 0, which must fit. */
	shsize = gelf_fsize(elf, ELF_T_SHDR, 1, EV_CURRENT);
	shnum = eh.e_shnum ? eh.e_shnum : eh.e_shoff != 0;
	if (shnum && (eh.e_shoff > d->map_size || !shsize ||
		      shnum > (d->map_size - eh.e_shoff) / shsize)) {
		*why = "section headers beyond end of file";
		goto out;
	}
	ret = dso_parse_phdrs(d, elf, why);
	if (!ret)
		ret = dso_parse_build_id(d, elf);
	d->file_bytes = dso_sections_bytes(elf, (const char *const[]){
		".eh_frame", ".eh_frame_hdr", ".gopclntab", NULL });
	d->go = dso_elf_has_section(elf, ".go.buildinfo") ||
		dso_elf_has_section(elf, ".note.go.buildid");
	if (!ret && d->go && !gopcln_from_elf(elf, d->map, d->map_size,
					      &d->gopcln))
		pr_debug("dso: %s: .gopclntab of %s", d->name,
			 gopcln_version(d->gopcln));
out:
	elf_end(elf);
	return ret;
}

static void dso_free(struct dso *d)
{
	struct dso_str *str, *next;
	size_t i;

	cu_index_free(d->cus);
	gopcln_free(d->gopcln);
	if (d->dwfl)
		dwfl_end(d->dwfl);
	if (d->fd >= 0)
		close(d->fd);
	if (d->map)
		munmap((void *)d->map, d->map_size);
	for (i = 0; d->demangled.mask && i <= d->demangled.mask; i++)
		if (d->demangled.slots[i].key != U64MAP_EMPTY &&
		    d->demangled.slots[i].val != d->demangled.slots[i].key)
			free((void *)(uintptr_t)d->demangled.slots[i].val);
	dso_map_free(&d->demangled);
	for (i = 0; d->strs.mask && i <= d->strs.mask; i++) {
		if (d->strs.slots[i].key == U64MAP_EMPTY)
			continue;
		str = (struct dso_str *)(uintptr_t)d->strs.slots[i].val;
		for (; str; str = next) {
			next = str->next;
			free(str);
		}
	}
	dso_map_free(&d->strs);
	dso_map_free(&d->addrs);
	dso_map_free(&d->cus_seen);
	if (d->df_index)
		d->df_drop(d->df_index);
	free(d->df_data);
	for (i = 0; i < DSO_MEMO__COUNT; i++)
		free(d->memo[i]);
	free(atomic_load(&d->eh_top));
	pthread_mutex_destroy(&d->lock);
	dso_rows_free(d);
	free(d->pool);
	free(d->syms);
	free(d->sym_addrs);
	free(d->segs);
	free(d->debug_roots);
	free(d->inflate_dir);
	free(d->sysroot);
	free(d->build_id);
	free(d->name);
	free(d);
}

/* The target's root as seen from here, when open_path is
 * /proc/PID/root + name: debug files of containers live under it. */
static char *dso_sysroot(const char *open_path, const char *name)
{
	size_t lo = strlen(open_path), ln = strlen(name);

	if (name[0] == '/' && lo > ln && !strcmp(open_path + lo - ln, name))
		return strndup(open_path, lo - ln);
	return strdup("");
}

/* Takes fd. */
static int dso_load(const struct dso_cache *c, int fd, const struct stat *st,
		    const char *open_path, const char *name, struct dso **out)
{
	const char *why = "empty file";
	struct dso *d;
	void *map;
	int ret;

	d = calloc(1, sizeof(*d));
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	atomic_init(&d->refs, 1);
	atomic_init(&d->df_done, false);
	d->fd = fd;
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->rows_lock, NULL);
	d->dev = st->st_dev;
	d->ino = st->st_ino;
	d->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	d->name = strdup(name);
	d->sysroot = dso_sysroot(open_path, name);
	d->debug_roots = strdup(c->roots);
	d->inflate_dir = c->inflate_dir ? strdup(c->inflate_dir) : NULL;
	ret = -ENOMEM;
	if (!d->name || !d->sysroot || !d->debug_roots ||
	    (c->inflate_dir && !d->inflate_dir))
		goto err;
	ret = -ENOEXEC;
	if (st->st_size <= 0 || (uint64_t)st->st_size > SIZE_MAX)
		goto err_why;
	map = mmap(NULL, st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		ret = errno == ENOMEM ? -ENOMEM : -ENOEXEC;
		why = "cannot mmap";
		goto err_why;
	}
	d->map = map;
	d->map_size = st->st_size;
	ret = dso_parse(d, &why);
	if (ret)
		goto err_why;
	dso_mem_update(d);
	*out = d;
	return 0;
err_why:
	if (ret == -ENOEXEC)
		pr_debug("dso: %s: %s", name, why);
err:
	dso_free(d);
	return ret;
}

/* ---- the cache ---- */

int dso_cache_new(const char *debug_roots, struct dso_cache **out)
{
	struct dso_cache *c;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->roots = strdup(debug_roots ? debug_roots : DSO_DEFAULT_ROOTS);
	c->ntab = 256;
	c->max = DSO_CACHE_MAX;
	c->idle_ms = DSO_CACHE_IDLE_S * 1000ull;
	c->max_bytes = DSO_CACHE_BYTES;
	c->grace_ms = DSO_CACHE_GRACE_MS;
	c->tab = calloc(c->ntab, sizeof(*c->tab));
	if (!c->roots || !c->tab) {
		free(c->roots);
		free(c->tab);
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

void dso_cache_free(struct dso_cache *c)
{
	struct cache_ent *e, *next;
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->ntab; i++) {
		for (e = c->tab[i]; e; e = next) {
			next = e->next;
			if (e->owner)
				dso_put(e->dso);
			free(e);
		}
	}
	pthread_mutex_destroy(&c->lock);
	free(c->tab);
	free(c->roots);
	free(c->inflate_dir);
	free(c);
}

int dso_cache_set_inflate_dir(struct dso_cache *c, const char *dir)
{
	char *copy = strdup(dir);

	if (!copy)
		return -ENOMEM;
	free(c->inflate_dir);
	c->inflate_dir = copy;
	return 0;
}

/* Called with c->lock held. */
static struct dso *cache_lookup(const struct dso_cache *c, const char *key)
{
	struct cache_ent *e;

	for (e = c->tab[dso_hash_str(key) & (c->ntab - 1)]; e; e = e->next)
		if (!strcmp(e->key, key))
			return e->dso;
	return NULL;
}

/* A new reference to the dso cached under key, or NULL. */
static struct dso *cache_find(struct dso_cache *c, const char *key)
{
	struct dso *d;

	pthread_mutex_lock(&c->lock);
	d = cache_lookup(c, key);
	if (d)
		dso_get(d);
	pthread_mutex_unlock(&c->lock);
	return d;
}

/* Called with c->lock held. */
static void cache_grow(struct dso_cache *c)
{
	struct cache_ent **tab, *e, *next;
	size_t i, n = c->ntab * 2;

	tab = calloc(n, sizeof(*tab));
	if (!tab)
		return;		/* longer chains, still correct */
	for (i = 0; i < c->ntab; i++) {
		for (e = c->tab[i]; e; e = next) {
			next = e->next;
			e->next = tab[dso_hash_str(e->key) & (n - 1)];
			tab[dso_hash_str(e->key) & (n - 1)] = e;
		}
	}
	free(c->tab);
	c->tab = tab;
	c->ntab = n;
}

/* Called with c->lock held. */
static int cache_insert(struct dso_cache *c, const char *key, struct dso *d,
			bool owner)
{
	size_t len = strlen(key) + 1;
	struct cache_ent *e = malloc(sizeof(*e) + len);
	size_t b;

	if (!e)
		return -ENOMEM;
	if (c->nent >= c->ntab)
		cache_grow(c);
	memcpy(e->key, key, len);
	e->dso = d;
	e->owner = owner;
	c->nobj += owner;
	b = dso_hash_str(key) & (c->ntab - 1);
	e->next = c->tab[b];
	c->tab[b] = e;
	c->nent++;
	return 0;
}

/* Publish a freshly loaded d, or return the dso that won a race or shares
 * its build-id. Takes the caller's reference to d; *out gets a new one. */
static int cache_add(struct dso_cache *c, const char *stat_key,
		     struct dso *d, struct dso **out)
{
	struct dso *old;
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	old = cache_lookup(c, stat_key);
	if (!old && d->build_id[0]) {
		old = cache_lookup(c, d->build_id);
		if (old && cache_insert(c, stat_key, old, false))
			old = NULL, ret = -ENOMEM;
	}
	if (old) {
		*out = dso_get(old);
	} else if (!ret) {
		ret = cache_insert(c, stat_key, d, true);
		if (!ret && d->build_id[0] &&
		    cache_insert(c, d->build_id, d, false))
			pr_debug("dso: %s: no memory for build-id key",
				 d->name);
		if (!ret) {
			*out = dso_get(d);
			d = NULL;	/* its first reference is the cache's */
		}
	}
	pthread_mutex_unlock(&c->lock);
	dso_put(d);
	return ret;
}

int dso_cache_get(struct dso_cache *c, const char *open_path,
		  const char *name, struct dso **out)
{
	char key[96];
	struct stat st;
	struct dso *d;
	int fd, ret;

	if (!name)
		name = open_path;
	dso_cache_sweep(c, false);
	fd = open(open_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		ret = S_ISREG(st.st_mode) ? -errno : -ENOEXEC;
		close(fd);
		return ret;
	}
	snprintf(key, sizeof(key), "%llx:%llx:%lld:%lld.%09ld",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 (long long)st.st_size, (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec);
	d = cache_find(c, key);
	if (d) {
		close(fd);
		*out = d;
		return 0;
	}
	ret = dso_load(c, fd, &st, open_path, name, &d);
	if (ret)
		return ret;
	return cache_add(c, key, d, out);
}

static uint64_t hash_mem(const unsigned char *p, size_t n)
{
	uint64_t h = 14695981039346656037ULL;

	while (n--)
		h = (h ^ *p++) * 1099511628211ULL;
	return h;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= w;
	}
	return 0;
}

/* The image goes into a memfd, which every later step (mmap, libdwfl)
 * takes as it takes a file; the key is its contents, so each process
 * running on the same kernel finds the one dso of its vDSO. */
int dso_cache_get_image(struct dso_cache *c, const char *name,
			const void *image, size_t len, struct dso **out)
{
	struct stat st;
	struct dso *d;
	char key[64];
	int fd, ret;

	snprintf(key, sizeof(key), "image:%zx:%016llx", len,
		 (unsigned long long)hash_mem(image, len));
	d = cache_find(c, key);
	if (d) {
		*out = d;
		return 0;
	}
	fd = memfd_create("proffs-image", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = write_all(fd, image, len);
	if (!ret && fstat(fd, &st))
		ret = -errno;
	if (ret) {
		close(fd);
		return ret;
	}
	ret = dso_load(c, fd, &st, name, name, &d);
	if (ret)
		return ret;
	return cache_add(c, key, d, out);
}

struct dso *dso_get(struct dso *d)
{
	atomic_fetch_add_explicit(&d->refs, 1, memory_order_relaxed);
	return d;
}

void dso_put(struct dso *d)
{
	if (d)
		atomic_store_explicit(&d->last_put_ms,
				      now_ns() / 1000000,
				      memory_order_relaxed);
	if (d && atomic_fetch_sub_explicit(&d->refs, 1,
					   memory_order_acq_rel) == 1)
		dso_free(d);
}

const char *dso_name(const struct dso *d)
{
	return d->name;
}

const char *dso_build_id(const struct dso *d)
{
	return d->build_id;
}

/* ---- addresses ---- */

/*
 * A mapping's pgoff is the page-aligned-down p_offset of the segment the
 * kernel mapped, and the segment's vaddr is p_offset's plus a constant:
 * the segment holding pgoff gives the vaddr. Linkers that do not start
 * each segment on a page of its own (LLD's text at offset 0x710, vaddr
 * 0x1710, in the first page with the headers and rodata) put several
 * segments in one page: an executable mapping comes from an executable
 * segment, then the one starting exactly at pgoff wins, then the one
 * starting in that page, then plain containment (mappings mprotect()
 * split).
 */
int dso_offset_to_vaddr(const struct dso *d, uint64_t offset, bool exec,
			uint64_t *vaddr)
{
	const struct dso_seg *s, *best = NULL;
	int i, rank, best_rank = INT_MAX;

	for (i = 0; i < d->nsegs; i++) {
		s = &d->segs[i];
		if (offset < (s->offset & ~(d->page_size - 1)) ||
		    (offset >= s->offset && offset - s->offset >= s->filesz))
			continue;
		if (offset == s->offset)
			rank = 0;
		else if (offset == (s->offset & ~(d->page_size - 1)))
			rank = 2;
		else
			rank = offset > s->offset ? 4 : 6;
		if (exec != !!(s->flags & PF_X))
			rank += 8;
		if (rank < best_rank) {
			best = s;
			best_rank = rank;
		}
	}
	if (!best)
		return -ENOENT;
	*vaddr = best->vaddr + (offset - best->offset);
	return 0;
}

bool dso_maps_offset_at(const struct dso *d, uint64_t offset,
			uint64_t vaddr)
{
	const struct dso_seg *s;

	for (int i = 0; i < d->nsegs; i++) {
		s = &d->segs[i];
		if (offset >= (s->offset & ~(d->page_size - 1)) &&
		    (offset < s->offset || offset - s->offset < s->filesz) &&
		    vaddr - s->vaddr == offset - s->offset)
			return true;
	}
	return false;
}

const uint8_t *dso_bytes(const struct dso *d, uint64_t vaddr, size_t len)
{
	const struct dso_seg *s;
	uint64_t rel;

	for (int i = 0; i < d->nsegs; i++) {
		s = &d->segs[i];
		rel = vaddr - s->vaddr;
		if (vaddr < s->vaddr || rel >= s->filesz)
			continue;
		if (len > s->filesz - rel)
			return NULL;
		return d->map + s->offset + rel;
	}
	return NULL;
}

int dso_read(const struct dso *d, uint64_t vaddr, void *buf, size_t len)
{
	const uint8_t *p = dso_bytes(d, vaddr, len);

	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

const struct gopcln *dso_gopcln(const struct dso *d)
{
	return d->gopcln;
}

int dso_memo_get(struct dso *d, enum dso_memo_kind k, void *buf,
		 size_t size)
{
	int ret = -ENOENT;

	if ((unsigned)k >= DSO_MEMO__COUNT)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	if (d->memo[k] && d->memo_size[k] == size) {
		memcpy(buf, d->memo[k], size);
		ret = 0;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

int dso_memo_put(struct dso *d, enum dso_memo_kind k, const void *buf,
		 size_t size)
{
	void *copy;

	if ((unsigned)k >= DSO_MEMO__COUNT || !size || size > DSO_MEMO_MAX)
		return -EINVAL;
	copy = malloc(size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, size);
	pthread_mutex_lock(&d->lock);
	free(d->memo[k]);
	d->memo[k] = copy;
	d->memo_size[k] = size;
	dso_mem_update(d);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

bool dso_is_go(const struct dso *d)
{
	return d->go;
}

int dso_section(const struct dso *d, const char *name, uint64_t *vaddr,
		uint64_t *size)
{
	Elf *elf = elf_memory((char *)d->map, d->map_size);
	GElf_Shdr shdr;
	int ret = -ENOENT;

	if (elf && elf_section_named(elf, name, &shdr) && shdr.sh_addr) {
		*vaddr = shdr.sh_addr;
		*size = shdr.sh_size;
		ret = 0;
	}
	if (elf)
		elf_end(elf);
	return ret;
}

int dso_eh_frame_hdr(const struct dso *d, uint64_t *vaddr, uint64_t *size)
{
	if (!d->has_eh)
		return -ENOENT;
	*vaddr = d->eh_vaddr;
	*size = d->eh_size;
	return 0;
}

#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_datarel 0x30

/* Every DSO_EH_STRIDE-th start of t's entries, or NULL without memory. */
static int32_t *eh_top_make(const struct dso_eh_table *t)
{
	uint32_t n = (t->count + DSO_EH_STRIDE - 1) / DSO_EH_STRIDE;
	int32_t *top = malloc(n * sizeof(*top));

	for (uint32_t k = 0; top && k < n; k++)
		memcpy(&top[k], t->entries + 8ull * DSO_EH_STRIDE * k,
		       sizeof(*top));
	return top;
}

int dso_eh_table(struct dso *d, struct dso_eh_table *t)
{
	const uint8_t *head;
	int32_t *top, *none = NULL;

	head = d->has_eh ? dso_bytes(d, d->eh_vaddr, 12) : NULL;
	if (!head || head[0] != 1 || (head[1] & 0x0f) != DW_EH_PE_sdata4 ||
	    head[2] != DW_EH_PE_udata4 ||
	    head[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return -ENOENT;
	t->hdr = d->eh_vaddr;
	memcpy(&t->count, head + 8, sizeof(t->count));
	t->entries = dso_bytes(d, d->eh_vaddr + 12, 8ull * t->count);
	if (!t->count || !t->entries)
		return -ENOENT;
	top = atomic_load_explicit(&d->eh_top, memory_order_acquire);
	if (!top) {
		top = eh_top_make(t);
		if (top && !atomic_compare_exchange_strong(&d->eh_top, &none,
							   top)) {
			free(top);
			top = none;	/* another thread's */
		}
	}
	t->top = top;
	return 0;
}
