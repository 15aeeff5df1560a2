// SPDX-License-Identifier: GPL-2.0-or-later
/* status.c - the text of /prof/status. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "name.h"
#include "registry.h"
#include "status.h"

void status_refused(struct status_refusals *c, int err)
{
	switch (abs(err)) {
#define STATUS_CASE(e) case e: atomic_fetch_add(&c->e##_n, 1); return;
	STATUS_REFUSALS(STATUS_CASE)
#undef STATUS_CASE
	default:
		atomic_fetch_add(&c->other_n, 1);
	}
}

int status_text(struct registry *r, const struct status_refusals *c,
		uint64_t uptime_s, char **buf, size_t *len)
{
	struct registry_stats st;
	FILE *f;

	registry_stats(r, &st);
	f = open_memstream(buf, len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "version: %s\nuptime_seconds: %llu\n"
		"sessions_running: %u\nsessions_started: %llu\n"
		"sessions_stopped_no_readers: %llu\n"
		"sessions_joined: %llu\ncache_hits: %llu\n"
		"results_served: %llu\n",
		PROFFS_VERSION, (unsigned long long)uptime_s, st.running,
		st.started, st.stopped, st.joined, st.cache_hits, st.served);
	for (int k = 0; k < PROFFS_KIND__COUNT; k++)
		fprintf(f, "sessions_done_%s: %llu\nerrors_%s: %llu\n",
			name_kind_str(k), st.done[k], name_kind_str(k),
			st.failed[k]);
#define STATUS_LINE(e) fprintf(f, "refused_" #e ": %llu\n", \
			       (unsigned long long)atomic_load(&c->e##_n));
	STATUS_REFUSALS(STATUS_LINE)
#undef STATUS_LINE
	fprintf(f, "refused_other: %llu\n",
		(unsigned long long)atomic_load(&c->other_n));
	return fclose(f) ? -ENOMEM : 0;
}
