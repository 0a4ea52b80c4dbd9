/* SPDX-License-Identifier: MIT */
/* err_msg.h - one-line error messages into a caller's buffer (parsers of hostile input). */
#ifndef VNETD_ERR_MSG_H
#define VNETD_ERR_MSG_H

#include <stddef.h>

/* err_msg() - format one line into err[0..err_len) (truncated, always terminated); -1. */
int err_msg(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
