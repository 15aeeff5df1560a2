// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ring.c - the producer side of the ring shared with the daemon (the
 * layout and protocol are in heap_ring.h; the consumer is
 * sampler/heap_ring.c).
 */
#include <cpuid.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "sampler/heap/agent/agent_i.h"

#define WAIT_NS 1000000000ull	/* longest wait for room, per record */

/*
 * The ring holds what is sampled until a daemon reads it: a process
 * started with the agent preloaded and read only much later may want
 * more than the default (PROFFS_HEAP_RING_MB, a power of two).
 */
static uint64_t ring_bytes(void)
{
	const char *s = getenv("PROFFS_HEAP_RING_MB");
	unsigned long long mb;
	char *end;

	if (!s || !*s)
		return PH_RING_SIZE;
	mb = strtoull(s, &end, 10);
	if (*end || !mb || (mb & (mb - 1)) || mb > PH_RING_MAX >> 20 ||
	    mb < PH_RING_MIN >> 20)
		return PH_RING_SIZE;
	return mb << 20;
}

/* In the agent's own memory, not the ring's: a forked child shares the
 * ring's pages, and its threads are not its parent's. */
struct ph_thread agent_threads[PH_THREADS];

bool ph_prefetchw;
/* sh->ring_size, kept here: the shared copy is the daemon's to break */
static uint64_t ring_size;

struct ph_shared *ring_create(void)
{
	uint64_t ring = ring_bytes();
	size_t size = PH_HEADER_SIZE + ring;
	struct ph_shared *sh;
	unsigned a, b, c, d;
	int fd;

