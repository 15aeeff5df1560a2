// SPDX-License-Identifier: GPL-2.0-or-later
/* demangle.c - C++ and Rust names through libiberty's callbacks, which
 * do not allocate: the result is gathered here, so no libiberty xmalloc
 * can end the daemon when memory runs out. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "sampler/unwind/demangle.h"

struct sink {
	char *buf;
	size_t len, cap;
	bool nomem;
};

static void sink_add(const char *s, size_t n, void *opaque)
{
	struct sink *k = opaque;
	size_t cap;
	char *nb;

	if (k->nomem)
		return;
	if (k->len + n + 1 > k->cap) {
		cap = k->cap ? k->cap : 128;
		while (cap < k->len + n + 1)
			cap *= 2;
		nb = realloc(k->buf, cap);
		if (!nb) {
			k->nomem = true;
			return;
		}
		k->buf = nb;
		k->cap = cap;
	}
	memcpy(k->buf + k->len, s, n);
	k->len += n;
	k->buf[k->len] = '\0';
}

/* Legacy Rust names are C++-shaped ("_ZN...E"): Rust is tried first, and
 * libiberty's Rust demangler only takes what ends in a Rust hash. */
static bool try_one(const char *name, bool rust, struct sink *k)
{
	int ok;

	k->len = 0;
	k->nomem = false;
	if (rust)
		ok = rust_demangle_callback(name, DMGL_NO_OPTS, sink_add, k);
	else
		ok = cplus_demangle_v3_callback(name, DMGL_NO_RECURSE_LIMIT,
						sink_add, k);
	return ok && k->len && !k->nomem;
}

int demangle(const char *name, char **out)
{
	struct sink k = { 0 };

	if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R') ||
	    strnlen(name, DEMANGLE_MAX + 1) > DEMANGLE_MAX)
		return -EINVAL;
	if (try_one(name, true, &k) ||
	    (name[1] == 'Z' && try_one(name, false, &k))) {
		*out = k.buf;
		return 0;
	}
	free(k.buf);
	return k.nomem ? -ENOMEM : -EINVAL;
}
