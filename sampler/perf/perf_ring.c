// SPDX-License-Identifier: GPL-2.0-or-later
/* perf_ring.c - mapping a perf event's ring, and draining it. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sampler/perf/perf_ring.h"

int perf_ring_map(int fd, size_t *pages, struct perf_ring *out)
{
	size_t page = sysconf(_SC_PAGESIZE);

	for (size_t n = *pages; n >= PERF_RING_PAGES_MIN; n /= 2) {
		void *base = mmap(NULL, (n + 1) * page,
				  PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		uint8_t *bounce;

		if (base == MAP_FAILED) {
			if (errno == EPERM || errno == ENOMEM)
				continue;	/* mlock limit: try smaller */
			return -errno;
		}
		bounce = malloc(PERF_RING_MAX_RECORD);
		if (!bounce) {
			munmap(base, (n + 1) * page);
			return -ENOMEM;
		}
		*out = (struct perf_ring){
			.fd = fd, .base = base, .data_size = n * page,
			.bounce = bounce,
		};
		*pages = n;
		return 0;
	}
	return -ENOBUFS;
}

void perf_ring_drain_records(struct perf_ring *g, perf_ring_record_cb cb,
			     void *arg, uint64_t *lost)
{
	struct perf_event_mmap_page *pg = g->base;
	const uint8_t *data;
	uint64_t head, tail;

	if (!pg)
		return;
	data = (const uint8_t *)g->base + pg->data_offset;
	/* Acquire: the records up to head are written before we see it. */
	head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	tail = pg->data_tail;
	while (tail < head) {
		size_t at = tail % g->data_size;
		struct perf_event_header hdr;
		const uint8_t *rec = data + at;

		/* Records are 8-byte multiples in a ring of a power of two
		 * bytes: a header never wraps. */
		memcpy(&hdr, rec, sizeof(hdr));
		if (hdr.size < sizeof(hdr) || tail + hdr.size > head)
			break;
		if (at + hdr.size > g->data_size) {
			size_t first = g->data_size - at;

			memcpy(g->bounce, rec, first);
			memcpy(g->bounce + first, data, hdr.size - first);
			rec = g->bounce;
		}
		if (hdr.type == PERF_RECORD_LOST) {
			uint64_t n;	/* after the u64 id */

			if (hdr.size >= sizeof(hdr) + 16) {
				memcpy(&n, rec + sizeof(hdr) + 8, sizeof(n));
				*lost += n;
			}
		} else {
			cb(&hdr, rec + sizeof(hdr), hdr.size - sizeof(hdr),
			   arg);
		}
		tail += hdr.size;
	}
	/* Release: our reads of the records are done before the kernel may
	 * write over them. */
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

struct samples_only {
	perf_ring_sample_cb cb;
	void *arg;
};

static void sample_only(const struct perf_event_header *h, const void *body,
			size_t len, void *arg)
{
	const struct samples_only *c = arg;

	if (h->type == PERF_RECORD_SAMPLE)
		c->cb(body, len, c->arg);
}

void perf_ring_drain(struct perf_ring *g, perf_ring_sample_cb cb, void *arg,
		     uint64_t *lost)
{
	struct samples_only c = { .cb = cb, .arg = arg };

	perf_ring_drain_records(g, sample_only, &c, lost);
}

void perf_ring_unmap(struct perf_ring *g)
{
	if (g->base)
		munmap(g->base, g->data_size + sysconf(_SC_PAGESIZE));
	free(g->bounce);
	perf_ring_init(g);
}
