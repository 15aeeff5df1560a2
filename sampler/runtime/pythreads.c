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
 * The layouts are CPython 3.11's (offsetof() in its headers with
 * Py_BUILD_CORE, Debian's python3.11-dev, x86-64): a dict's keys object
 * and entries, a heap type's shared keys and the "managed dict" a 3.11
 * instance keeps before its header (Py_TPFLAGS_MANAGED_DICT: its values
 * array at -4 words, its dict at -3). Other versions get no names.
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

/* CPython 3.11 */
#define INTERP_MODULES 888	/* PyInterpreterState.modules */
#define MODULE_DICT 16		/* PyModuleObject.md_dict */
#define TYPE_FLAGS 168		/* PyTypeObject.tp_flags */
#define TYPE_CACHED_KEYS 872	/* PyHeapTypeObject.ht_cached_keys */
#define MANAGED_DICT (1ul << 4)	/* Py_TPFLAGS_MANAGED_DICT */
#define DICT_KEYS 32		/* PyDictObject.ma_keys */
#define DICT_VALUES 40		/* PyDictObject.ma_values */
#define KEYS_LOG2_INDEX 9	/* PyDictKeysObject.dk_log2_index_bytes */
#define KEYS_KIND 10		/* .dk_kind: 0 general, else str keys */
#define KEYS_NENTRIES 24	/* .dk_nentries */
#define KEYS_INDICES 32		/* .dk_indices, then the entries */
#define LONG_SIZE 16		/* PyLongObject's ob_size: digits */
#define LONG_DIGITS 24		/* its 30-bit digits */

struct pynames {
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

/* The entries of the keys object at keys: *kind, *n, and a malloc()ed
 * copy of them (24 bytes each for kind 0: hash, key, value; else 16:
 * key, value). */
static int read_entries(struct pyrt *r, uint64_t keys, uint8_t *kind,
			uint64_t *n, uint64_t **out)
{
	uint8_t hdr[KEYS_INDICES];
	size_t esize;

	*out = NULL;
	if (rd(r, keys, hdr, sizeof(hdr)))
		return -EFAULT;
	*kind = hdr[KEYS_KIND];
	memcpy(n, hdr + KEYS_NENTRIES, sizeof(*n));
	if (*n > MAX_ENTRIES || hdr[KEYS_LOG2_INDEX] > 20)
		return -EFAULT;
	esize = *kind ? 16 : 24;
	*out = malloc(*n * esize + 1);
	if (!*out)
		return -ENOMEM;
	if (*n && rd(r, keys + KEYS_INDICES + (1ull << hdr[KEYS_LOG2_INDEX]),
		     *out, *n * esize)) {
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
		if (values && rd64(r, values + 8 * i, &value))
			ret = -EFAULT;
		else
			ret = value ? 0 : -ENOENT;
		*out = value;
	}
	free(e);
	return ret;
}

static int dict_get(struct pyrt *r, uint64_t dict, const char *name,
		    uint64_t *out)
{
	uint64_t keys, values;

	if (rd64(r, dict + DICT_KEYS, &keys) ||
	    rd64(r, dict + DICT_VALUES, &values))
		return -EFAULT;
	return keys_get(r, keys, values, name, out);
}

/* Attribute name of a 3.11 instance with a managed dict. */
static int attr(struct pyrt *r, uint64_t obj, const char *name,
		uint64_t *out)
{
	uint64_t tp, flags, pre[2], keys;

	if (rd64(r, obj + 8, &tp) || rd64(r, tp + TYPE_FLAGS, &flags) ||
	    !(flags & MANAGED_DICT) || rd(r, obj - 32, pre, sizeof(pre)))
		return -EFAULT;
	if (pre[0])	/* its values, keyed by its type's shared keys */
		return rd64(r, tp + TYPE_CACHED_KEYS, &keys) ? -EFAULT :
		       keys_get(r, keys, pre[0], name, out);
	return pre[1] ? dict_get(r, pre[1], name, out) : -ENOENT;
}

/* A small int object's value (a thread id: one or two digits). */
static int read_long(struct pyrt *r, uint64_t addr, int64_t *v)
{
	int64_t size;
	uint32_t d[2];

	if (rd(r, addr + LONG_SIZE, &size, sizeof(size)) || size < 0 ||
	    size > 2 || (size && rd(r, addr + LONG_DIGITS, d, 4 * size)))
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
	    rd64(r, interp + INTERP_MODULES, &modules) ||
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
	if (!ret && (rd64(r, pn->active + DICT_KEYS, &keys) ||
		     rd64(r, pn->active + DICT_VALUES, &values)))
		ret = -EFAULT;
	if (!ret)
		ret = read_entries(r, keys, &kind, &n, &e);
	if (ret) {
		pn->active = 0;	/* looked for again next time */
		return ret == -ENOMEM ? ret : 0;
	}
	for (uint64_t i = 0; i < n && !ret; i++) {
		entry(e, kind, i, &key, &thread);
		if (values && rd64(r, values + 8 * i, &thread))
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

const char *pyrt_thread_name(struct pyrt *r, pid_t tid)
{
	struct pynames *pn;
	const char *name;
	uint64_t now;

	if (!r || !r->o || r->minor != 11 || !r->runtime)
		return NULL;
	if (!r->names && !(r->names = calloc(1, sizeof(*r->names))))
		return NULL;
	pn = r->names;
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
