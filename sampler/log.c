// SPDX-License-Identifier: GPL-2.0-or-later
/* log.c - pluggable one-line logger, after libfuse's fuse_log.c. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "log.h"

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

void proffs_log(enum proffs_log_level level, const char *fmt, ...)
{
	proffs_log_sink_t sink = atomic_load(&log_sink);
	va_list ap;

	if ((int)level > atomic_load(&log_level))
		return;
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
