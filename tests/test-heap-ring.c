// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-heap-ring.c - the ring between the heap agent and the daemon, both
 * sides in one process: the agent's producer (sampler/heap/agent/ring.c) makes
 * the memfd ring, the daemon's consumer (sampler/heap/heap_ring.c) finds it in
 * /proc/self/fd and drains it. Records of every length the agent makes,
 * with known contents, through many laps of a 1 MiB ring: every one must
 * come out once, in order, intact; records straddling the end of the
 * buffer (the bug an 8-byte PAD record had) would fault, with a
 * PROT_NONE page right after the producer's mapping. A ring someone
 * broke (a bad length) is refused, not followed. On the agent's side
 * (issue 25: a hook is never a trap), an impossible tail or a ring that
 * stays full for a second of a live daemon's makes it give up
 * (agent_ring_failed) instead of waiting on every record.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "sampler/heap/agent/agent_i.h"
#include "sampler/heap/heap_ring.h"

/* What ring.c wants of the rest of the agent. */
bool daemon_alive(void)
{
	return true;
}

/* The clock: still, unless a test makes it tick (each read 100 ms on). */
static bool ticking;
static uint64_t fake_now;

uint64_t agent_now_ns(void)
{
	if (ticking)
		fake_now += 100000000ull;
	return fake_now;
}

static int ring_failed;
static enum ph_why failed_why;

void agent_ring_failed(enum ph_why why)
{
	ring_failed++;
	failed_why = why;
}

struct expect {
	uint64_t next;		/* sequence number of the next record */
	uint64_t got;
	int bad;
};

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void on_rec(const struct ph_rec *rec, void *arg)
{
	struct expect *e = arg;

	if (rec->type == PH_REC_FREE) {
		const struct ph_free *f = (const void *)rec;

		e->bad += f->addr != e->next;
	} else {
		const struct ph_alloc *a = (const void *)rec;

		e->bad += a->addr != e->next || a->size != a->stack_len;
		for (uint32_t i = 0; i < a->stack_len; i++)
			e->bad += a->stack[i] != (uint8_t)(e->next + i);
	}
	e->next++;
	e->got++;
}

/* One record, as the agent writes them: an allocation with a stack of
 * any length, or a free. */
static bool produce(struct ph_shared *sh, uint64_t seq)
{
	/* Many short records: short remainders at the end of the buffer. */
	uint32_t stack = rnd() % 4 ? rnd() % (rnd() % 8 ? 64 :
					     PH_STACK_BYTES + 1) : 0;
	bool is_free = rnd() % 3 == 0;
	uint32_t len = is_free ? ph_rec_len(sizeof(struct ph_free)) :
				 ph_rec_len(sizeof(struct ph_alloc) + stack);
	uint64_t pos;
	void *rec = ring_reserve(sh, len, PH_NO_WAIT, &pos);

	if (!rec)
		return false;
	if (is_free) {
		struct ph_free *f = rec;

		f->addr = seq;
		ring_commit(f, pos, len, PH_REC_FREE, 0);
	} else {
		struct ph_alloc *a = rec;

		a->addr = seq;
		a->size = a->stack_len = stack;
		for (uint32_t i = 0; i < stack; i++)
			a->stack[i] = (uint8_t)(seq + i);
		ring_commit(a, pos, len, PH_REC_ALLOC, 0);
	}
	return true;
}

/*
 * The producer's ring again, mapped where a PROT_NONE page follows it:
 * a record written past the end of the buffer faults. *area is the
 * whole reservation, to unmap.
 */
static struct ph_shared *guarded(struct ph_shared *sh, void **area)
{
	size_t size = PH_HEADER_SIZE + sh->ring_size;
	char path[64], link[128];
	void *a, *m;
	ssize_t n;
	int fd = -1;

	for (int i = 0; i < 1024 && fd < 0; i++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", i);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = '\0';
			if (strstr(link, PH_RING_NAME))
				fd = i;
		}
	}
	a = mmap(NULL, size + 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (fd < 0 || a == MAP_FAILED)
		return NULL;
	m = mmap(a, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		 0);
	munmap(sh, size);
	*area = a;
	return m == MAP_FAILED ? NULL : m;
}

