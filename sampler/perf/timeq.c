// SPDX-License-Identifier: GPL-2.0-or-later
/* timeq.c - per-source FIFOs of records in chunks, merged by time. */
#include <errno.h>
#include <stdlib.h>

#include "sampler/perf/timeq.h"

#define CHUNK_BYTES (4u << 20)

struct rec {
	uint64_t time;
	uint64_t len;		/* of the payload, 8-aligned */
	uint8_t payload[];
};

struct chunk {
	struct chunk *next;
	size_t pos, len, cap;	/* read at pos, written up to len */
	uint8_t data[];
};

struct fifo {
	struct chunk *head, *tail;
};

struct timeq {
	int n;
	size_t max, bytes;
	struct fifo f[];
};

int timeq_new(int sources, size_t max_bytes, struct timeq **out)
{
	struct timeq *q;

	if (sources <= 0)
		return -EINVAL;
	q = calloc(1, sizeof(*q) + sources * sizeof(q->f[0]));
	if (!q)
		return -ENOMEM;
	q->n = sources;
	q->max = max_bytes;
	*out = q;
	return 0;
}

void timeq_free(struct timeq *q)
{
	if (!q)
		return;
	for (int i = 0; i < q->n; i++)
		for (struct chunk *c = q->f[i].head, *next; c; c = next) {
			next = c->next;
			free(c);
		}
	free(q);
}

void *timeq_reserve(struct timeq *q, int source, uint64_t time, size_t len)
{
	struct fifo *f = &q->f[source];
	size_t need = sizeof(struct rec) + ((len + 7) & ~(size_t)7);
	struct chunk *c = f->tail;
	struct rec *r;

	if (q->bytes + need > q->max)
		return NULL;
	if (!c || c->cap - c->len < need) {
		size_t cap = need > CHUNK_BYTES ? need : CHUNK_BYTES;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		*c = (struct chunk){ .cap = cap };
		if (f->tail)
			f->tail->next = c;
		else
			f->head = c;
		f->tail = c;
	}
	r = (struct rec *)(c->data + c->len);
	r->time = time;
	r->len = need - sizeof(*r);
	c->len += need;
	q->bytes += need;
	return r->payload;
}

static struct rec *head_of(const struct fifo *f)
{
	const struct chunk *c = f->head;

	return c && c->pos < c->len ? (struct rec *)(c->data + c->pos) : NULL;
}

void *timeq_oldest(struct timeq *q, uint64_t cutoff, int *source)
{
	struct rec *best = NULL;

	for (int i = 0; i < q->n; i++) {
		struct rec *r = head_of(&q->f[i]);

		if (r && r->time <= cutoff && (!best || r->time < best->time)) {
			best = r;
			*source = i;
		}
	}
	return best ? best->payload : NULL;
}

void timeq_pop(struct timeq *q, int source)
{
	struct fifo *f = &q->f[source];
	struct chunk *c = f->head;
	struct rec *r = head_of(f);
	size_t n;

	if (!r)
		return;
	n = sizeof(*r) + r->len;
	c->pos += n;
	q->bytes -= n;
	if (c->pos < c->len)
		return;
	if (c == f->tail) {	/* the last one: emptied, kept */
		c->pos = c->len = 0;
		return;
	}
	f->head = c->next;
	free(c);
}

size_t timeq_bytes(const struct timeq *q)
{
	return q->bytes;
}
