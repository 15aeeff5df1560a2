// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * resolve.c - find the functions the hooks stand in front of, by
 * definition, and prove that none of them leads back into the agent.
 *
 * dlsym(RTLD_DEFAULT, "malloc") is not the answer in a non-PIE executable
 * (ET_EXEC) that takes malloc's address: its .dynsym gives malloc an
 * undefined symbol with a nonzero value, the address of its own PLT stub
 * (the "canonical PLT entry", for pointer equality), and dlsym returns
 * that stub. Debian's python3.11 and node are built so. A hook that goes
 * on to that stub goes through the very GOT entry the agent redirected,
 * into the hook again: python spun forever in the free hook, node's stack
 * overflowed (issue 25).
 *
 * So the real function is looked up the way the dynamic loader binds a
 * call from a shared object: the first object, in load order, whose
 * .dynsym *defines* the name (a section index, a nonzero value, a
 * function, a default version), through its hash table; the executable
 * counts only where it really defines the function. Objects holding the
 * agent are skipped. An IFUNC is resolved by calling its resolver, as
 * the loader does on x86-64.
 *
 * Then real_chase() follows the first instructions of a function found
 * (jmp rel, jmp *mem through a GOT entry, with endbr64 and bnd prefixes),
 * as the CPU would, and says where that chain enters the agent's code, if
 * it does (a jemalloc operator delete that is `jmp free@plt` enters the
 * free hook: a chain, not a loop - agent.c tells them apart). The agent checks every hook's real function with it
 * before it redirects anything and again after every redirect (a GOT
 * entry an earlier look saw as the allocator's may point at a hook now).
 * Memory is read with process_vm_readv, so a bad pointer fails the
 * check, never faults.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sampler/heap/agent/agent_i.h"

#define CHASE_STEPS 8

static bool holds(const struct dl_phdr_info *info, uintptr_t a);

struct mapped {
	uintptr_t addr;
	size_t len;
	bool in;
};

static int mapped_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct mapped *m = arg;

	(void)size;
	if (!holds(info, m->addr) || !holds(info, m->addr + m->len - 1))
		return 0;
	m->in = true;
	return 1;
}

/*
 * Read len bytes at addr; false when any of them is not mapped. Where a
 * policy forbids process_vm_readv (seccomp), bytes inside one loaded
 * object's segments are read directly: code and GOT entries always are.
 */
static bool peek(uintptr_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)addr, len };
	struct mapped m = { .addr = addr, .len = len };
	ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);

	if (n == (ssize_t)len)
		return true;
	if (n >= 0 || (errno != ENOSYS && errno != EPERM))
		return false;
	dl_iterate_phdr(mapped_cb, &m);
	if (m.in)
		memcpy(buf, (const void *)addr, len);
	return m.in;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (uint8_t)*s;
	return h;
}

static uint32_t elf_hash(const char *s)
{
	uint32_t h = 0, g;

	for (; *s; s++) {
		h = (h << 4) + (uint8_t)*s;
		g = h & 0xf0000000u;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

/* One object's symbol tables, pointers made absolute. */
struct symtabs {
	uintptr_t base;
	const ElfW(Sym) *sym;
	const char *str;
	size_t strsz;
	const uint32_t *gnu;	/* DT_GNU_HASH */
	const uint32_t *sysv;	/* DT_HASH */
	const uint16_t *versym;	/* DT_VERSYM, or NULL */
};

static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
	return v < base ? base + v : v;
}

static bool read_tables(const struct dl_phdr_info *info, struct symtabs *t)
{
	const ElfW(Dyn) *dyn = NULL;

	memset(t, 0, sizeof(*t));
	t->base = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const void *)(t->base +
					     info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return false;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t p = dyn_ptr(t->base, dyn->d_un.d_ptr);

		switch (dyn->d_tag) {
		case DT_SYMTAB: t->sym = (const void *)p; break;
		case DT_STRTAB: t->str = (const void *)p; break;
		case DT_STRSZ: t->strsz = dyn->d_un.d_val; break;
		case DT_GNU_HASH: t->gnu = (const void *)p; break;
		case DT_HASH: t->sysv = (const void *)p; break;
		case DT_VERSYM: t->versym = (const void *)p; break;
		}
	}
	return t->sym && t->str && (t->gnu || t->sysv);
}

/* Symbol i defines name with its default version: what an unversioned
 * or newly linked reference binds to. */
static bool defines(const struct symtabs *t, size_t i, const char *name)
{
	const ElfW(Sym) *s = &t->sym[i];
	unsigned type = ELF64_ST_TYPE(s->st_info);
	unsigned bind = ELF64_ST_BIND(s->st_info);

	if (s->st_shndx == SHN_UNDEF || !s->st_value ||
	    (type != STT_FUNC && type != STT_GNU_IFUNC) ||
	    (bind != STB_GLOBAL && bind != STB_WEAK) ||
	    ELF64_ST_VISIBILITY(s->st_other) == STV_HIDDEN ||
	    ELF64_ST_VISIBILITY(s->st_other) == STV_INTERNAL)
		return false;
	if (t->strsz && s->st_name >= t->strsz)
		return false;
	if (t->versym && (t->versym[i] & 0x8000))
		return false;	/* a hidden, older version */
	return !strcmp(t->str + s->st_name, name);
}

