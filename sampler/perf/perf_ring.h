/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * perf_ring.h - the mmap ring buffer of a perf event, and reading it: the
 * part perf.h (cpu profiles) and uprobe_rec.h (the heap's uprobe
 * fallback) have in common.
 *
 * A ring is one control page then a power of two of data pages, mapped
 * read-write so the reader can move data_tail (the kernel then never
 * overwrites what is unread: it drops records and says how many in a
 * PERF_RECORD_LOST). Other events may write into the same ring through
 * PERF_EVENT_IOC_SET_OUTPUT; that is the caller's business.
 *
 * The struct is public so that a caller can keep an array of them (one
 * per cpu) and test fd; its fields are otherwise the module's. A ring not
 * mapped has fd -1 and base NULL (PERF_RING_INIT, perf_ring_init()).
 *
 * Ownership: the ring owns its mapping and bounce buffer; the fd stays
 * the caller's, to close when it likes (before or after the unmap).
 *
 * Not thread-safe: one reader per ring, or a lock of the caller's.
 * Errors: negative errno.
 */
#ifndef PROFFS_PERF_RING_H
#define PROFFS_PERF_RING_H

#include <errno.h>
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* Below this many data pages a ring would drop records at any rate worth
 * profiling; perf_ring_map() gives up instead. */
#define PERF_RING_PAGES_MIN 8

/* perf_event_header.size is a u16: no record is longer. */
#define PERF_RING_MAX_RECORD 65536

struct perf_ring {
	int fd;			/* the event whose buffer this is, or -1 */
	void *base;		/* the control page, then the data */
	size_t data_size;	/* bytes of data, a power of two */
	uint8_t *bounce;	/* PERF_RING_MAX_RECORD: a record that wraps */
};

#define PERF_RING_INIT { .fd = -1 }

static inline void perf_ring_init(struct perf_ring *g)
{
	*g = (struct perf_ring)PERF_RING_INIT;
}

/*
 * perf_event_open(2), which glibc does not wrap: the new fd, or a
 * negative errno (never -1 with errno set).
 */
static inline int perf_ring_event_open(struct perf_event_attr *attr,
				       pid_t pid, int cpu, int group,
				       unsigned long flags)
{
	int fd = syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);

	return fd < 0 ? -errno : fd;
}

/*
 * Map the ring of event fd into *out, which must not be mapped. *pages
 * is the number of data pages to try, a power of two; while the kernel
 * refuses for the locked-memory limit (EPERM, ENOMEM) it is halved, down
 * to PERF_RING_PAGES_MIN. On success *pages is the number mapped (callers
 * start their next ring there) and out->fd is fd.
 *
 * Returns 0; -ENOBUFS when not even PERF_RING_PAGES_MIN pages could be
 * mapped; -ENOMEM for the bounce buffer; another negative errno from
 * mmap. On error *pages and *out are unchanged.
 */
int perf_ring_map(int fd, size_t *pages, struct perf_ring *out);

/*
 * A PERF_RECORD_SAMPLE's body (after its header) of len bytes, valid only
 * during the call: it points into the ring, or into the bounce buffer for
 * a record that wraps around the ring's end. Only 8-byte aligned.
 */
typedef void (*perf_ring_sample_cb)(const void *body, size_t len,
				    void *arg);

/*
 * Read every complete record between data_tail and data_head: samples go
 * to cb(body, len, arg), the counts of PERF_RECORD_LOST records are added
 * to *lost, other types are skipped; then data_tail is moved past them,
 * giving their room back to the kernel. A record that claims less than
 * its header or more than was written ends the drain there. An unmapped
 * ring: nothing. Cannot fail.
 */
void perf_ring_drain(struct perf_ring *g, perf_ring_sample_cb cb, void *arg,
		     uint64_t *lost);

/* Any record: its header, and its body (after the header) of len bytes,
 * as perf_ring_sample_cb's body. */
typedef void (*perf_ring_record_cb)(const struct perf_event_header *h,
				    const void *body, size_t len, void *arg);

/* perf_ring_drain() for every type of record but PERF_RECORD_LOST (whose
 * counts go to *lost): switches, forks and exits besides samples. */
void perf_ring_drain_records(struct perf_ring *g, perf_ring_record_cb cb,
			     void *arg, uint64_t *lost);

/* Unmap and free the bounce buffer; g is then as PERF_RING_INIT. The fd
 * is not closed. An unmapped ring: nothing. */
void perf_ring_unmap(struct perf_ring *g);

#endif
