// SPDX-License-Identifier: GPL-2.0-or-later
/* stackctx.c - maps, then unwinder, then symbolizer; freed in reverse. */
#include <stddef.h>

#include "sampler/unwind/maps.h"
#include "sampler/unwind/stackctx.h"
#include "sampler/unwind/symbolize.h"
#include "sampler/unwind/unwind.h"

int stackctx_open_maps(struct stack_ctx *c, struct proc_maps *maps,
		       struct profile *p, unsigned flags)
{
	int ret;

	*c = (struct stack_ctx){ .maps = maps };
	ret = unwinder_new(maps, &c->unw);
	if (!ret && (flags & STACKCTX_LIVE))
		ret = unwinder_read_live(c->unw, maps_pid(maps));
	if (!ret && p)
		ret = symbolizer_new(p, maps, &c->sym);
	if (!ret && c->sym && (flags & STACKCTX_ATTACH))
		symbolizer_allow_attach(c->sym);
	if (ret)
		stackctx_close(c);
	return ret;
}

int stackctx_open(struct stack_ctx *c, pid_t pid, struct dso_cache *cache,
		  struct profile *p, unsigned flags)
{
	struct proc_maps *maps;
	int ret;

	*c = (struct stack_ctx){ 0 };
	ret = maps_load(pid, cache, &maps);
	if (ret)
		return ret;
	ret = stackctx_open_maps(c, maps, p, flags);
	if (ret) {
		maps_free(maps);
		return ret;
	}
	c->own_maps = true;
	return 0;
}

void stackctx_close(struct stack_ctx *c)
{
	symbolizer_free(c->sym);
	unwinder_free(c->unw);
	if (c->own_maps)
		maps_free(c->maps);
	*c = (struct stack_ctx){ 0 };
}
