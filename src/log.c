/* SPDX-License-Identifier: MIT */
/* log.c - leveled, rate-limited logging to stderr. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

enum log_level log_threshold = LOG_INFO;

static const char *const level_names[] = {"error", "warning", "info", "debug"};

static void log_vline(enum log_level level, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "vnetd: %s: %s\n", level_names[level], line);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_threshold)
		return;
	va_start(ap, fmt);
	log_vline(level, fmt, ap);
	va_end(ap);
}

void log_ratelimited(struct log_ratelimit *rl, enum log_level level, const char *fmt, ...)
{
	struct timespec ts;
	uint64_t now;
	va_list ap;

	if (level > log_threshold)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (now - rl->window_start_ns >= 1000000000ull) {
		if (rl->suppressed)
			log_msg(level, "(%u similar messages suppressed)", rl->suppressed);
		rl->window_start_ns = now;
		rl->printed = 0;
		rl->suppressed = 0;
	}
	if (rl->printed >= 5) {
		rl->suppressed++;
		return;
	}
	rl->printed++;
	va_start(ap, fmt);
	log_vline(level, fmt, ap);
	va_end(ap);
}
