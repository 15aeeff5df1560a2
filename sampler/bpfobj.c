// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bpfobj.c - an embedded eBPF object opened and loaded, libbpf quiet.
 */
#ifdef PROFFS_BPF
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "sampler/bpfobj.h"
#include "sampler/log.h"

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[256];

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	pr_debug("libbpf: %s", line);
	return 0;
}

int bpfobj_load(const void *image, size_t len, const char *name,
		struct bpf_object **out)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = name);
	struct bpf_object *obj;
	int ret;

	libbpf_set_print(quiet);
	obj = bpf_object__open_mem(image, len, &opts);
	if (!obj)
		return errno ? -errno : -EINVAL;
	ret = bpf_object__load(obj);
	if (ret) {
		bpf_object__close(obj);
		return ret < 0 ? ret : -EINVAL;
	}
	*out = obj;
	return 0;
}
#endif
