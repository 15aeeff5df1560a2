/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uprobe_rec.h - records of tracefs uprobe events (uprobe_group.h) for
 * every thread of one process, handed out in time order.
 *
 * One perf event per (event, thread, cpu) with inherit, the events of a
 * cpu writing into that cpu's ring (PERF_EVENT_IOC_SET_OUTPUT), as perf.h
 * does for cpu profiles: threads created meanwhile are followed from
 * their first instruction; child processes are not. Every record carries
 * the user registers, and a copy of the user stack for events that ask.
 *
 * A reader thread of its own drains the rings every few milliseconds into
 * queues (timeq.h), so the caller may take its time with each record (a
 * first unwind reads a library's DWARF) without a ring overflowing. The
 * records of one thread sit in the rings of the cpus it ran on; they come
 * out merged in time order, up to the moment every ring had been read
 * after it (so an entry never comes after its return).
 *
 * One consumer thread. Errors: negative errno; -EPERM / -EACCES when the
 * kernel refuses, -ESRCH when the process is gone, -EMFILE.
 */
#ifndef PROFFS_UPROBE_REC_H
#define PROFFS_UPROBE_REC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/unwind/unwind.h"

struct uprobe_rec;

struct uprobe_rec_event {
	uint64_t tp_id;		/* tracefs event id; 0: not opened */
	unsigned stack_bytes;	/* user stack copied per record, or 0 */
};

struct uprobe_rec_sample {
	int event;		/* index in the events given */
	uint32_t tid;
	struct unwind_regs regs;
	const void *stack;	/* from regs RSP up */
	size_t stack_len;
};

/* Open the events for every thread of pid and start reading. events is
 * copied. */
int uprobe_rec_open(pid_t pid, const struct uprobe_rec_event *events,
		    int nevents, struct uprobe_rec **out);

/*
 * The oldest record not handed out yet, if every ring has been read
 * since it was written (all: any record), into *s; false if none. The
 * record stays valid until uprobe_rec_pop().
 */
bool uprobe_rec_peek(struct uprobe_rec *r, bool all,
		     struct uprobe_rec_sample *s);
void uprobe_rec_pop(struct uprobe_rec *r);

/* Records read so far, and those lost (a full ring, or no memory). */
void uprobe_rec_counts(struct uprobe_rec *r, uint64_t *records,
		       uint64_t *lost);

/* Perf events opened, and threads given events of their own. */
void uprobe_rec_size(const struct uprobe_rec *r, size_t *events,
		     size_t *threads);

/*
 * Stop: the events are disabled, read one last time and closed - which
 * takes every probe out of the process (the last close of a tracefs
 * event waits for RCU grace periods: tens of milliseconds). The records
 * read stay to be taken. Idempotent.
 */
void uprobe_rec_stop(struct uprobe_rec *r);

/* Stop if needed, and free. NULL is a no-op. */
void uprobe_rec_free(struct uprobe_rec *r);

#endif
