// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test-perf-ring.c - a perf event's ring (sampler/perf/perf_ring.h): draining
 * records written by hand into a ring in plain memory (in order, one
 * wrapping the end, LOST counts, a LOST too short to hold one, other
 * types skipped or, drained as records, handed out, a record not all
 * written yet, a broken header), then mapping:
 * too few pages, an fd that is no perf event, and a real event on this
 * process whose samples are drained.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sampler/perf/perf_ring.h"

#define DATA_SIZE 4096		/* of the fake rings */

/* A ring in plain memory: a control page, then DATA_SIZE of data. */
struct fake {
	struct perf_ring g;
	uint8_t *mem;
};

struct seen {
	int n;			/* samples; the first 16 described */
	int len8;		/* samples with a body of 8 bytes */
	size_t len[16];
	uint8_t first[16], last[16];
	bool whole[16];		/* every byte of the body is first's */
};

/* A mapped ring holds itself together; an unmapped one is PERF_RING_INIT;
 * the reader never passes the writer nor falls a ring behind. */
static void assert_sane_perf_ring(const struct perf_ring *g)
{
	const struct perf_event_mmap_page *pg = g->base;

	if (!g->base) {
		CHECK(g->fd == -1 && !g->bounce && !g->data_size,
		      "unmapped ring with fields left: fd %d", g->fd);
		return;
	}
	CHECK(g->bounce, "no bounce buffer");
	CHECK(g->data_size && !(g->data_size & (g->data_size - 1)),
	      "data_size %zu", g->data_size);
	CHECK(pg->data_tail <= pg->data_head &&
	      pg->data_head - pg->data_tail <= g->data_size,
	      "tail %llu head %llu", (unsigned long long)pg->data_tail,
	      (unsigned long long)pg->data_head);
	CHECK(pg->data_tail % 8 == 0, "tail %llu",
	      (unsigned long long)pg->data_tail);
}

static void fake_new(struct fake *f)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *pg;

	f->mem = aligned_alloc(page, page + DATA_SIZE);
	if (!f->mem) {
		perror("aligned_alloc");
		exit(1);
	}
	memset(f->mem, 0, page + DATA_SIZE);
	pg = (struct perf_event_mmap_page *)f->mem;
	pg->data_offset = page;
	pg->data_size = DATA_SIZE;
	f->g = (struct perf_ring){
		.fd = 99, .base = f->mem, .data_size = DATA_SIZE,
		.bounce = malloc(PERF_RING_MAX_RECORD),
	};
	if (!f->g.bounce) {
		perror("malloc");
		exit(1);
	}
}

/* Not perf_ring_unmap(): this memory is not mapped. */
static void fake_free(struct fake *f)
{
	free(f->g.bounce);
	free(f->mem);
}

static struct perf_event_mmap_page *control(struct fake *f)
{
	return (struct perf_event_mmap_page *)f->mem;
}

/* Write len bytes at the writer's position, wrapping as the kernel does;
 * head moves only when publish. */
static void put(struct fake *f, uint64_t *at, const void *p, size_t len)
{
	uint8_t *data = f->mem + control(f)->data_offset;

	for (size_t i = 0; i < len; i++, (*at)++)
		data[*at % DATA_SIZE] = ((const uint8_t *)p)[i];
}

/* A record of type with body_len bytes of fill, at *at. */
static void put_record(struct fake *f, uint64_t *at, uint32_t type,
		       uint16_t body_len, uint8_t fill)
{
	struct perf_event_header h = {
		.type = type, .size = sizeof(h) + body_len,
	};
	uint8_t body[1024];

	memset(body, fill, body_len);
	put(f, at, &h, sizeof(h));
	put(f, at, body, body_len);
}

static void put_lost(struct fake *f, uint64_t *at, uint64_t n)
{
	struct perf_event_header h = {
		.type = PERF_RECORD_LOST, .size = sizeof(h) + 16,
	};
	uint64_t id = 7;

	put(f, at, &h, sizeof(h));
	put(f, at, &id, sizeof(id));
	put(f, at, &n, sizeof(n));
}

static void publish(struct fake *f, uint64_t head)
{
	__atomic_store_n(&control(f)->data_head, head, __ATOMIC_RELEASE);
}

