// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pythreads.c - the names the threading module gave a CPython process's
 * threads, read from outside as py-spy reads them.
 *
 * threading._active maps each running Thread's ident to the Thread; each
 * Thread keeps its name in _name and its kernel thread id in _native_id.
 * They are found through the main interpreter's modules dict (sys.modules)
 * -> the threading module -> its dict -> _active, and each Thread's
 * attributes, all read with process_vm_readv, no stop. _active's
 * address is looked up once per session; _active is read again when a
 * thread is asked for that the last read did not name, at most every
 * PYNAMES_MS (a thread that threading does not know, or not yet, stays
 * unnamed meanwhile).
 *
 * The layouts, per minor version (x86-64), of what is read on the way:
 * - 3.11: offsetof() in its headers with Py_BUILD_CORE (Debian's
 *   python3.11-dev). sys.modules is interp->modules; an instance with
 *   Py_TPFLAGS_MANAGED_DICT keeps its values array (keyed by its heap
 *   type's shared keys, ht_cached_keys) at -4 words, its dict at -3; an
 *   int's ob_size is its number of digits.
 * - 3.12: gdb's ptype/o of the DWARF of pyenv's 3.12.1 libpython3.12.so,
 *   checked against its internal headers. sys.modules moved to
 *   interp->imports.modules; -3 words hold a dict, or the values array
 *   - 1 (odd: pycore_object.h's PyDictOrValues); an int has lv_tag
 *   (digits << 3 | sign) where ob_size was.
 * - 3.13: what _Py_DebugOffsets publishes at the start of _PyRuntime
 *   (interp->imports.modules, an object header's size, tp_flags, a dict's
 *   ma_keys and ma_values, an int's lv_tag and ob_digit), read from the
 *   process; the rest from the DWARF of pyenv's 3.13.0 build. The values
 *   are inline after the object's header (Py_TPFLAGS_INLINE_VALUES) while
 *   their valid byte says so, else the dict is at -3 words; a values
 *   array (PyDictValues) has a header of 8 bytes (capacity, size,
 *   embedded, valid) before its items.
 * A dict's keys object and its entries are the same in 3.11-3.13.
 * - 3.8-3.10: gdb's ptype/o of the DWARF of pyenv's 3.8.18, 3.9.18 and
 *   3.10.13 libpython3.x.so. sys.modules is interp->modules (0x38 in
 *   3.8, 0x358 in 3.9 and 3.10); an instance keeps its __dict__ at its
 *   type's tp_dictoffset (no managed dicts); a dict's keys object has
 *   dk_size (a power of two), dk_lookup, dk_usable, dk_nentries, then
 *   dk_indices of dk_size indices 1, 2, 4 or 8 bytes wide as dk_size
 *   needs, then the entries, always {hash, key, value}; a split table's
 *   ma_values is a plain array of values. Ints and strings are as 3.11's
 *   (ob_size digits of 30 bits; compact ASCII data after a header that
 *   still has wstr, as pyoffsets.c has it).
 * Other versions get no names.
 *
 * Errors: names that cannot be read are no error (the thread keeps its
 * kernel name); -ENOMEM only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/clock.h"
#include "sampler/log.h"
#include "sampler/proc.h"
#include "sampler/runtime/python_i.h"

#define PYNAMES_MS 1000
#define MAX_ENTRIES 8192	/* of a dict scanned: sys.modules, _active */
#define NAME_MAX_LEN 63

#define MANAGED_DICT (1ul << 4)	/* Py_TPFLAGS_MANAGED_DICT */
#define INLINE_VALUES (1ul << 2)	/* 3.13's Py_TPFLAGS_INLINE_VALUES */
#define OB_TYPE 8		/* PyObject.ob_type */
#define MODULE_DICT 16		/* PyModuleObject.md_dict */
#define KEYS_LOG2_INDEX 9	/* PyDictKeysObject.dk_log2_index_bytes */
#define KEYS_KIND 10		/* .dk_kind: 0 general, else str keys */
#define KEYS_NENTRIES 24	/* .dk_nentries */
#define KEYS_INDICES 32		/* .dk_indices, then the entries */
#define OLD_KEYS_SIZE 8		/* 3.8-3.10: .dk_size */
#define OLD_KEYS_NENTRIES 32	/* .dk_nentries */
#define OLD_KEYS_INDICES 40	/* .dk_indices, then the entries */
#define OLD_KEYS_MAX (1ull << 20)	/* dk_size believed, at most */

/* Where an instance with a managed dict keeps its attributes. */
enum py_managed {
	MANAGED_311,	/* values at -4 words, dict at -3 */
	MANAGED_312,	/* at -3 words: a dict, or values - 1 (odd) */
	MANAGED_313,	/* values inline after the header while valid,
			 * else a dict at -3 words */
	DICT_OFFSET,	/* 3.8-3.10: a dict at the type's tp_dictoffset */
};

struct py_objs {
	unsigned minor;
	enum py_managed managed;
	bool long_tagged;	/* an int's lv_tag: digits << 3 | sign */
	struct py_obj_offsets o;	/* 3.13: from _Py_DebugOffsets */
	uint32_t cached_keys;	/* PyHeapTypeObject.ht_cached_keys */
	uint32_t values_items;	/* PyDictValues.values */
	uint32_t tp_dictoffset;	/* DICT_OFFSET: PyTypeObject's */
	bool old_keys;		/* 3.8-3.10's PyDictKeysObject */
};

/* 3.8-3.10, by the offset of interp->modules */
#define OLD(m, modules) { \
		.minor = (m), .managed = DICT_OFFSET, .old_keys = true, \
		.o = { .is_modules = (modules), .object_size = 16, \
		       .tp_flags = 0xa8, .dict_keys = 0x20, \
		       .dict_values = 0x28, .long_tag = 0x10, \
		       .long_digits = 0x18 }, \
		.tp_dictoffset = 0x120, \
	}

static const struct py_objs layouts[] = {
	OLD(8, 0x38),
	OLD(9, 0x358),
	OLD(10, 0x358),
	{
		.minor = 11, .managed = MANAGED_311,
		.o = { .is_modules = 888, .object_size = 16, .tp_flags = 168,
		       .dict_keys = 32, .dict_values = 40, .long_tag = 16,
		       .long_digits = 24 },
		.cached_keys = 872,
	},
	{
		.minor = 12, .managed = MANAGED_312, .long_tagged = true,
		.o = { .is_modules = 0x3b0, .object_size = 16,
		       .tp_flags = 0xa8, .dict_keys = 0x20, .dict_values = 0x28,
		       .long_tag = 0x10, .long_digits = 0x18 },
		.cached_keys = 0x370,
	},
	{
		.minor = 13, .managed = MANAGED_313, .long_tagged = true,
		.cached_keys = 0x370, .values_items = 8,
	},
};

struct pynames {
	struct py_objs lay;	/* lay.minor 0: none (yet) */
	bool lay_tried;
	uint64_t active;	/* threading._active (never rebound); 0:
				 * not found */
	uint64_t read_ms;	/* of the last read of _active; 0: none */
	struct pyname {
		pid_t tid;
		char name[NAME_MAX_LEN + 1];
	} *names;
	size_t n, cap;
};

static int rd(struct pyrt *r, uint64_t addr, void *buf, size_t len)
{
	return addr ? proc_mem_read(r->pid, addr, buf, len) : -EFAULT;
}

static int rd64(struct pyrt *r, uint64_t addr, uint64_t *v)
{
	return rd(r, addr, v, sizeof(*v));
}

static int read_str(struct pyrt *r, uint64_t addr, char *buf, size_t size)
{
	return pyrt_str(r, rd, addr, buf, size);
}

static bool str_is(struct pyrt *r, uint64_t addr, const char *s)
{
	char buf[NAME_MAX_LEN + 1];

	return !read_str(r, addr, buf, sizeof(buf)) && !strcmp(buf, s);
}

/* The layout of r's objects (pyrt_thread_name() found it). */
static const struct py_objs *lay(struct pyrt *r)
{
	return &r->names->lay;
}

/* Where the entries of a keys object whose header is hdr start, past
 * its indices (keys: its address), and their number *n; 0: bad. */
static uint64_t entries_at(struct pyrt *r, uint64_t keys,
			   const uint8_t *hdr, uint64_t *n)
{
	uint64_t size;

	if (!lay(r)->old_keys) {
		memcpy(n, hdr + KEYS_NENTRIES, sizeof(*n));
		return hdr[KEYS_LOG2_INDEX] > 20 ? 0 : keys + KEYS_INDICES +
		       (1ull << hdr[KEYS_LOG2_INDEX]);
	}
	memcpy(&size, hdr + OLD_KEYS_SIZE, sizeof(size));
	memcpy(n, hdr + OLD_KEYS_NENTRIES, sizeof(*n));
	if (!size || (size & (size - 1)) || size > OLD_KEYS_MAX || *n > size)
		return 0;
	/* dk_size indices, each as wide as dk_size needs (DK_IXSIZE; 8
	 * bytes only past OLD_KEYS_MAX) */
	return keys + OLD_KEYS_INDICES +
	       size * (size <= 0xff ? 1 : size <= 0xffff ? 2 : 4);
}

/* The entries of the keys object at keys: *kind, *n, and a malloc()ed
 * copy of them (24 bytes each for kind 0: hash, key, value; else 16:
 * key, value; 3.8-3.10's are all of kind 0). */
static int read_entries(struct pyrt *r, uint64_t keys, uint8_t *kind,
			uint64_t *n, uint64_t **out)
{
	uint8_t hdr[OLD_KEYS_INDICES];
	uint64_t at;
	size_t esize;

	*out = NULL;
	if (rd(r, keys, hdr, lay(r)->old_keys ? OLD_KEYS_INDICES :
						KEYS_INDICES))
		return -EFAULT;
	*kind = lay(r)->old_keys ? 0 : hdr[KEYS_KIND];
	at = entries_at(r, keys, hdr, n);
	if (!at || *n > MAX_ENTRIES)
		return -EFAULT;
	esize = *kind ? 16 : 24;
	*out = malloc(*n * esize + 1);
	if (!*out)
		return -ENOMEM;
	if (*n && rd(r, at, *out, *n * esize)) {
		free(*out);
		*out = NULL;
		return -EFAULT;
	}
	return 0;
}

/* Entry i's key and value (values: a split dict's, or 0). */
static void entry(const uint64_t *e, uint8_t kind, uint64_t i,
		  uint64_t *key, uint64_t *value)
{
	if (kind) {
		*key = e[2 * i];
		*value = e[2 * i + 1];
	} else {
		*key = e[3 * i + 1];
		*value = e[3 * i + 2];
	}
}

/* Item i of the values array (PyDictValues) at values. */
static int value_at(struct pyrt *r, uint64_t values, uint64_t i,
		    uint64_t *v)
{
	return rd64(r, values + lay(r)->values_items + 8 * i, v);
}

/* The value under the str key name in a dict of str keys whose keys
 * object is keys (values: a split table's values array, else 0). */
static int keys_get(struct pyrt *r, uint64_t keys, uint64_t values,
		    const char *name, uint64_t *out)
{
	uint64_t n, *e, key, value;
	uint8_t kind;
	int ret;

	ret = read_entries(r, keys, &kind, &n, &e);
	if (ret)
		return ret;
	ret = -ENOENT;
	for (uint64_t i = 0; i < n && ret == -ENOENT; i++) {
		entry(e, kind, i, &key, &value);
		if (!key || !str_is(r, key, name))
			continue;
		if (values && value_at(r, values, i, &value))
			ret = -EFAULT;
		else
			ret = value ? 0 : -ENOENT;
		*out = value;
	}
	free(e);
	return ret;
}

/* A dict's keys object and values array (0: a combined table). */
static int dict_tables(struct pyrt *r, uint64_t dict, uint64_t *keys,
		       uint64_t *values)
{
	return rd64(r, dict + lay(r)->o.dict_keys, keys) ||
	       rd64(r, dict + lay(r)->o.dict_values, values) ? -EFAULT : 0;
}

static int dict_get(struct pyrt *r, uint64_t dict, const char *name,
		    uint64_t *out)
{
	uint64_t keys, values;

	if (dict_tables(r, dict, &keys, &values))
		return -EFAULT;
	return keys_get(r, keys, values, name, out);
}

/* Attribute name of a Thread: of its managed dict (3.11 on) or of its
 * __dict__ (3.8-3.10). */
static int attr(struct pyrt *r, uint64_t obj, const char *name,
		uint64_t *out)
{
	const struct py_objs *L = lay(r);
	uint64_t tp, flags, pre[2], keys, values = 0, dict = 0;
	uint8_t valid[4];
	int64_t off;

	if (L->managed == DICT_OFFSET)	/* a plain __dict__ (3.8-3.10) */
		return rd64(r, obj + OB_TYPE, &tp) ||
		       rd(r, tp + L->tp_dictoffset, &off, sizeof(off)) ||
		       off <= 0 || off > 4096 || rd64(r, obj + off, &dict) ?
		       -EFAULT : dict ? dict_get(r, dict, name, out) : -ENOENT;
	if (rd64(r, obj + OB_TYPE, &tp) ||
	    rd64(r, tp + L->o.tp_flags, &flags) || !(flags & MANAGED_DICT))
		return -EFAULT;
	switch (L->managed) {
	case MANAGED_311:
		if (rd(r, obj - 32, pre, sizeof(pre)))
			return -EFAULT;
		values = pre[0];
		dict = pre[1];
		break;
	case MANAGED_312:
		if (rd64(r, obj - 24, &pre[0]))
			return -EFAULT;
		if (pre[0] & 1)
			values = pre[0] + 1;
		else
			dict = pre[0];
		break;
	case DICT_OFFSET:	/* above */
		break;
	case MANAGED_313:
		if ((flags & INLINE_VALUES) &&
		    rd(r, obj + L->o.object_size, valid, sizeof(valid)))
			return -EFAULT;
		if ((flags & INLINE_VALUES) && valid[3])
			values = obj + L->o.object_size;
		else if (rd64(r, obj - 24, &dict))
			return -EFAULT;
		break;
	}
	if (values)	/* keyed by its type's shared keys */
		return rd64(r, tp + L->cached_keys, &keys) ? -EFAULT :
		       keys_get(r, keys, values, name, out);
	return dict ? dict_get(r, dict, name, out) : -ENOENT;
}

/* A small int object's value (a thread id: one or two digits). */
static int read_long(struct pyrt *r, uint64_t addr, int64_t *v)
{
	const struct py_objs *L = lay(r);
	int64_t size;
	uint32_t d[2];

	if (rd(r, addr + L->o.long_tag, &size, sizeof(size)))
		return -EFAULT;
	if (L->long_tagged)	/* sign: 0 positive, 1 zero, 2 negative */
		size = (size & 3) == 2 ? -1 : (size & 3) ? 0 :
		       (int64_t)((uint64_t)size >> 3);
	if (size < 0 || size > 2 ||
	    (size && rd(r, addr + L->o.long_digits, d, 4 * size)))
		return -EFAULT;
	*v = !size ? 0 : size == 1 ? d[0] : d[0] | (int64_t)d[1] << 30;
	return 0;
}

/* threading._active, through sys.modules, once found kept. */
static int find_active(struct pyrt *r, struct pynames *pn)
{
	uint64_t interp, modules, module, mdict;

	if (pn->active)
		return 0;
	if (rd64(r, r->runtime + r->o->rt_interp_head, &interp) ||
	    rd64(r, interp + lay(r)->o.is_modules, &modules) ||
	    dict_get(r, modules, "threading", &module) ||
	    rd64(r, module + MODULE_DICT, &mdict))
		return -EFAULT;
	return dict_get(r, mdict, "_active", &pn->active);
}

static int add_name(struct pynames *pn, pid_t tid, const char *name)
{
	if (pn->n == pn->cap) {
		size_t ncap = pn->cap ? 2 * pn->cap : 16;
		void *nn = realloc(pn->names, ncap * sizeof(*pn->names));

		if (!nn)
			return -ENOMEM;
		pn->names = nn;
		pn->cap = ncap;
	}
	pn->names[pn->n].tid = tid;
	snprintf(pn->names[pn->n].name, NAME_MAX_LEN + 1, "%s", name);
	/* a name is one line of goroutine.txt's: no control characters */
	for (char *c = pn->names[pn->n].name; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	pn->n++;
	return 0;
}

/* Read threading._active again: every Thread's _native_id and _name. */
static int read_active(struct pyrt *r, struct pynames *pn)
{
	uint64_t keys, values, n, *e, key, thread, p;
	char name[NAME_MAX_LEN + 1];
	int64_t tid;
	uint8_t kind;
	int ret;

	pn->n = 0;
	ret = find_active(r, pn);
	if (!ret)
		ret = dict_tables(r, pn->active, &keys, &values);
	if (!ret)
		ret = read_entries(r, keys, &kind, &n, &e);
	if (ret) {
		pn->active = 0;	/* looked for again next time */
		return ret == -ENOMEM ? ret : 0;
	}
	for (uint64_t i = 0; i < n && !ret; i++) {
		entry(e, kind, i, &key, &thread);
		if (values && value_at(r, values, i, &thread))
			continue;
		if (!key || !thread || attr(r, thread, "_native_id", &p) ||
		    read_long(r, p, &tid) || tid <= 0 || tid > INT32_MAX ||
		    attr(r, thread, "_name", &p) ||
		    read_str(r, p, name, sizeof(name)) || !name[0])
			continue;
		ret = add_name(pn, (pid_t)tid, name);
	}
	free(e);
	return ret;
}

static const char *lookup(const struct pynames *pn, pid_t tid)
{
	for (size_t i = 0; i < pn->n; i++)
		if (pn->names[i].tid == tid)
			return pn->names[i].name;
	return NULL;
}

/* The layout of r's objects, once: from the table, 3.13's completed by
 * its _Py_DebugOffsets. 0, or -ENOTSUP (logged once). */
static int find_layout(struct pyrt *r, struct pynames *pn)
{
	uint8_t buf[PY_DEBUG_OFFSETS_LEN];

	if (pn->lay_tried)
		return pn->lay.minor ? 0 : -ENOTSUP;
	pn->lay_tried = true;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == r->minor)
			pn->lay = layouts[i];
	if (pn->lay.minor == 13 &&
	    (rd(r, r->runtime, buf, sizeof(buf)) ||
	     pyoffsets_objects(buf, sizeof(buf), &pn->lay.o)))
		pn->lay.minor = 0;
	if (!pn->lay.minor) {
		pr_info("python: pid %d: 3.%u: no known layout of its "
			"objects; threads keep their kernel names",
			(int)r->pid, r->minor);
		return -ENOTSUP;
	}
	return 0;
}

const char *pyrt_thread_name(struct pyrt *r, pid_t tid)
{
	struct pynames *pn;
	const char *name;
	uint64_t now;

	if (!r || !r->o || !r->runtime)
		return NULL;
	if (!r->names && !(r->names = calloc(1, sizeof(*r->names))))
		return NULL;
	pn = r->names;
	if (find_layout(r, pn))
		return NULL;
	name = lookup(pn, tid);
	now = now_ms();
	if (name || (pn->read_ms && now - pn->read_ms < PYNAMES_MS))
		return name;
	pn->read_ms = now ? now : 1;
	if (read_active(r, pn))
		pr_info("python: pid %d: no memory for thread names",
			(int)r->pid);
	return lookup(pn, tid);
}

void pyrt_names_free(struct pynames *pn)
{
	if (pn)
		free(pn->names);
	free(pn);
}
