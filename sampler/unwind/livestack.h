/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * livestack.h - the part of a sampled stack beyond its copy, read from the
 * live thread, and the check that frames unwound from it continue the
 * frames of the copy.
 *
 * A perf sample copies a fixed amount of stack (8 KiB, perf's default),
 * and less where it meets a stack page never touched (a big array's): in
 * the target's context, it copies only pages present. A caller with a
 * bigger frame between the leaf and main ends the unwind there. A bigger
 * copy would cost the target at every deep sample (~1 us per KiB here,
 * docs/performance.md) and still stop at the first absent page. So the
 * words beyond the copy are read when a sample needs them, from the
 * process, with process_vm_readv (which sees an absent page as zeros),
 * when the daemon unwinds the sample: some milliseconds later.
 *
 * That read is right for the frames of callers that have not returned
 * since: a function's return address and the registers its prologue
 * saved stay where they are until it returns. It is wrong for a frame
 * that returned meanwhile and whose memory now holds something else. So
 * every frame unwound with a word of the live part is checked before it
 * is kept (livestack_check()): its return address must follow a call
 * instruction in executable code, and a direct call (through a PLT stub
 * or not) must call the function the frame below is in. The first frame
 * that fails ends the unwind, as the end of the copy did before. What no
 * check can see: a caller that returned, and was called again from
 * another call site of the same function, at the same depth, between the
 * sample and the read (docs/design.md).
 *
 * One per unwinder (unwind.h), used from one thread. The maps are
 * borrowed. Verdicts are cached per (callee pc, return address): a pair
 * is a call or is not, whenever it is met.
 */
#ifndef PROFFS_LIVESTACK_H
#define PROFFS_LIVESTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

struct proc_maps;
struct livestack;

/* Stack read per sample at most, the copy included. */
#define LIVESTACK_MAX (128 * 1024)

/* For the samples of pid. -ENOMEM. */
int livestack_new(pid_t pid, struct proc_maps *maps, struct livestack **out);
void livestack_free(struct livestack *ls);

/* A new sample: forget the live words read for the previous one. */
void livestack_begin(struct livestack *ls);

/*
 * Make the first need bytes from sp available: the copy's copy_len bytes
 * (the caller has them), then the live words that follow it, read into
 * the livestack's own buffer (the copy is not copied again): true with
 * *live and *live_len (copy_len + *live_len >= need) pointing at those,
 * valid until the next livestack_begin(); false when need is beyond
 * LIVESTACK_MAX or the process did not give the words (a read that came
 * short is not tried again for the sample).
 */
bool livestack_extend(struct livestack *ls, uint64_t sp, size_t copy_len,
		      size_t need, const uint8_t **live, size_t *live_len);

/* The word at off from sp, held (livestack_extend()): in the copy, in the
 * live words after it, or across the two. */
static inline uint64_t livestack_join(const uint8_t *copy, size_t copy_len,
				      const uint8_t *live, uint64_t off)
{
	uint64_t v;
	size_t a;

	if (off + sizeof(v) <= copy_len) {
		memcpy(&v, copy + off, sizeof(v));
	} else if (off >= copy_len) {
		memcpy(&v, live + (off - copy_len), sizeof(v));
	} else {
		a = copy_len - off;
		memcpy(&v, copy + off, a);
		memcpy((uint8_t *)&v + a, live, sizeof(v) - a);
	}
	return v;
}

/*
 * The word at addr of the process, anywhere (another stack: a goroutine's
 * seen from the system stack, Go's g0), read a page-bounded window at a
 * time and kept until the next livestack_begin(). false if unreadable.
 */
bool livestack_word(struct livestack *ls, uint64_t addr, uint64_t *v);

/*
 * Whether ra, a return address found with live words, returns into a
 * call of the function that holds callee_pc (the frame below: the leaf's
 * pc, or another return address minus one).
 */
bool livestack_check(struct livestack *ls, uint64_t callee_pc, uint64_t ra);

/* For the session's debug line: samples that read live words, and
 * frames the check refused. */
void livestack_stats(const struct livestack *ls, uint64_t *reads,
		     uint64_t *refused);

#endif