	ph_prefetchw = __get_cpuid(0x80000001, &a, &b, &c, &d) &&
		       (c & bit_PRFCHW);
	/* Close-on-exec: the next program image has no agent to feed it. */
	fd = memfd_create(PH_RING_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return NULL;
	/* Sealed, so the daemon may map it without fearing a SIGBUS: no
	 * one can shrink it under the daemon's mapping. */
	if (ftruncate(fd, size) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		close(fd);
		return NULL;
	}
	sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	/* The fd stays open: it is how the daemon finds the ring. */
	if (sh == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	sh->version = PH_VERSION;
	sh->header_size = PH_HEADER_SIZE;
	sh->ring_size = ring;
	ring_size = ring;
	sh->threads = (uintptr_t)agent_threads;
	sh->pid = getpid();
	sh->stack_bytes = PH_STACK_BYTES;
	atomic_store(&sh->rate, PH_DEFAULT_RATE);
	atomic_store(&sh->rate_gen, 1);
	/* Last: a daemon that sees the magic sees the rest. */
	__atomic_store_n(&sh->magic, PH_MAGIC, __ATOMIC_RELEASE);
	return sh;
}

static uint8_t *ring_data(struct ph_shared *sh)
{
	return (uint8_t *)sh + PH_HEADER_SIZE;
}

/*
 * Waiting for a daemon that fell behind slows the program down, so a
 * sample that may be dropped waits only out of a budget shared by all
 * threads: BUDGET_SHARE of the time that passes, at most BUDGET_MAX_NS
 * saved up. A burst is absorbed whole; a program that allocates faster
 * than the daemon can ever follow loses samples instead of more than
 * that share of its speed.
 */
#define NAP_NS 50000
#define BUDGET_SHARE 10		/* percent */
#define BUDGET_MAX_NS 1000000000ll

static _Atomic int64_t budget_ns = BUDGET_MAX_NS;
static _Atomic uint64_t budget_at;

static bool spend_budget(uint64_t now)
{
	uint64_t at = atomic_load_explicit(&budget_at, memory_order_relaxed);
	int64_t b;

	if (!at) {
		atomic_compare_exchange_strong(&budget_at, &at, now);
	} else if (now > at && atomic_compare_exchange_strong(&budget_at, &at,
							      now)) {
		b = atomic_fetch_add(&budget_ns,
				     (int64_t)(now - at) * BUDGET_SHARE / 100);
		if (b > BUDGET_MAX_NS)
			atomic_store(&budget_ns, BUDGET_MAX_NS);
	}
	return atomic_fetch_sub(&budget_ns, NAP_NS) > NAP_NS;
}

/*
 * The ring is full. Wait a moment for the daemon to make room, if this
 * record may wait, a live daemon is consuming, and (PH_WAIT_BUDGET) the
 * budget allows; never more than WAIT_NS for one record. False when the
 * record must be dropped.
 */
/*
 * A wait for room timed out. A daemon that beats on (STUCK_BEATS times
 * or more) while the tail stays where it was for STUCK_NS reads no more:
 * the ring is stuck, and every record would wait a second. One that
 * beats no more is late, or gone (the lease ends it); so is one whose
 * tail waits on a record a thread reserved and has not yet written. The
 * first time a tail is seen stuck is kept across waits and threads
 * (racily: it only has to be about right).
 */
#define STUCK_NS (3 * WAIT_NS)
#define STUCK_BEATS 10

static _Atomic uint64_t stuck_tail = UINT64_MAX, stuck_since, stuck_beat;

static void timed_out(struct ph_shared *sh, uint64_t tail, uint64_t now)
{
	uint64_t hb = atomic_load_explicit(&sh->heartbeat,
					   memory_order_relaxed);

	if (atomic_exchange(&stuck_tail, tail) != tail) {
		atomic_store(&stuck_since, now);
		atomic_store(&stuck_beat, hb);
	} else if (now - atomic_load(&stuck_since) >= STUCK_NS &&
		   hb - atomic_load(&stuck_beat) >= STUCK_BEATS) {
		agent_ring_failed(PH_WHY_STUCK);
	}
}

static bool wait_room(struct ph_shared *sh, enum ph_wait wait,
		      uint64_t *since, uint64_t tail)
{
	struct timespec nap = { 0, NAP_NS };
	uint64_t now;

	if (wait == PH_NO_WAIT || !daemon_alive())
		return false;
	now = agent_now_ns();
	if (!*since)
		*since = now;
	if (now - *since > WAIT_NS) {
		timed_out(sh, tail, now);
		return false;
	}
	if (wait == PH_WAIT_BUDGET && !spend_budget(now))
		return false;
	nanosleep(&nap, NULL);
	return true;
}

void *ring_reserve(struct ph_shared *sh, uint32_t len, enum ph_wait wait,
		   uint64_t *pos)
{
	uint64_t size = ring_size, h, off, pad, tail, since = 0;
	uint8_t *data = ring_data(sh);

	h = atomic_load_explicit(&sh->head, memory_order_relaxed);
	for (;;) {
		off = h & (size - 1);
		/* A record never wraps: pad to the end, start at 0. */
		pad = off + len > size ? size - off : 0;
		tail = atomic_load_explicit(&sh->tail, memory_order_acquire);
		/* The daemon reads only what was written: tail <= head at
		 * any time (head read after tail), on a record's bounds.
		 * Else the ring is broken, and waiting for room would wait
		 * for ever. */
		if (tail > atomic_load_explicit(&sh->head,
						memory_order_acquire) ||
		    (tail & (PH_ALIGN - 1))) {
			agent_ring_failed(PH_WHY_RING);
			atomic_fetch_add_explicit(&sh->lost, 1,
						  memory_order_relaxed);
			return NULL;
		}
		if (h + pad + len - tail > size) {
			if (!wait_room(sh, wait, &since, tail)) {
				atomic_fetch_add_explicit(&sh->lost, 1,
							  memory_order_relaxed);
				return NULL;
			}
			h = atomic_load_explicit(&sh->head,
						 memory_order_relaxed);
			continue;
		}
		if (atomic_compare_exchange_weak_explicit(
			    &sh->head, &h, h + pad + len,
			    memory_order_relaxed, memory_order_relaxed))
			break;
	}
	if (pad)
		ring_commit(data + off, h, (uint32_t)pad, PH_REC_PAD, 0);
	*pos = h + pad;
	return data + ((h + pad) & (size - 1));
}

/*
 * Called once a record is written, for the next one: its lines are then
 * this core's by the next sample, and that record's stores retire at
 * once instead of each waiting for its line to come back from the
 * daemon's core, inside the program's own loop. A hint only: another
 * thread may take the place first.
 */
void ring_prefetch(struct ph_shared *sh, uint32_t len)
{
	uint64_t size = ring_size;
	uint64_t off = atomic_load_explicit(&sh->head, memory_order_relaxed) &
		       (size - 1);
	uint8_t *next = ring_data(sh) + (off + len > size ? 0 : off);

	for (uint32_t i = 0; i < len; i += 64)
		prefetch_for_write(next + i);
}

void ring_commit(void *rec, uint64_t pos, uint32_t len, uint16_t type,
		 uint16_t flags)
{
	struct ph_rec *r = rec;

	r->type = type;
	r->flags = flags;
	atomic_store_explicit(&r->commit, ph_commit(pos, len),
			      memory_order_release);
}