static void on_sample(const void *body, size_t len, void *arg)
{
	struct seen *s = arg;
	const uint8_t *b = body;

	s->len8 += len == 8;
	if (s->n >= 16) {
		s->n++;
		return;
	}
	s->len[s->n] = len;
	s->first[s->n] = len ? b[0] : 0;
	s->last[s->n] = len ? b[len - 1] : 0;
	s->whole[s->n] = true;
	for (size_t i = 0; i < len; i++)
		if (b[i] != b[0])
			s->whole[s->n] = false;
	s->n++;
}

static void test_in_order(void)
{
	struct fake f;
	struct seen s = { 0 };
	uint64_t at = 0, lost = 0;

	fake_new(&f);
	put_record(&f, &at, PERF_RECORD_SAMPLE, 40, 0xa1);
	put_record(&f, &at, PERF_RECORD_MMAP, 24, 0xee);	/* skipped */
	put_record(&f, &at, PERF_RECORD_SAMPLE, 0, 0);
	put_lost(&f, &at, 5);
	put_record(&f, &at, PERF_RECORD_SAMPLE, 96, 0xa3);
	publish(&f, at);
	perf_ring_drain(&f.g, on_sample, &s, &lost);
	CHECK(s.n == 3, "%d samples", s.n);
	CHECK(s.len[0] == 40 && s.first[0] == 0xa1 && s.whole[0], "first");
	CHECK(s.len[1] == 0, "empty body: %zu", s.len[1]);
	CHECK(s.len[2] == 96 && s.first[2] == 0xa3 && s.whole[2], "third");
	CHECK(lost == 5, "lost %llu", (unsigned long long)lost);
	CHECK(control(&f)->data_tail == at, "tail %llu, head %llu",
	      (unsigned long long)control(&f)->data_tail,
	      (unsigned long long)at);
	assert_sane_perf_ring(&f.g);

	/* Nothing new: nothing handed out, lost added to, not reset. */
	perf_ring_drain(&f.g, on_sample, &s, &lost);
	CHECK(s.n == 3 && lost == 5, "%d samples, lost %llu", s.n,
	      (unsigned long long)lost);
	fake_free(&f);
}

struct types {
	int n;
	uint32_t type[8];
	uint16_t misc[8];
	size_t len[8];
};

static void on_record(const struct perf_event_header *h, const void *body,
		      size_t len, void *arg)
{
	struct types *t = arg;

	(void)body;
	if (t->n < 8) {
		t->type[t->n] = h->type;
		t->misc[t->n] = h->misc;
		t->len[t->n] = len;
	}
	t->n++;
}

/* Every type but LOST (counted), in order, with its header and body,
 * for the context switches of offcpu=sched (perf_switch.h). */
static void test_records(void)
{
	struct perf_event_header sw = {
		.type = PERF_RECORD_SWITCH,
		.misc = PERF_RECORD_MISC_SWITCH_OUT,
		.size = sizeof(sw) + 16,
	};
	uint8_t trailer[16] = { 0 };
	struct types t = { 0 };
	uint64_t at = 0, lost = 0;
	struct fake f;

	fake_new(&f);
	put_record(&f, &at, PERF_RECORD_SAMPLE, 40, 0xa1);
	put(&f, &at, &sw, sizeof(sw));
	put(&f, &at, trailer, sizeof(trailer));
	put_lost(&f, &at, 3);
	put_record(&f, &at, PERF_RECORD_FORK, 40, 0xf0);
	publish(&f, at);
	perf_ring_drain_records(&f.g, on_record, &t, &lost);
	CHECK(t.n == 3, "%d records", t.n);
	CHECK(t.type[0] == PERF_RECORD_SAMPLE && t.len[0] == 40, "sample");
	CHECK(t.type[1] == PERF_RECORD_SWITCH &&
	      t.misc[1] == PERF_RECORD_MISC_SWITCH_OUT && t.len[1] == 16,
	      "switch: type %u misc %#x len %zu", t.type[1], t.misc[1],
	      t.len[1]);
	CHECK(t.type[2] == PERF_RECORD_FORK && t.len[2] == 40, "fork");
	CHECK(lost == 3, "lost %llu", (unsigned long long)lost);
	CHECK(control(&f)->data_tail == at, "tail");
	assert_sane_perf_ring(&f.g);
	fake_free(&f);
}

