/* SPDX-License-Identifier: MIT */
/* log.h - leveled logging to stderr with per-call-site rate limiting for guest-triggered errors. */
#ifndef VNETD_LOG_H
#define VNETD_LOG_H

#include <stdbool.h>
#include <stdint.h>

enum log_level { LOG_ERR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Rate-limit state for one call site: at most `burst` lines per second. */
struct log_ratelimit {
	uint64_t window_start_ns;
	unsigned printed;
	unsigned suppressed;
};

extern enum log_level log_threshold;

/* log_msg() - print one line "vnetd: <level>: <message>" to stderr if level passes. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* log_ratelimited() - like log_msg(), but at most 5 lines a second per `rl`. */
void log_ratelimited(struct log_ratelimit *rl, enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/* Guest-triggered problems: one rate limiter per call site and worker thread. */
#define log_guest(...)                                                                             \
	do {                                                                                       \
		static _Thread_local struct log_ratelimit rl_;                                     \
		log_ratelimited(&rl_, LOG_WARN, __VA_ARGS__);                                      \
	} while (0)

#endif
