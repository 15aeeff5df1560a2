// SPDX-License-Identifier: GPL-2.0-or-later
/* turns.c - whose turn it is to ptrace a target (turns.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "sampler/log.h"
#include "sampler/turns.h"

/* Targets held at once: one per session running, and sessions are
 * bounded (max_sessions); past this a taker waits as for a held pid. */
#define TURNS_MAX 64

struct turns {
	pthread_mutex_t lock;
	pthread_cond_t given;		/* a turn was given back */
	pid_t held[TURNS_MAX];		/* 0: a free slot */
};

int turns_new(struct turns **out)
{
	struct turns *t = calloc(1, sizeof(*t));
	pthread_condattr_t ca;

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->given, &ca);
	pthread_condattr_destroy(&ca);
	*out = t;
	return 0;
}

void turns_free(struct turns *t)
{
	if (!t)
		return;
	pthread_cond_destroy(&t->given);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static uint64_t ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000 +
	       (uint64_t)(t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* The slot pid may take: -1 while pid is held (or every slot is). */
static int free_slot_locked(const struct turns *t, pid_t pid)
{
	int slot = -1;

	for (int i = 0; i < TURNS_MAX; i++) {
		if (t->held[i] == pid)
			return -1;
		if (!t->held[i] && slot < 0)
			slot = i;
	}
	return slot;
}

int turns_take(struct turns *t, pid_t pid, unsigned wait_ms)
{
	struct timespec until, now;
	bool waited = false;
	int slot, ret = 0;

	if (!t)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	until = now;
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&t->lock);
	while ((slot = free_slot_locked(t, pid)) < 0 && !ret) {
		waited = true;
		ret = pthread_cond_timedwait(&t->given, &t->lock, &until);
	}
	if (slot >= 0)
		t->held[slot] = pid;
	pthread_mutex_unlock(&t->lock);
	if (slot >= 0 && waited)
		pr_info("turns: pid %d: waited %llu ms for another session of "
			"ours to let it go", (int)pid,
			(unsigned long long)(ms_since(&now)));
	if (slot >= 0)
		return 0;
	pr_notice("turns: pid %d: another session of ours held it for %u "
		  "ms", (int)pid, wait_ms);
	return -EBUSY;
}

void turns_give(struct turns *t, pid_t pid)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < TURNS_MAX; i++)
		if (t->held[i] == pid) {
			t->held[i] = 0;
			break;
		}
	pthread_cond_broadcast(&t->given);
	pthread_mutex_unlock(&t->lock);
}
