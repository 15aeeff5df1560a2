/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log.h - the one logging call of proffs.
 *
 * Every module logs through proffs_log(); messages start with the
 * subsystem ("unwind: ", "perf: ", "fs: ") and carry no trailing newline.
 * The sink is stderr until proffs_log_set_sink() replaces it (the daemon
 * switches to syslog when it daemonizes). The sink and level are the only
 * process-wide state of the libraries; fs/fuse/main.c sets them once at start.
 */
#ifndef PROFFS_LOG_H
#define PROFFS_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum proffs_log_level {
	PROFFS_LOG_ERR,
	PROFFS_LOG_WARNING,
	PROFFS_LOG_NOTICE,
	PROFFS_LOG_INFO,
	PROFFS_LOG_DEBUG,
};

typedef void (*proffs_log_sink_t)(enum proffs_log_level level,
				  const char *fmt, va_list ap);

/* Log one line. Never fails, never allocates more than a line. */
void proffs_log(enum proffs_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Replace the sink (NULL restores stderr). */
void proffs_log_set_sink(proffs_log_sink_t sink);

/*
 * The last PROFFS_LOG_RECENT warnings and errors, oldest first, each
 * "HH:MM:SS warning: text", into out[i] (PROFFS_LOG_LINE bytes each):
 * how many. For /prof/status, whatever the sink.
 */
#define PROFFS_LOG_RECENT 5
#define PROFFS_LOG_LINE 200
size_t proffs_log_recent(char out[][PROFFS_LOG_LINE], size_t n);

/* Messages above this level are dropped (default PROFFS_LOG_INFO). */
void proffs_log_set_level(enum proffs_log_level level);

#define pr_err(...)	proffs_log(PROFFS_LOG_ERR, __VA_ARGS__)
#define pr_warn(...)	proffs_log(PROFFS_LOG_WARNING, __VA_ARGS__)
#define pr_notice(...)	proffs_log(PROFFS_LOG_NOTICE, __VA_ARGS__)
#define pr_info(...)	proffs_log(PROFFS_LOG_INFO, __VA_ARGS__)
#define pr_debug(...)	proffs_log(PROFFS_LOG_DEBUG, __VA_ARGS__)

#endif
