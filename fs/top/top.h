/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * top.h - `proffs top`: a terminal view like `perf top -p` and `py-spy
 * top`, refreshed every second from a proffs mount, as any client reads
 * it (a 1 s CPU window, cpu_1s.txt, read again and again: each read is a
 * new window, registry.c). No daemon state is touched.
 *
 *   proffs top [-m DIR] PID | -n NAME | -u UNIT | -a
 *
 * The mount is -m DIR, else the first proffs mount in
 * /proc/self/mountinfo. It shows the hottest functions with their self
 * and total shares, the thread count, the window's total; q (or Ctrl-C)
 * quits. A refused read shows the errno and the mount's errors.txt
 * line for it.
 */
#ifndef PROFFS_TOP_H
#define PROFFS_TOP_H

/* Run the view; argv[0] is "top". Returns the process's exit status. */
int top_main(int argc, char **argv);

#endif
