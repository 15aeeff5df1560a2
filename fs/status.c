// SPDX-License-Identifier: GPL-2.0-or-later
/* status.c - the text of /prof/status. */
#include <errno.h>
#include <stdio.h>

#include "config.h"
#include "name.h"
#include "registry.h"
#include "status.h"

int status_text(struct registry *r, uint64_t uptime_s, char **buf,
		size_t *len)
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
	return fclose(f) ? -ENOMEM : 0;
}
