// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * past_opts.c - the recorder's options (-o record, record_hz, record_s,
 * record_mem) and its start, for main.c; and the other memory bound it
 * goes with, the dso cache's (dso_mem).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/log.h"
#include "fs/core/past.h"
#include "fs/core/daemon.h"
#include "sampler/record/record.h"
#include "sampler/unwind/dso.h"

/* "64M", "65536K", "1G", "67108864": bytes, or 0 when not a size. */
static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	int shift = 0;

	if (end == s)
		return 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end || v > (~0ull >> shift))
		return 0;
	return (uint64_t)v << shift;
}

int past_opts(struct proffs_opts *o)
{
	if (!o->record_hz)
		o->record_hz = RECORD_DEFAULT_HZ;
	if (!o->record_s)
		o->record_s = RECORD_DEFAULT_SPAN_S;
	o->record_mem = RECORD_DEFAULT_MEM;
	if (o->record_mem_str && !(o->record_mem =
				   parse_size(o->record_mem_str))) {
		fprintf(stderr, "proffs: record_mem= takes a size in bytes, "
				"or with K, M or G (64M)\n");
		return -EINVAL;
	}
	o->dso_mem = DSO_CACHE_BYTES;
	if (o->dso_mem_str && !(o->dso_mem = parse_size(o->dso_mem_str))) {
		fprintf(stderr, "proffs: dso_mem= takes a size in bytes, "
				"or with K, M or G (64M)\n");
		return -EINVAL;
	}
	if (o->record_hz > o->max_hz) {
		fprintf(stderr, "proffs: record_hz= must be at most "
				"max_hz\n");
		return -EINVAL;
	}
	if (!o->record && (o->record_mem_str || o->record_s != 600 ||
			   o->record_hz != RECORD_DEFAULT_HZ))
		fprintf(stderr, "proffs: record_hz, record_s and record_mem "
				"mean nothing without -o record\n");
	return 0;
}

int past_start(struct proffs *fs)
{
	struct record_opts ro = {
		.hz = fs->opts.record_hz, .span_s = fs->opts.record_s,
		.mem_bytes = fs->opts.record_mem, .cache = fs->dsos,
	};
	int ret = record_start(&ro, &fs->rec);

	if (ret) {
		pr_err("record: cannot start the flight recorder: %s%s",
		       strerror(-ret), ret == -EACCES || ret == -EPERM ?
		       " (system-wide perf events need root or CAP_PERFMON)"
		       : "");
		return ret;
	}
	pr_info("record: flight recorder on: %u Hz per CPU, %u s, %llu "
		"bytes at most", ro.hz, ro.span_s,
		(unsigned long long)ro.mem_bytes);
	return 0;
}
