// SPDX-License-Identifier: GPL-2.0-or-later
/* sweep.c - the caches' expiry on a thread of its own (sweep.h). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fs/core/sweep.h"
#include "sampler/log.h"
#include "sampler/runtime/python.h"
#include "sampler/unwind/dso.h"
#include "sampler/unwind/kallsyms.h"

#define SWEEP_MIN_MS	500
#define SWEEP_MAX_MS	30000

struct sweeper {
	struct dso_cache *dsos;
	struct kallsyms *ksyms;
	struct pybpf_keep *pykeep;
	int period_ms;
	unsigned idle_s;
	int stop_fd;		/* an eventfd: written once, to stop */
	pthread_t thread;
};

static void *sweeper_main(void *arg)
{
	struct sweeper *s = arg;
	struct pollfd pfd = { .fd = s->stop_fd, .events = POLLIN };

	while (poll(&pfd, 1, s->period_ms) <= 0) {
		if (s->dsos)
			dso_cache_sweep(s->dsos, false);
		if (s->ksyms && kallsyms_sweep(s->ksyms))
			pr_debug("sweep: the kernel's symbol table let go");
		pybpf_keep_sweep(s->pykeep, s->idle_s);
	}
	return NULL;
}

int sweeper_start(struct dso_cache *dsos, struct kallsyms *ksyms,
		  struct pybpf_keep *pykeep, unsigned idle_s,
		  struct sweeper **out)
{
	uint64_t half = idle_s * 500ull;
	struct sweeper *s;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->dsos = dsos;
	s->ksyms = ksyms;
	s->pykeep = pykeep;
	s->idle_s = idle_s;
	s->period_ms = half < SWEEP_MIN_MS ? SWEEP_MIN_MS :
		       half > SWEEP_MAX_MS ? SWEEP_MAX_MS : (int)half;
	s->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (s->stop_fd < 0) {
		ret = -errno;
		free(s);
		return ret;
	}
	ret = -pthread_create(&s->thread, NULL, sweeper_main, s);
	if (ret) {
		close(s->stop_fd);
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void sweeper_stop(struct sweeper *s)
{
	uint64_t one = 1;

	if (!s)
		return;
	/* an eventfd's count cannot overflow from one write */
	if (write(s->stop_fd, &one, sizeof(one)) != sizeof(one))
		pr_err("sweep: cannot stop the sweeper: %m");
	pthread_join(s->thread, NULL);
	close(s->stop_fd);
	free(s);
}
