/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * timeq.h - records of several sources (perf rings, one per cpu), each
 * source's in time order, taken back out in global time order: one FIFO
 * of copied records per source, merged at the heads.
 *
 * A record is an opaque, 8-aligned payload with a time stamp; it stays
 * at the address timeq_reserve() gave until it is popped, so a consumer
 * may read it while a producer appends (with the caller's lock around
 * each call: the queues themselves are not thread-safe).
 *
 * Memory: chunks of a few MiB per source, freed as they are consumed;
 * at most max_bytes of records are held (timeq_reserve() refuses more).
 * Errors: -ENOMEM.
 */
#ifndef PROFFS_TIMEQ_H
#define PROFFS_TIMEQ_H

#include <stddef.h>
#include <stdint.h>

struct timeq;

int timeq_new(int sources, size_t max_bytes, struct timeq **out);
/* NULL is a no-op. */
void timeq_free(struct timeq *q);

/*
 * Room for a payload of len bytes at the tail of source's queue, stamped
 * time, or NULL (no memory, or max_bytes reached). Appended at once: the
 * caller fills it before the queue is read (under the same lock). Times
 * must not go down within a source.
 */
void *timeq_reserve(struct timeq *q, int source, uint64_t time, size_t len);

/*
 * The oldest payload of all queues if it is stamped at most cutoff, else
 * NULL; *source is where it is. It stays valid, in place, until popped.
 */
void *timeq_oldest(struct timeq *q, uint64_t cutoff, int *source);

/* Drop the head of source's queue (the one timeq_oldest() gave). */
void timeq_pop(struct timeq *q, int source);

/* Bytes of records held. */
size_t timeq_bytes(const struct timeq *q);

#endif
