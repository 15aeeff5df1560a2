/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * syscalls.h - the name of an x86-64 system call number, for the thread
 * dumps (the syscall label) and the off-CPU kinds ("[syscall] futex").
 *
 * A constant table: no state, no allocation, thread-safe.
 */
#ifndef PROFFS_SYSCALLS_H
#define PROFFS_SYSCALLS_H

#include <stddef.h>

/* "futex" for 202; NULL for a number the table does not know. */
const char *syscall_name(long nr);

/*
 * The name into buf (size bytes): the table's, else "syscall N"; "" for
 * a negative number (not in a system call).
 */
void syscall_name_fmt(long nr, char *buf, size_t size);

#endif
