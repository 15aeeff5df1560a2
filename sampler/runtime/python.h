/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * python.h - the Python frames of a CPython process, read from outside,
 * merged into its native stacks as py-spy --native merges them.
 *
 * Each native frame of the evaluation loop (_PyEval_EvalFrameDefault)
 * is replaced by the Python frames it was running, innermost first, each
 * a location whose function is named "function (file.py:line)" and
 * carries the source file and line. The frames are read with
 * process_vm_readv (no stop): _PyRuntime -> interpreters -> the thread
 * state whose native_thread_id is the thread (3.8-3.10: whose
 * thread_id, a pthread_t, holds the thread's tid: pyread.c) -> its frame
 * chain -> code objects and their line tables. Layouts come from
 * pyoffsets.h. A cpu session of a root daemon has them read in the
 * kernel instead, at each sample, by an eBPF program (pyrt_bpf_start()
 * below, pybpf.c).
 *
 * A stack keeps its native frames, and the reason is counted, when the
 * chain changed while it was read (twice in a row), when the number of
 * evaluation-loop frames differs from the number of frames that entered
 * the loop (the thread moved on since its stack was taken), or when the
 * thread has no thread state. pyrt_note() writes the counts, and an
 * unknown version, as profile comments.
 *
 * Code objects are cached by address, checked against the object at
 * every use (an address may be reused by a new object). One per
 * symbolizer, so per session and process; not thread-safe. The maps and
 * profile are borrowed.
 */
#ifndef PROFFS_PYTHON_H
#define PROFFS_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_maps;
struct profile;
struct pybpf_keep;
struct pyrt;

/* What pyrt_locations() says of the thread's interpreter lock. */
enum pyrt_gil {
	PYRT_GIL_UNKNOWN,	/* no Python frames read */
	PYRT_GIL_HELD,
	PYRT_GIL_NOT_HELD,
};

/*
 * Look for CPython in the process maps describes. 0 with *out NULL when
 * it runs none; 0 with *out set otherwise (a version with no known
 * layout gives one that merges nothing and says why in pyrt_note());
 * -ENOMEM.
 */
int pyrt_open(struct proc_maps *maps, struct profile *p, struct pyrt **out);
void pyrt_free(struct pyrt *r);

/* Where a native pc's location comes from (the symbolizer, which calls
 * pyrt_locations(): a callback, so that this module stays below it). */
struct pyrt_native {
	int (*location)(void *arg, uint64_t pc, uint64_t *loc_id);
	void *arg;
};

/*
 * The locations of thread tid's stack pcs[0..n) (leaf first, as
 * unwind_stack() gives them) into locs, at most max, *nlocs of them:
 * nat's location per pc, with the Python frames in place of each
 * evaluation-loop frame when they can be read and agree with the stack.
 * *gil says whether tid held the GIL (may be NULL). 0 or -ENOMEM.
 */
int pyrt_locations(struct pyrt *r, const struct pyrt_native *nat, pid_t tid,
		   const uint64_t *pcs, int n, uint64_t *locs, int max,
		   int *nlocs, enum pyrt_gil *gil);

/*
 * Thread tid is stopped (a thread dump): read its Python frames now, for
 * the next pyrt_locations() of tid to use instead of reading them then.
 * r may be NULL. 0 (frames that cannot be read are no error) or -ENOMEM.
 */
int pyrt_snapshot(struct pyrt *r, pid_t tid);

/*
 * The name the threading module gave thread tid (threading.Thread(
 * name=...), "MainThread"), read from the process (pythreads.c), or NULL
 * when it has none that can be read. Owned by r, valid until the next
 * call. r may be NULL.
 */
const char *pyrt_thread_name(struct pyrt *r, pid_t tid);

/*
 * The frames read in the kernel, at each sample, by an eBPF program
 * (pybpf.c, pybpf.bpf.c) rather than by the daemon after it: a cpu
 * session starts it, taking a program keep holds or loading one that
 * goes back to keep when r is freed (0, or why not: -ENOTSUP without
 * libbpf or a known layout, -EPERM without root or CAP_BPF +
 * CAP_PERFMON, a refused load; logged once per keep, said in
 * pyrt_note(), the session then reads eagerly),
 * attaches it to its perf events (fds, n; 0 or why not), and hands each
 * sample's (tid, time) to pyrt_bpf_sample() before pyrt_locations() of
 * it: the record of that moment is paired with it, or the stack keeps
 * its native frames (counted). Those return 0 or -ENOMEM.
 */
int pyrt_bpf_start(struct pyrt *r, struct pybpf_keep *keep);
int pyrt_bpf_attach(struct pyrt *r, const int *fds, size_t n);
int pyrt_bpf_sample(struct pyrt *r, pid_t tid, uint64_t time);
/*
 * The loaded programs kept between sessions (at most 2, each with a 1 MiB
 * ring; loading one takes ~1.3 ms), and whether the fallback was logged:
 * the daemon's, made before its sessions and freed after them, handed to
 * pyrt_bpf_start() (NULL: each session loads its own, nothing kept).
 * Thread-safe. _new() returns 0 or -ENOMEM; _sweep() unloads what no
 * session took for idle_s seconds; _free() (NULL is fine) unloads all.
 */
int pybpf_keep_new(struct pybpf_keep **out);
void pybpf_keep_sweep(struct pybpf_keep *k, unsigned idle_s);
void pybpf_keep_free(struct pybpf_keep *k);

/* Comments on what could not be merged, for the profile. 0 or -ENOMEM. */
int pyrt_note(struct pyrt *r);

#endif
