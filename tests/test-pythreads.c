// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-pythreads.c - the thread names sampler/runtime/pythreads.c reads,
 * from objects laid out in this process as CPython 3.8, 3.9 and 3.10
 * lay them out (the offsets of pyenv's builds' DWARF), read back through
 * process_vm_readv of this process: _PyRuntime -> interp -> modules ->
 * the threading module -> _active -> each Thread's __dict__ (a split
 * table, at its type's tp_dictoffset) -> _native_id and _name. Dicts of
 * 8 and 512 slots (indices 1 and 2 bytes wide); bad keys objects give
 * no name and no crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sampler/runtime/python_i.h"

#define U(p) ((uint64_t)(uintptr_t)(p))

static void *blocks[128];	/* of a world, freed by its test */
static size_t nblocks;

static void *zalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p || nblocks == sizeof(blocks) / sizeof(blocks[0]))
		die("zalloc", -1);
	blocks[nblocks++] = p;
	return p;
}

static void free_all(void)
{
	while (nblocks)
		free(blocks[--nblocks]);
}

/* A compact ASCII str of 3.8-3.10: 48 bytes of header (wstr), data */
static uint64_t *str(const char *s)
{
	uint64_t *o = zalloc(1, 48 + strlen(s) + 1);

	o[2] = strlen(s);
	o[4] = 1u << 2 | 1u << 5 | 1u << 6 | 1u << 7;	/* kind 1, compact,
							 * ascii, ready */
	memcpy((char *)o + 48, s, strlen(s));
	return o;
}

/* An int of one 30-bit digit */
static uint64_t *num(uint32_t v)
{
	uint64_t *o = zalloc(4, 8);

	o[2] = 1;
	memcpy(o + 3, &v, 4);
	return o;
}

/* A keys object of size slots (a power of two) holding n entries:
 * key i is keys[i], its value values[i] (NULL in a split table's) */
static uint64_t *keys_obj(uint64_t size, size_t n, uint64_t *const *keys,
			  uint64_t *const *values)
{
	size_t ix = size <= 0xff ? 1 : 2;
	uint8_t *k = zalloc(1, 40 + size * ix + 24 * n);
	uint64_t hdr[5] = { 1, size, 0, 0, n }, e[3];

	memcpy(k, hdr, sizeof(hdr));
	for (size_t i = 0; i < n; i++) {
		e[0] = 1000 + i;	/* hash */
		e[1] = U(keys[i]);
		e[2] = values ? U(values[i]) : 0;
		memcpy(k + 40 + size * ix + 24 * i, e, sizeof(e));
	}
	return (uint64_t *)k;
}

static uint64_t *dict(uint64_t *keys, uint64_t **values)
{
	uint64_t *d = zalloc(6, 8);

	d[4] = U(keys);
	d[5] = U(values);
	return d;
}

struct world {
	uint64_t *runtime, *interp, *active_keys;
};

/* The objects of a 3.minor process with threads MainThread (tid 4242)
 * and worker-a (tid 77777); _active's dict has size slots */
static void world(struct world *w, unsigned minor, uint64_t size)
{
	uint64_t *type = zalloc(0x200, 1);
	uint64_t *attr_names[3] = { str("_target"), str("_name"),
				    str("_native_id") };
	uint64_t *shared = keys_obj(8, 3, attr_names, NULL);
	uint64_t *threads[2], *idents[2];
	const char *names[2] = { "MainThread", "worker-a" };
	uint32_t tids[2] = { 4242, 77777 };
	uint64_t *mods[3], *modvals[3], *tkeys[2], *tvals[2];

	type[0x120 / 8] = 16;	/* tp_dictoffset */
	for (int i = 0; i < 2; i++) {
		uint64_t **values = zalloc(3, 8);

		values[0] = num(1);
		values[1] = str(names[i]);
		values[2] = num(tids[i]);
		threads[i] = zalloc(4, 8);
		threads[i][1] = U(type);
		threads[i][2] = U(dict(shared, values));
		idents[i] = num(1000 + i);
	}
	tkeys[0] = idents[0];
	tkeys[1] = idents[1];
	tvals[0] = threads[0];
	tvals[1] = threads[1];
	w->active_keys = keys_obj(size, 2, tkeys, tvals);
	uint64_t *active = dict(w->active_keys, NULL);
	uint64_t *mkeys[2] = { str("_active"), str("_limbo") };
	uint64_t *mvals[2] = { active, num(0) };
	uint64_t *module = zalloc(4, 8);

	module[2] = U(dict(keys_obj(8, 2, mkeys, mvals), NULL));
	mods[0] = str("sys");
	mods[1] = str("threading");
	mods[2] = str("os");
	modvals[0] = num(0);
	modvals[1] = module;
	modvals[2] = num(0);
	w->interp = zalloc(0x400, 1);
	w->interp[(minor == 8 ? 0x38 : 0x358) / 8] =
		U(dict(keys_obj(512, 3, mods, modvals), NULL));
	w->runtime = zalloc(0x40, 1);
	w->runtime[0x20 / 8] = U(w->interp);
}

static struct pyrt *reader(const struct world *w, unsigned minor)
{
	struct pyrt *r = calloc(1, sizeof(*r));

	if (!r)
		die("calloc", -1);

	r->pid = getpid();
	r->minor = minor;
	r->o = pyoffsets_find(minor);
	r->runtime = U(w->runtime);
	return r;
}

static void done(struct pyrt *r)
{
	pyrt_names_free(r->names);
	free(r);
}

static void test_names(unsigned minor, uint64_t size)
{
	struct world w;
	struct pyrt *r;
	const char *n;

	world(&w, minor, size);
	r = reader(&w, minor);
	n = pyrt_thread_name(r, 4242);
	CHECK(n && !strcmp(n, "MainThread"), "3.%u/%llu main: %s", minor,
	      (unsigned long long)size, n ? n : "(none)");
	n = pyrt_thread_name(r, 77777);
	CHECK(n && !strcmp(n, "worker-a"), "3.%u worker: %s", minor,
	      n ? n : "(none)");
	CHECK(!pyrt_thread_name(r, 5), "3.%u unknown tid", minor);
	done(r);
	/* the other versions' interp->modules offset finds nothing */
	r = reader(&w, minor == 8 ? 9 : 8);
	CHECK(!pyrt_thread_name(r, 4242), "3.%u's modules as 3.8's", minor);
	done(r);
	/* dk_size not a power of two, or fewer slots than entries */
	w.active_keys[1] = 12;
	r = reader(&w, minor);
	CHECK(!pyrt_thread_name(r, 4242), "3.%u size 12", minor);
	done(r);
	w.active_keys[1] = 1;
	r = reader(&w, minor);
	CHECK(!pyrt_thread_name(r, 4242), "3.%u size 1, 2 entries", minor);
	done(r);
	free_all();
}

int main(void)
{
	for (unsigned minor = 8; minor <= 10; minor++) {
		test_names(minor, 8);
		test_names(minor, 512);
	}
	if (failures)
		return 1;
	printf("pythreads: ok\n");
	return 0;
}
