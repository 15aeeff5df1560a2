// SPDX-License-Identifier: GPL-2.0-or-later
/* log.c - pluggable one-line logger, after libfuse's fuse_log.c. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sampler/log.h"

static _Atomic(proffs_log_sink_t) log_sink;
static _Atomic int log_level = PROFFS_LOG_INFO;

static void stderr_sink(enum proffs_log_level level, const char *fmt,
			va_list ap)
{
	static const char *const prefix[] = {
		[PROFFS_LOG_ERR] = "error: ",
		[PROFFS_LOG_WARNING] = "warning: ",
		[PROFFS_LOG_NOTICE] = "",
		[PROFFS_LOG_INFO] = "",
		[PROFFS_LOG_DEBUG] = "debug: ",
	};
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "proffs: %s%s\n", prefix[level], line);
}

/* The last warnings and errors, a ring (protected by recent_lock). */
static pthread_mutex_t recent_lock = PTHREAD_MUTEX_INITIALIZER;
static char recent[PROFFS_LOG_RECENT][PROFFS_LOG_LINE];
static unsigned recent_next, recent_n;

static void keep_recent(enum proffs_log_level level, const char *fmt,
			va_list ap)
{
	char when[16];
	struct tm tm;
	time_t now = time(NULL);
	int n;

	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	pthread_mutex_lock(&recent_lock);
	n = snprintf(recent[recent_next], PROFFS_LOG_LINE, "%s %s: ", when,
		     level == PROFFS_LOG_ERR ? "error" : "warning");
	vsnprintf(recent[recent_next] + n, PROFFS_LOG_LINE - n, fmt, ap);
	recent_next = (recent_next + 1) % PROFFS_LOG_RECENT;
	if (recent_n < PROFFS_LOG_RECENT)
		recent_n++;
	pthread_mutex_unlock(&recent_lock);
}

size_t proffs_log_recent(char out[][PROFFS_LOG_LINE], size_t n)
{
	size_t got = 0;

	pthread_mutex_lock(&recent_lock);
	for (unsigned i = recent_n; i > 0 && got < n; i--)
		memcpy(out[got++], recent[(recent_next + PROFFS_LOG_RECENT -
					   i) % PROFFS_LOG_RECENT],
		       PROFFS_LOG_LINE);
	pthread_mutex_unlock(&recent_lock);
	return got;
}

void proffs_log(enum proffs_log_level level, const char *fmt, ...)
{
	proffs_log_sink_t sink = atomic_load(&log_sink);
	va_list ap;

	if ((int)level > atomic_load(&log_level))
		return;
	if (level <= PROFFS_LOG_WARNING) {
		va_start(ap, fmt);
		keep_recent(level, fmt, ap);
		va_end(ap);
	}
	va_start(ap, fmt);
	(sink ? sink : stderr_sink)(level, fmt, ap);
	va_end(ap);
}

void proffs_log_set_sink(proffs_log_sink_t sink)
{
	atomic_store(&log_sink, sink);
}

void proffs_log_set_level(enum proffs_log_level level)
{
	atomic_store(&log_level, (int)level);
}
