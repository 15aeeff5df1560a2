// SPDX-License-Identifier: GPL-2.0-or-later
/* python_setup.c - finding CPython in a process; the reader's life. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/log.h"
#include "sampler/proc.h"
#include "sampler/unwind/maps.h"
#include "sampler/model/profile.h"
#include "sampler/runtime/python_i.h"

static bool eval_named(void *arg, const char *name)
{
	size_t len = strlen("_PyEval_EvalFrameDefault");

	(void)arg;
	return !strncmp(name, "_PyEval_EvalFrameDefault", len) &&
	       (!name[len] || name[len] == '.');
}

/* Python's minor version: Py_Version (3.11+), else the file's name. */
static unsigned minor_version(struct dso *d, const char *path)
{
	const char *base = strrchr(path, '/'), *v;
	uint64_t vaddr, size;
	uint32_t hex;
	unsigned major, minor;

	if (!dso_object_vaddr(d, "Py_Version", &vaddr, &size) &&
	    size == sizeof(hex) && !dso_read(d, vaddr, &hex, sizeof(hex)) &&
	    hex >> 24 == 3)
		return (hex >> 16) & 0xff;
	v = strstr(base ? base : path, "python");
	if (v && sscanf(v, "python%u.%u", &major, &minor) == 2 && major == 3)
		return minor;
	return 0;
}

/* The executable or libpython mapping that defines _PyRuntime. */
static struct map_entry *find_runtime(struct proc_maps *maps, uint64_t *vaddr)
{
	for (size_t i = 0; i < maps_count(maps); i++) {
		const struct map_entry *p = maps_peek(maps, i);
		struct map_entry *e;
		const char *base;
		uint64_t size;

		/* by name first: the other objects' files stay unread */
		if (!p->exec || !p->path[0])
			continue;
		base = strrchr(p->path, '/');
		base = base ? base + 1 : p->path;
		if (strncmp(base, "python", 6) && strncmp(base, "libpython", 9))
			continue;
		e = maps_at(maps, i);
		if (e->dso && !dso_object_vaddr(e->dso, "_PyRuntime", vaddr,
						&size))
			return e;
	}
	return NULL;
}

/*
 * 3.13+: the offsets its _Py_DebugOffsets gives (read from the file's
 * initial _PyRuntime), the main interpreter found where the process's
 * interpreters.head points. r->o stays NULL, with r->why, when they
 * cannot be had.
 */
static void debug_offsets(struct pyrt *r, struct map_entry *e)
{
	uint8_t buf[PY_DEBUG_OFFSETS_LEN];
	uint64_t head_off, head = 0;
	char why[100] = "";

	if (dso_read(e->dso, r->runtime - r->bias, buf, sizeof(buf)) ||
	    pyoffsets_interp_head(buf, sizeof(buf), &head_off)) {
		snprintf(why, sizeof(why), "no _Py_DebugOffsets of 3.13 at "
			 "the start of _PyRuntime");
	} else if (proc_mem_read(r->pid, r->runtime + head_off, &head,
				 sizeof(head)) || head < r->runtime) {
		snprintf(why, sizeof(why), "no main interpreter yet");
	} else if (!pyoffsets_parse(buf, sizeof(buf), head - r->runtime,
				    &r->own, why, sizeof(why))) {
		r->o = &r->own;
		return;
	}
	snprintf(r->why, sizeof(r->why), "proffs: Python 3.%u: %s; native "
		 "frames only", r->minor, why);
}

int pyrt_open(struct proc_maps *maps, struct profile *p, struct pyrt **out)
{
	struct map_entry *e;
	struct pyrt *r;
	uint64_t vaddr;
	int ret;

	*out = NULL;
	e = find_runtime(maps, &vaddr);
	if (!e)
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->pid = maps_pid(maps);
	r->p = p;
	r->bias = e->bias;
	r->runtime = vaddr + e->bias;
	r->minor = minor_version(e->dso, e->path);
	r->o = pyoffsets_find(r->minor);
	if (!r->o && r->minor >= 13)
		debug_offsets(r, e);
	if (r->o) {
		ret = dso_symbol_ranges(e->dso, eval_named, NULL, &r->eval,
					&r->neval);
		if (ret) {
			free(r);
			return ret;
		}
		r->pages = malloc(PAGE_SLOTS * PAGE);
		r->codebuf = malloc(MAX_PY_FRAMES * r->o->co_size);
		if (!r->pages || !r->codebuf || pyrt_codes_grow(r)) {
			pyrt_free(r);
			return -ENOMEM;
		}
		if (r->neval) {
			r->eval_start = r->eval[0].start + r->bias;
			r->eval_end = r->eval[r->neval - 1].end + r->bias;
		} else {
			r->o = NULL;
			snprintf(r->why, sizeof(r->why), "proffs: Python 3.%u: "
				 "no _PyEval_EvalFrameDefault symbol in %s; "
				 "native frames only", r->minor, e->path);
		}
	} else if (!r->why[0]) {
		snprintf(r->why, sizeof(r->why), "proffs: Python 3.%u: no "
			 "known layout of its frames; native frames only",
			 r->minor);
	}
	if (r->why[0])
		pr_info("python: pid %d: %s", (int)r->pid, r->why + 8);
	*out = r;
	return 0;
}

void pyrt_free(struct pyrt *r)
{
	if (!r)
		return;
	pyrt_names_free(r->names);
	pyrt_bpf_free(r->bpf);
	for (size_t i = 0; i < r->codes_cap; i++)
		if (r->codes[i]) {
			pyrt_code_clear(r->codes[i]);
			free(r->codes[i]);
		}
	free(r->codes);
	for (size_t i = 0; i < r->nsnaps; i++)
		free(r->snaps[i].frames);
	free(r->snaps);
	free(r->pages);
	free(r->codebuf);
	free(r->eval);
	free(r);
}

int pyrt_note(struct pyrt *r)
{
	char text[384];
	uint64_t lost;

	if (!r)
		return 0;
	if (r->why[0])
		return profile_add_comment(r->p, r->why);
	/* which way a cpu session's frames were read */
	if (r->bpf_on)
		snprintf(text, sizeof(text), "proffs: Python 3.%u: frames "
			 "read in the kernel at each sample (eBPF)", r->minor);
	else if (r->bpf_tried)
		snprintf(text, sizeof(text), "proffs: Python 3.%u: frames "
			 "read from the process after each sample "
			 "(process_vm_readv; eBPF not used: %s)", r->minor,
			 r->bpf_why);
	if (r->bpf_tried && profile_add_comment(r->p, text))
		return -ENOMEM;
	lost = r->changed + r->mismatch + r->no_thread + r->unreadable +
	       r->unmatched;
	if (!lost)
		return 0;
	snprintf(text, sizeof(text), "proffs: Python 3.%u: %llu of %llu "
		 "stacks keep native frames only (frame chain changed while "
		 "read: %llu; evaluation frames not matching the chain: "
		 "%llu; no thread state: %llu; unreadable: %llu; no record "
		 "of the sample: %llu)", r->minor,
		 (unsigned long long)lost,
		 (unsigned long long)(lost + r->merged),
		 (unsigned long long)r->changed,
		 (unsigned long long)r->mismatch,
		 (unsigned long long)r->no_thread,
		 (unsigned long long)r->unreadable,
		 (unsigned long long)r->unmatched);
	return profile_add_comment(r->p, text);
}