/* The index of name's definition in the object, or 0. */
static size_t lookup(const struct symtabs *t, const char *name)
{
	if (t->gnu) {
		uint32_t nbuckets = t->gnu[0], symoffset = t->gnu[1];
		uint32_t bloom_size = t->gnu[2];
		const uint32_t *buckets = t->gnu + 4 + 2 * bloom_size;
		const uint32_t *chain = buckets + nbuckets;
		uint32_t h = gnu_hash(name), i;

		if (!nbuckets)
			return 0;
		i = buckets[h % nbuckets];
		if (i < symoffset)
			return 0;
		for (;; i++) {
			uint32_t h2 = chain[i - symoffset];

			if ((h | 1) == (h2 | 1) && defines(t, i, name))
				return i;
			if (h2 & 1)
				return 0;
		}
	}
	{
		uint32_t nbucket = t->sysv[0];
		const uint32_t *bucket = t->sysv + 2, *chain = bucket + nbucket;
		uint32_t nchain = t->sysv[1];

		if (!nbucket)
			return 0;
		for (uint32_t i = bucket[elf_hash(name) % nbucket], k = 0;
		     i && i < nchain && k < nchain; i = chain[i], k++)
			if (defines(t, i, name))
				return i;
	}
	return 0;
}

static bool holds(const struct dl_phdr_info *info, uintptr_t a)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && a >= start &&
		    a - start < ph->p_memsz)
			return true;
	}
	return false;
}

struct find_def {
	const char *name;
	uintptr_t self;
	uintptr_t found;
	bool ifunc;
};

static int find_def_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find_def *f = arg;
	struct symtabs t;
	size_t i;

	(void)size;
	/* the agent itself, and the vDSO (no name, no file) */
	if (holds(info, f->self) || !read_tables(info, &t))
		return 0;
	i = lookup(&t, f->name);
	if (!i)
		return 0;
	f->found = t.base + t.sym[i].st_value;
	f->ifunc = ELF64_ST_TYPE(t.sym[i].st_info) == STT_GNU_IFUNC;
	return 1;
}

void *resolve_real(const char *name, const void *self)
{
	struct find_def f = { .name = name, .self = (uintptr_t)self };

	dl_iterate_phdr(find_def_cb, &f);
	if (f.found && f.ifunc)	/* x86-64: the loader passes nothing */
		f.found = ((uintptr_t (*)(void))f.found)();
	return (void *)f.found;
}

struct range_cb {
	uintptr_t self, lo, hi;
};

static int range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct range_cb *r = arg;

	(void)size;
	if (!holds(info, r->self))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (!r->lo || start < r->lo)
			r->lo = start;
		if (start + ph->p_memsz > r->hi)
			r->hi = start + ph->p_memsz;
	}
	return 1;
}

void resolve_self(const void *self, uintptr_t *lo, uintptr_t *hi)
{
	struct range_cb r = { .self = (uintptr_t)self };

	dl_iterate_phdr(range_cb, &r);
	*lo = r.lo;
	*hi = r.hi;
}

/* Read what can be read of 16 bytes at p (less only at a mapping's
 * end); the bytes read. */
static size_t peek_some(uintptr_t p, uint8_t *c)
{
	for (size_t n = 16; n >= 2; n /= 2)
		if (peek(p, c, n))
			return n;
	return 0;
}

/*
 * The next address the CPU goes to from code at p when it starts with an
 * unconditional jump (optionally after endbr64 and a bnd prefix); 0 when
 * it does not, 1 when where it jumps cannot be read.
 */
static uintptr_t jump_target(uintptr_t p)
{
	uint8_t c[16];
	size_t n = peek_some(p, c), k = 0;
	int32_t rel;
	uintptr_t to;

	if (!n)
		return 1;
	if (n >= 4 && !memcmp(c, "\xf3\x0f\x1e\xfa", 4))	/* endbr64 */
		k = 4;
	if (k < n && c[k] == 0xf2)				/* bnd */
		k++;
	if (k < n && c[k] == 0xeb)				/* jmp rel8 */
		return k + 2 <= n ? p + k + 2 + (int8_t)c[k + 1] : 1;
	if (k < n && c[k] == 0xe9) {				/* jmp rel32 */
		if (k + 5 > n)
			return 1;
		memcpy(&rel, c + k + 1, 4);
		return p + k + 5 + rel;
	}
	if (k + 1 < n && c[k] == 0xff && c[k + 1] == 0x25) {	/* jmp *m */
		if (k + 6 > n)
			return 1;
		memcpy(&rel, c + k + 2, 4);
		return peek(p + k + 6 + rel, &to, sizeof(to)) && to ? to : 1;
	}
	return 0;
}

uintptr_t real_chase(const void *fn, uintptr_t lo, uintptr_t hi)
{
	uintptr_t p = (uintptr_t)fn;

	for (int i = 0; i < CHASE_STEPS; i++) {
		if (p < 2)
			return 1;
		if (p >= lo && p < hi)
			return p;
		p = jump_target(p);
		if (!p)
			return 0;	/* real code: it does not jump on */
	}
	return 1;	/* a chain this long is no allocator's */
}

bool real_leads_back(const void *fn, uintptr_t lo, uintptr_t hi)
{
	return real_chase(fn, lo, hi) != 0;
}
