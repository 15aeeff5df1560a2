/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * threads_text.h - a thread dump (threads.h's profile) as text, in the
 * shape of Go's /debug/pprof/goroutine?debug=1 and ?debug=2.
 *
 * debug <= 1 groups threads by stack alone, largest group first (ties in
 * stack order), like Go's debug=1:
 *
 *   threads profile: total 5
 *   2 @ 0x7f12...a 0x55d0...3 0x7f12...c
 *   # labels: {"state":"sleeping", "syscall":"futex", "thread_name":"w"}
 *   #	0x7f12...a	__futex_abstimed_wait_common	futex-internal.c:57
 *   #	0x55d0...3	park_cond	/src/parked.c:31
 *   ...
 *   (blank line)
 *
 * The "N @" line lists each location's address (leaf first); a "#\t" line
 * per frame, inlined frames first with the address of their location.
 * Go prints "function+0xOFF"; the profile model has no function entry
 * address, so the offset is left out. A group whose threads differ in
 * name, state or system call gets one "# labels:" line per variant, each
 * ending in "(N threads)". go tool pprof reads this text as a count
 * profile (it skips the '#' lines).
 *
 * debug >= 2 prints every thread, by tid, like Go's debug=2:
 *
 *   thread 4242 [sleeping, futex]: condwaiter
 *   __futex_abstimed_wait_common(...)
 *   	./nptl/futex-internal.c:57
 *   park_cond(...)
 *   	/src/parked.c:31
 *   (blank line)
 *
 * "[running]" when the thread is in no system call; a frame without a
 * file shows its object and address instead ("\t/usr/lib/libc.so.6
 * 0x7f..."). Samples carrying a count above 1 (a profile merged by stack)
 * say "(N threads)" after the name.
 *
 * A sample with a "goroutine" label (a Go program's, threads.h) is
 * printed as Go prints it, by id before the threads, without the frames
 * Go's dump hides (the runtime's unexported functions, unless that leaves
 * none), and with Go's "created by" line:
 *
 *   goroutine 18 [chan receive, 2 minutes, locked to thread]:
 *   main.waitHere(...)
 *   	/src/app.go:29
 *   created by main.main
 *   	/src/app.go:67
 *
 * debug=1's header is then "goroutine profile: total N", and "(N
 * goroutines)" counts a group's label variants. A goroutine's "# labels:"
 * line also holds its pprof labels (every label but those below), and
 * is printed as Go prints a label set (runtime/pprof's
 * labelMap.String()): each pair "%q:%q" with Go's quoting, the pairs
 * sorted as strings, joined by ", ":
 *
 *   # labels: {"shard":"7", "state":"chan receive", "worker":"b"}
 *
 * (a thread's line is quoted the same way). Comments starting
 * "goroutines: " follow as "# ..." lines (after debug=1's header, at the
 * end of debug=2).
 *
 * Labels read: thread, thread_name, state, syscall, goroutine,
 * wait_minutes, created_by, created_at, locked_to_thread (all optional).
 *
 * Ownership and errors as in folded.h: *buf is malloc()ed and
 * NUL-terminated, owned by the caller; -ENOMEM, or -EINVAL when the
 * profile has no sample type; on failure *buf is untouched.
 */
#ifndef PROFFS_THREADS_TEXT_H
#define PROFFS_THREADS_TEXT_H

#include <stddef.h>

struct profile;

int threads_text_render(const struct profile *p, int debug, char **buf,
			size_t *len);

#endif
