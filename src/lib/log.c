/* SPDX-License-Identifier: MIT */
/* log.c - leveled, rate-limited logging to stderr. */
#include "lib/log.h"

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

/**
 * log_msg() - print one line "vnetd: <level>: <message>" to stderr.
 * @level: dropped when above log_threshold
 * @fmt: printf format; the message is cut at 511 bytes
 */
void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_threshold)
		return;
	va_start(ap, fmt);
	log_vline(level, fmt, ap);
	va_end(ap);
}

/**
 * log_ratelimited() - log_msg(), but at most 5 lines a second per rate limiter.
 * @rl: the call site's state; the first line of a new second reports how many were suppressed
 * @level: dropped when above log_threshold
 * @fmt: printf format
 *
 * @rl is not locked: one per call site and thread (log_guest() declares it _Thread_local).
 */
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
