// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * got.c - redirect the GOT entries of allocation functions to the agent.
 *
 * Every object the dynamic loader has loaded calls malloc & co. through
 * its GOT: a JUMP_SLOT entry per PLT stub, a GLOB_DAT entry where the code
 * calls through the GOT directly (-fno-plt, and glibc's own free/malloc).
 * Swapping those 8-byte words is atomic, so running threads see either the
 * old or the new function, never a torn pointer.
 *
 * Entries under RELRO were made read-only after relocation: the page is
 * made writable just for the swap. An object whose RELRO is still writable
 * is being relocated by the loader right now; touching it then would be
 * undone (or, once we restored PROT_READ, crash the loader), so a rescan
 * leaves it for a later one.
 *
 * What each entry held before is remembered, keyed by its address, to put
 * back at disarm; objects unloaded since are never touched (the restore
 * walks the objects loaded now, not the table).
 */
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sampler/heap/agent/agent_i.h"

#define MAX_SLOTS 8192

struct saved_slot {
	void **addr;
	void *orig;
};

static struct saved_slot saved[MAX_SLOTS];
static unsigned nsaved;
static unsigned nobjects;
static atomic_flag busy = ATOMIC_FLAG_INIT;

/* What one walk over the loaded objects is doing. */
struct walk {
	const struct got_hook *hooks;
	size_t nhooks;
	const void *self;
	bool redirect;		/* false: restore */
	bool all_objects;
	unsigned pending;
	int changed;
	uintptr_t page;		/* sysconf(_SC_PAGESIZE) */
};

/* One object's dynamic tables, pointers made absolute. */
struct dyn {
	const ElfW(Sym) *symtab;
	const char *strtab;
	size_t strsz;
	const ElfW(Rela) *rel[2];
	size_t relsz[2];
	uintptr_t relro_start, relro_end;
};

static struct saved_slot *find_saved(void **addr)
{
	for (unsigned i = 0; i < nsaved; i++)
		if (saved[i].addr == addr)
			return &saved[i];
	return NULL;
}

/* The dynamic section holds link-time addresses until the loader
 * relocates it; the vDSO's is never relocated. */
static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
	return v < base ? base + v : v;
}

static bool read_dyn(const struct dl_phdr_info *info, uintptr_t page,
		     struct dyn *d)
{
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t base = info->dlpi_addr;

	memset(d, 0, sizeof(*d));
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const void *)(base + ph->p_vaddr);
		/* What the loader makes read-only: whole pages only
		 * (_dl_protect_relro rounds both ends down). */
		if (ph->p_type == PT_GNU_RELRO) {
			d->relro_start = (base + ph->p_vaddr) & ~(page - 1);
			d->relro_end = (base + ph->p_vaddr + ph->p_memsz) &
				       ~(page - 1);
		}
	}
	if (!dyn)
		return false;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB:
			d->symtab = (const void *)dyn_ptr(base, dyn->d_un.d_ptr);
			break;
		case DT_STRTAB:
			d->strtab = (const void *)dyn_ptr(base, dyn->d_un.d_ptr);
			break;
		case DT_STRSZ:
			d->strsz = dyn->d_un.d_val;
			break;
		case DT_JMPREL:
			d->rel[0] = (const void *)dyn_ptr(base, dyn->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			d->relsz[0] = dyn->d_un.d_val;
			break;
		case DT_RELA:
			d->rel[1] = (const void *)dyn_ptr(base, dyn->d_un.d_ptr);
			break;
		case DT_RELASZ:
			d->relsz[1] = dyn->d_un.d_val;
			break;
		}
	}
	return d->symtab && d->strtab;
}

static bool holds(const struct dl_phdr_info *info, const void *addr)
{
	uintptr_t a = (uintptr_t)addr;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && a >= start &&
		    a < start + ph->p_memsz)
			return true;
	}
	return false;
}

/*
 * Writing a word back to itself through process_vm_writev fails on a
 * read-only page without changing anything: RELRO is read-only once the
 * loader is done with the object.
 */
