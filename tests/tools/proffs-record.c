// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * proffs-record - record a CPU profile of a process without mounting
 * anything: the sampler and render libraries on their own.
 *
 *   proffs-record PID SECONDS [HZ [kernel]] > cpu.pb.gz
 *
 * With "kernel", kernel frames where the kernel shows them (cpu.h).
 *
 * Used by the benchmarks (to time the sampler alone) and for debugging.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler/cpu/cpu.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/kallsyms.h"
#include "render/pprof.h"
#include "sampler/model/profile.h"

int main(int argc, char **argv)
{
	struct cpu_opts o = { 0 };
	struct cpu_stats st;
	struct profile *p = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret;

	if (argc < 3) {
		fprintf(stderr, "usage: %s PID SECONDS [HZ [kernel]] > "
			"out.pb.gz\n", argv[0]);
		return 2;
	}
	o.pid = atoi(argv[1]);
	o.window_ms = strtod(argv[2], NULL) * 1000;
	o.hz = argc > 3 ? atoi(argv[3]) : 99;
	ret = dso_cache_new(NULL, &o.cache);
	if (!ret && argc > 4 && !strcmp(argv[4], "kernel"))
		ret = kallsyms_new(NULL, &o.ksyms);
	if (!ret)
		ret = cpu_profile(&o, &p, &st);
	if (!ret)
		ret = pprof_encode(p, true, &buf, &len);
	if (ret) {
		fprintf(stderr, "proffs-record: %s\n", strerror(-ret));
		return 1;
	}
	fprintf(stderr, "proffs-record: %llu samples, %llu lost, %zu stacks, "
		"%zu locations, %zu bytes\n",
		(unsigned long long)st.samples, (unsigned long long)st.lost,
		profile_nsamples(p), profile_nlocations(p), len);
	fwrite(buf, 1, len, stdout);
	free(buf);
	profile_free(p);
	kallsyms_free(o.ksyms);
	dso_cache_free(o.cache);
	return 0;
}