static void test_laps(void)
{
	struct expect e = { 0 };
	struct heap_ring *r = NULL;
	struct ph_shared *sh;
	uint64_t seq = 0;
	void *guard;

	setenv("PROFFS_HEAP_RING_MB", "1", 1);
	sh = guarded(ring_create(), &guard);
	CHECK(sh, "ring_create");
	if (!sh)
		return;
	CHECK(heap_ring_open(getpid(), &r) == 0, "the daemon finds it");
	if (!r)
		return;
	/* 256 MiB of records through a 1 MiB ring: 256 laps, the end of
	 * the buffer met at every offset records can start at. */
	while (atomic_load(&sh->head) < (256u << 20)) {
		if (produce(sh, seq)) {
			seq++;
			continue;
		}
		heap_ring_drain(r, on_rec, &e);	/* full: make room */
	}
	heap_ring_drain(r, on_rec, &e);
	CHECK(e.got == seq, "%llu of %llu records", (unsigned long long)e.got,
	      (unsigned long long)seq);
	CHECK(!e.bad, "%d records came out wrong", e.bad);
	CHECK(!heap_ring_broken(r), "a good ring is not broken");
	CHECK(atomic_load(&sh->lost) > 0, "the producer did meet a full ring");
	heap_ring_close(r);
	sh->magic = 0;	/* its fd stays open: the next ring is another */
	munmap(guard, PH_HEADER_SIZE + sh->ring_size + 4096);
}

/* A record whose length breaks the rules: the ring is dropped, nothing
 * past it read. */
static void test_broken(void)
{
	struct expect e = { 0 };
	struct heap_ring *r = NULL;
	struct ph_shared *sh;
	struct ph_rec *rec;
	uint64_t pos;

	sh = ring_create();
	if (!sh || heap_ring_open(getpid(), &r)) {
		CHECK(0, "ring");
		return;
	}
	CHECK(produce(sh, 0), "first record");
	rec = ring_reserve(sh, 32, PH_NO_WAIT, &pos);
	CHECK(rec, "second record");
	if (rec)
		ring_commit(rec, pos, 24, PH_REC_FREE, 0);	/* unaligned */
	heap_ring_drain(r, on_rec, &e);
	CHECK(e.got == 1, "%llu records", (unsigned long long)e.got);
	CHECK(heap_ring_broken(r), "a bad length breaks the ring");
	CHECK(heap_ring_drain(r, on_rec, &e) == 0, "and it is read no more");
	heap_ring_close(r);
	munmap(sh, PH_HEADER_SIZE + sh->ring_size);
}

/* The agent's side: a tail past the head, or off a record's bounds, is
 * the ring broken; a full ring whose tail stays still for a second
 * while the daemon beats, one stuck. Both give up, not wait. */
static void test_agent_gives_up(void)
{
	struct ph_shared *sh = ring_create();
	uint64_t pos, head;
	int n = 0;

	if (!sh) {
		CHECK(0, "ring");
		return;
	}
	ring_failed = 0;
	CHECK(ring_reserve(sh, 64, PH_WAIT, &pos), "a good ring takes one");
	head = atomic_load(&sh->head);
	atomic_store(&sh->tail, head + 4096);
	CHECK(!ring_reserve(sh, 64, PH_WAIT, &pos), "a tail past the head");
	CHECK(ring_failed == 1 && failed_why == PH_WHY_RING, "%d, why %d",
	      ring_failed, failed_why);
	atomic_store(&sh->tail, 8);
	CHECK(!ring_reserve(sh, 64, PH_WAIT, &pos), "a tail off the bounds");
	CHECK(ring_failed == 2, "%d", ring_failed);
	/* Full, and the daemon reads nothing: */
	atomic_store(&sh->tail, 0);
	ring_failed = 0;
	while (ring_reserve(sh, 64, PH_NO_WAIT, &pos) && n < 100000)
		n++;
	CHECK(atomic_load(&sh->head) == sh->ring_size, "not full");
	ticking = true;
	/* A daemon that does not beat is late: records are dropped. */
	for (int i = 0; i < 5; i++)
		CHECK(!ring_reserve(sh, 64, PH_WAIT, &pos), "a full ring");
	CHECK(ring_failed == 0, "%d, why %d", ring_failed, failed_why);
	/* One that beats on and reads nothing for 3 s: stuck. */
	for (int i = 0; i < 5 && !ring_failed; i++) {
		atomic_fetch_add(&sh->heartbeat, 10);
		CHECK(!ring_reserve(sh, 64, PH_WAIT, &pos), "a full ring");
	}
	ticking = false;
	CHECK(ring_failed == 1 && failed_why == PH_WHY_STUCK, "%d, why %d",
	      ring_failed, failed_why);
	munmap(sh, PH_HEADER_SIZE + sh->ring_size);
}

int main(void)
{
	test_laps();
	test_broken();
	test_agent_gives_up();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("test-heap-ring: all checks passed\n");
	return 0;
}