static bool writable(void *addr)
{
	struct iovec local = { addr, sizeof(void *) };
	struct iovec remote = { addr, sizeof(void *) };

	return process_vm_writev(getpid(), &local, 1, &remote, 1, 0) ==
	       sizeof(void *);
}

static int hook_index(const struct walk *w, const char *name)
{
	for (size_t i = 0; i < w->nhooks; i++)
		if (name[0] == w->hooks[i].name[0] &&
		    !strcmp(name, w->hooks[i].name))
			return (int)i;
	return -1;
}

static void store(const struct walk *w, const struct dyn *d, void **addr,
		  void *val)
{
	uintptr_t a = (uintptr_t)addr;
	bool relro = a >= d->relro_start && a < d->relro_end;
	void *page = (void *)(a & ~(w->page - 1));

	if (relro && mprotect(page, w->page, PROT_READ | PROT_WRITE))
		return;
	__atomic_store_n(addr, val, __ATOMIC_RELEASE);
	if (relro)
		mprotect(page, w->page, PROT_READ);
}

/* Redirect or restore one GOT entry; true when it changed. */
static bool visit_slot(struct walk *w, const struct dyn *d, void **addr,
		       int hook)
{
	void *hook_fn = w->hooks[hook].hook, *cur;
	struct saved_slot *s;

	cur = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
	s = find_saved(addr);
	if (!w->redirect) {
		if (!s || cur != hook_fn)
			return false;
		store(w, d, addr, s->orig);
		return true;
	}
	if (cur == hook_fn)
		return false;
	if (!s) {
		if (nsaved == MAX_SLOTS)
			return false;
		s = &saved[nsaved++];
		s->addr = addr;
	}
	s->orig = cur;
	store(w, d, addr, hook_fn);
	return true;
}

static int visit_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	uintptr_t base = info->dlpi_addr;
	struct dyn d;
	int changed = 0;

	(void)size;
	if (holds(info, w->self) || !read_dyn(info, w->page, &d))
		return 0;
	if (w->redirect && !w->all_objects && d.relro_end > d.relro_start &&
	    writable((void *)d.relro_start)) {
		w->pending++;	/* being relocated: next time */
		return 0;
	}
	for (int t = 0; t < 2; t++) {
		size_t n = d.rel[t] ? d.relsz[t] / sizeof(ElfW(Rela)) : 0;

		for (size_t i = 0; i < n; i++) {
			const ElfW(Rela) *r = &d.rel[t][i];
			unsigned type = ELF64_R_TYPE(r->r_info);
			size_t sym = ELF64_R_SYM(r->r_info);
			size_t name;
			int h;

			if ((type != R_X86_64_JUMP_SLOT &&
			     type != R_X86_64_GLOB_DAT) || !sym)
				continue;
			name = d.symtab[sym].st_name;
			if (d.strsz && name >= d.strsz)
				continue;
			h = hook_index(w, d.strtab + name);
			if (h >= 0)
				changed += visit_slot(w, &d,
						      (void **)(base + r->r_offset),
						      h);
		}
	}
	if (changed && w->redirect)
		nobjects++;
	w->changed += changed;
	return 0;
}

static int walk(struct walk *w)
{
	if (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire))
		return -1;
	w->page = sysconf(_SC_PAGESIZE);
	dl_iterate_phdr(visit_object, w);
	atomic_flag_clear_explicit(&busy, memory_order_release);
	return w->changed;
}

int got_redirect(const struct got_hook *hooks, size_t n, const void *self,
		 bool all_objects, unsigned *pending)
{
	struct walk w = { .hooks = hooks, .nhooks = n, .self = self,
			  .redirect = true, .all_objects = all_objects };
	int ret;

	if (all_objects)
		nobjects = 0;
	ret = walk(&w);
	if (pending)
		*pending = w.pending;
	return ret;
}

int got_restore(const struct got_hook *hooks, size_t n)
{
	struct walk w = { .hooks = hooks, .nhooks = n, .redirect = false };

	return walk(&w);
}

void got_after_fork(void)
{
	atomic_flag_clear(&busy);
}

unsigned got_objects(void)
{
	return nobjects;
}
