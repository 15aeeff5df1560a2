// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz-heap-ring.c - the daemon's reader of a heap agent's ring
 * (sampler/heap/heap_ring.c) on rings a hostile target could write: an input
 * is a head position (8 bytes, little-endian) and the first bytes of the
 * ring. The reader must hand on only records that keep the rules, stop
 * at the first that does not, and never read outside the ring.
 *
 * The ring is a real one, made by the agent's own ring_create() in this
 * process and found by heap_ring_open() through /proc/self/fd.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler/heap/agent/agent_i.h"
#include "sampler/heap/heap_ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What ring.c wants of the rest of the agent. */
bool daemon_alive(void)
{
	return false;
}

uint64_t agent_now_ns(void)
{
	return 0;
}

/* A ring the agent finds broken disarms it: here, the fuzzer goes on. */
void agent_ring_failed(enum ph_why why)
{
	(void)why;
}

static volatile uint64_t sink;

static void touch(const struct ph_rec *rec, void *arg)
{
	const struct ph_alloc *a = (const void *)rec;
	uint64_t v = rec->type;

	(void)arg;
	if (rec->type == PH_REC_ALLOC) {
		v += a->addr + a->size + a->rate + a->regs[PH_NREGS - 1];
		for (uint32_t i = 0; i < a->stack_len; i++)
			v += a->stack[i];
	} else {
		v += ((const struct ph_free *)rec)->addr;
	}
	sink += v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ph_shared *sh;
	struct heap_ring *r;
	uint64_t head;
	uint8_t *ring;

	if (!sh) {
		setenv("PROFFS_HEAP_RING_MB", "1", 1);
		sh = ring_create();
		if (!sh)
			abort();
	}
	if (size < sizeof(head))
		return 0;
	memcpy(&head, data, sizeof(head));
	data += sizeof(head);
	size -= sizeof(head);
	ring = (uint8_t *)sh + PH_HEADER_SIZE;
	memset(ring, 0, sh->ring_size);
	memcpy(ring, data, size < sh->ring_size ? size : sh->ring_size);
	atomic_store(&sh->tail, 0);
	atomic_store(&sh->head, head);
	if (heap_ring_open(getpid(), &r))
		abort();	/* our own ring must be found */
	while (heap_ring_drain(r, touch, NULL))
		;
	heap_ring_close(r);
	return 0;
}
