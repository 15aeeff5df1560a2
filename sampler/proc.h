/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * proc.h - what /proc says about a process: command line, thread list,
 * thread names, state and credentials.
 *
 * Stateless helpers; every call reads /proc afresh (processes change).
 * Errors: -ENOENT when the process (or thread) is gone, -EACCES when /proc
 * refuses, other negative errno values from the system calls.
 */
#ifndef PROFFS_PROC_H
#define PROFFS_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Read /proc/PID/<what> (e.g. "cmdline") into buf, at most size bytes;
 * *len = bytes read. Not NUL-terminated. */
int proc_read(pid_t pid, const char *what, char *buf, size_t size,
	      size_t *len);

/* The same as text: at most size - 1 bytes, NUL-terminated. */
int proc_read_text(pid_t pid, const char *what, char *buf, size_t size);

/* Thread name (comm) of tid in pid, NUL-terminated, newline stripped. */
int proc_comm(pid_t pid, pid_t tid, char *buf, size_t size);

/* The command line with NULs turned into spaces, NUL-terminated. */
int proc_cmdline_str(pid_t pid, char *buf, size_t size);

struct profile;

/* Name p's target for renderers' titles and comments: its pid, command
 * line (empty once the process is gone) and kind (NULL: left unset).
 * 0 or -ENOMEM. */
int proc_name_profile(struct profile *p, pid_t pid, const char *kind);

/* One-letter state from /proc/PID/stat ('R', 'S', 'Z', ...). */
int proc_state(pid_t pid, char *state);

/*
 * What the scheduler says of thread tid of pid: the CPU time it has run,
 * in ns (/proc/PID/task/TID/schedstat), and its one-letter state (its
 * stat). A thread's progress, where wall time says nothing on a busy
 * machine.
 */
int proc_task_sched(pid_t pid, pid_t tid, uint64_t *run_ns, char *state);

/* True while the process exists and is neither zombie nor dead. */
bool proc_alive(pid_t pid);

/* The same from pid's stat file held open (proc_stat_open(): -errno),
 * read again at each call: no path walk, and a pid reused after the
 * process died is not taken for it. */
int proc_stat_open(pid_t pid);
bool proc_alive_fd(int fd);

/* len bytes at addr in pid's memory, read or written whole
 * (process_vm_readv/writev: no stop, the page protections hold). 0, or a
 * negative errno (-EFAULT for a short copy). */
int proc_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int proc_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len);

/*
 * Up to max bytes at addr in pid's memory into buf, as far as they can be
 * read: one remote iovec per page, so the copy stops at the first
 * unreadable page (the end of a stack) rather than fail. Returns the
 * bytes copied, 0 when none could be.
 */
size_t proc_mem_copy(pid_t pid, uint64_t addr, void *buf, size_t max);

/* The thread ids of pid; *tids is malloc()ed, the caller frees it. */
int proc_tasks(pid_t pid, pid_t **tids, size_t *n);

/* Every process id in /proc; *pids is malloc()ed, the caller frees it. */
int proc_pids(pid_t **pids, size_t *n);

/* From /proc/PID/stat: the parent's pid and when the process started
 * (clock ticks since boot: tells a reused pid apart, and orders by age).
 * Either pointer may be NULL. */
int proc_stat_fields(pid_t pid, pid_t *ppid, unsigned long long *start);

struct proc_creds {
	uid_t ruid, euid, suid;
	uid_t owner;		/* of /proc/PID/status: root if not dumpable */
	uint64_t cap_eff;
};

/*
 * The number tid of pid goes by in its own (innermost) pid namespace: the
 * last field of NSpid in /proc/PID/task/TID/status; tid itself where the
 * kernel has no NSpid. What the process's getpid()/gettid() return, and
 * so what an agent inside it writes down.
 */
int proc_ns_tid(pid_t pid, pid_t tid, pid_t *out);
/* Credentials from /proc/PID/status, and the owner of that file. */
int proc_creds(pid_t pid, struct proc_creds *creds);

/* Move the calling thread to nice (lower is more urgent) unless it is
 * there or lower already: 0, or -EACCES/-EPERM without CAP_SYS_NICE. */
int proc_thread_nice(int nice);
/* Move the calling thread to exactly nice, either way; *was is where it
 * stood. 0, or -EACCES/-EPERM without CAP_SYS_NICE (or RLIMIT_NICE). */
int proc_thread_set_nice(int nice, int *was);

/* True when the directory-entry name is a pid ("1234"); stores it. */
bool proc_parse_pid(const char *name, pid_t *pid);

#endif
