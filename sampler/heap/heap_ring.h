/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * heap_ring.h - the daemon's side of the ring a heap agent shares with it
 * (layout and protocol: agent/heap_ring.h).
 *
 * The ring is found among the target's open files (/proc/PID/fd, a memfd
 * named PH_RING_NAME created by the agent of that very process) and mapped
 * shared. Everything in it is written by the target and is untrusted: the
 * constants are read once and checked, the memfd must be sealed against
 * shrinking (a shrunk mapping would fault the daemon), and every record is
 * bounds-checked and copied out before it is handed on. A ring that breaks
 * a rule is marked broken and read no more.
 *
 * One consumer: not thread-safe. Errors are negative errno values.
 */
#ifndef PROFFS_HEAP_RING_D_H
#define PROFFS_HEAP_RING_D_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/heap/agent/heap_ring.h"

struct heap_ring;

/*
 * Map the ring of pid's agent. -ENOENT when the process has no agent,
 * -EPROTO when what it has is not a ring this daemon can read, -EACCES /
 * -EPERM when /proc refuses, -ESRCH when the process is gone.
 */
int heap_ring_open(pid_t pid, struct heap_ring **out);

/* Unmap; NULL is a no-op. */
void heap_ring_close(struct heap_ring *r);

/* The shared header, for the daemon's fields and the agent's counters. */
struct ph_shared *heap_ring_shared(struct heap_ring *r);

/* False once the process has dropped the ring (exec, exit). */
bool heap_ring_attached(struct heap_ring *r);

/* True after a record broke the protocol; nothing more is read. */
bool heap_ring_broken(const struct heap_ring *r);

/* A record, copied out of the ring: valid during the callback only.
 * len is checked against the type's size and stack_len against len. */
typedef void (*heap_ring_cb)(const struct ph_rec *rec, void *arg);

/* Hand every committed record to cb, in order, and free their space.
 * Returns the number of records read. */
size_t heap_ring_drain(struct heap_ring *r, heap_ring_cb cb, void *arg);

#endif