/* Laps of the ring, records straddling its end at every offset a multiple
 * of 8 bytes: each comes out whole, through the bounce buffer. */
static void test_wrap(void)
{
	struct fake f;
	uint64_t at = 0, lost = 0;
	int bad = 0, total = 0;

	fake_new(&f);
	for (int lap = 0; lap < 200; lap++) {
		struct seen s = { 0 };
		uint16_t len = 8 * (1 + lap % 100);	/* 8..800 */
		uint8_t fill = (uint8_t)(lap + 1);

		put_record(&f, &at, PERF_RECORD_SAMPLE, len, fill);
		put_record(&f, &at, PERF_RECORD_SAMPLE, 1000, fill ^ 0xff);
		publish(&f, at);
		perf_ring_drain(&f.g, on_sample, &s, &lost);
		total += s.n;
		if (s.n != 2 || s.len[0] != len || s.first[0] != fill ||
		    !s.whole[0] || s.len[1] != 1000 ||
		    s.first[1] != (uint8_t)(fill ^ 0xff) || !s.whole[1])
			bad++;
		assert_sane_perf_ring(&f.g);
	}
	CHECK(at > 20 * DATA_SIZE, "only %llu bytes written",
	      (unsigned long long)at);
	CHECK(!bad && total == 400, "%d laps wrong, %d samples", bad, total);
	CHECK(control(&f)->data_tail == at, "tail behind");
	fake_free(&f);
}

/* A LOST too short to carry its count is skipped, not read past. */
static void test_short_lost(void)
{
	struct fake f;
	struct seen s = { 0 };
	uint64_t at = 0, lost = 0;

	fake_new(&f);
	put_record(&f, &at, PERF_RECORD_LOST, 8, 0xff);
	put_record(&f, &at, PERF_RECORD_SAMPLE, 16, 0x42);
	publish(&f, at);
	perf_ring_drain(&f.g, on_sample, &s, &lost);
	CHECK(lost == 0, "lost %llu", (unsigned long long)lost);
	CHECK(s.n == 1 && s.first[0] == 0x42, "%d samples", s.n);
	CHECK(control(&f)->data_tail == at, "tail");
	fake_free(&f);
}

/* A record whose header is in but whose end is not yet: the drain stops
 * before it, and takes it once the head is past it. */
static void test_partial(void)
{
	struct fake f;
	struct seen s = { 0 };
	uint64_t at = 0, lost = 0, mid;

	fake_new(&f);
	put_record(&f, &at, PERF_RECORD_SAMPLE, 16, 0x11);
	mid = at;
	put_record(&f, &at, PERF_RECORD_SAMPLE, 64, 0x22);
	publish(&f, mid + 24);
	perf_ring_drain(&f.g, on_sample, &s, &lost);
	CHECK(s.n == 1, "%d samples", s.n);
	CHECK(control(&f)->data_tail == mid, "tail %llu, want %llu",
	      (unsigned long long)control(&f)->data_tail,
	      (unsigned long long)mid);
	assert_sane_perf_ring(&f.g);
	publish(&f, at);
	perf_ring_drain(&f.g, on_sample, &s, &lost);
	CHECK(s.n == 2 && s.len[1] == 64 && s.whole[1], "%d samples", s.n);
	CHECK(control(&f)->data_tail == at, "tail");
	fake_free(&f);
}

/* A header claiming less than itself would loop forever: the drain stops
 * there, giving nothing more back to the kernel. */
static void test_broken_header(void)
{
	struct fake f;
	struct seen s = { 0 };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = 4 };
	uint64_t at = 0, lost = 0, bad;

	fake_new(&f);
	put_record(&f, &at, PERF_RECORD_SAMPLE, 8, 0x33);
	bad = at;
	put(&f, &at, &h, sizeof(h));
	put_record(&f, &at, PERF_RECORD_SAMPLE, 8, 0x44);
	publish(&f, at);
	perf_ring_drain(&f.g, on_sample, &s, &lost);
	CHECK(s.n == 1 && s.first[0] == 0x33, "%d samples", s.n);
	CHECK(control(&f)->data_tail == bad, "tail %llu",
	      (unsigned long long)control(&f)->data_tail);
	fake_free(&f);
}

