/* SPDX-License-Identifier: MIT */
/* err_msg.c - one-line error messages into a caller's buffer (parsers of hostile input). */
#include "lib/err_msg.h"

#include <stdarg.h>
#include <stdio.h>

/**
 * err_msg() - format an error message into the caller's buffer.
 * @err: the buffer; holds the message, truncated to err_len - 1 bytes, NUL-terminated
 * @err_len: its size (> 0)
 * @fmt: printf format of the message (one line, no newline)
 *
 * Any thread; no state.
 *
 * Return: -1, so that a parser can `return err_msg(...)`.
 */
int err_msg(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
	return -1;
}