static void test_unmapped(void)
{
	struct perf_ring g = PERF_RING_INIT;
	struct seen s = { 0 };
	uint64_t lost = 0;

	assert_sane_perf_ring(&g);
	perf_ring_drain(&g, on_sample, &s, &lost);
	CHECK(s.n == 0 && lost == 0, "drained an unmapped ring");
	perf_ring_unmap(&g);
	perf_ring_unmap(&g);
	assert_sane_perf_ring(&g);
}

/* Failures leave the caller's ring and page count alone. */
static void test_map_errors(void)
{
	struct perf_ring g = PERF_RING_INIT;
	size_t pages = PERF_RING_PAGES_MIN / 2;
	int fd, ret;

	ret = perf_ring_map(-1, &pages, &g);
	CHECK(ret == -ENOBUFS, "%d", ret);
	CHECK(pages == PERF_RING_PAGES_MIN / 2, "pages %zu", pages);
	assert_sane_perf_ring(&g);

	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("/dev/null");
		exit(1);
	}
	pages = 64;
	ret = perf_ring_map(fd, &pages, &g);
	CHECK(ret < 0 && ret != -ENOBUFS, "mapped /dev/null: %d", ret);
	CHECK(pages == 64, "pages %zu", pages);
	assert_sane_perf_ring(&g);
	close(fd);
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A cpu-clock event on this thread, sampling every 100 us of its cpu
 * time: mapped at the size asked, its samples drained, the tail at the
 * head. Skipped (outside CI) where the kernel refuses the event. */
static void test_real_event(void)
{
	struct perf_event_attr a = {
		.size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK, .sample_period = 100000,
		.sample_type = PERF_SAMPLE_TID, .exclude_kernel = 1,
		.exclude_hv = 1, .disabled = 1,
	};
	struct perf_ring g = PERF_RING_INIT;
	struct perf_event_mmap_page *pg;
	struct seen s = { 0 };
	size_t pages = 16;
	uint64_t lost = 0, t;
	volatile uint64_t spin = 0;
	int fd, ret;

	fd = perf_ring_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		const char *ci = getenv("CI");

		CHECK(!ci || strcmp(ci, "true"), "perf_event_open: %s",
		      strerror(-fd));
		fprintf(stderr, "skip %s: perf_event_open: %s\n", __func__,
			strerror(-fd));
		return;
	}
	ret = perf_ring_map(fd, &pages, &g);
	CHECK(!ret, "perf_ring_map: %d", ret);
	if (ret) {
		close(fd);
		return;
	}
	CHECK(g.fd == fd, "fd %d", g.fd);
	CHECK(pages >= PERF_RING_PAGES_MIN && pages <= 16, "pages %zu", pages);
	CHECK(g.data_size == pages * sysconf(_SC_PAGESIZE), "data_size %zu",
	      g.data_size);
	assert_sane_perf_ring(&g);
	pg = g.base;
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	/* 20 ms of cpu, drained as it goes: ~200 samples. */
	for (t = cpu_ns(); cpu_ns() - t < 20000000;) {
		for (int i = 0; i < 10000; i++)
			spin = spin + i;
		perf_ring_drain(&g, on_sample, &s, &lost);
	}
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	perf_ring_drain(&g, on_sample, &s, &lost);
	CHECK(s.n > 20, "%d samples in 20 ms at 10 kHz", s.n);
	/* PERF_SAMPLE_TID alone: pid and tid. */
	CHECK(s.len8 == s.n, "%d of %d samples not 8 bytes", s.n - s.len8,
	      s.n);
	CHECK(lost == 0, "lost %llu", (unsigned long long)lost);
	assert_sane_perf_ring(&g);
	CHECK(pg->data_tail == pg->data_head, "not drained");
	perf_ring_unmap(&g);
	assert_sane_perf_ring(&g);
	close(fd);
}

int main(void)
{
	test_in_order();
	test_records();
	test_wrap();
	test_short_lost();
	test_partial();
	test_broken_header();
	test_unmapped();
	test_map_errors();
	test_real_event();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
