/* SPDX-License-Identifier: MIT */
/* textbuf.c - a growable text buffer with printf-style appends (metrics text, HTTP replies). */
#include "lib/textbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* reserve() - room for `more` bytes and a NUL; false (oom set) if it cannot grow. */
static bool reserve(struct textbuf *tb, size_t more)
{
	size_t need = tb->len + more + 1, cap;
	char *grown;

	if (tb->oom)
		return false;
	if (need <= tb->cap)
		return true;
	cap = tb->cap ? tb->cap : 4096;
	while (cap < need)
		cap *= 2;
	grown = realloc(tb->p, cap);
	if (!grown) {
		tb->oom = true;
		return false;
	}
	tb->p = grown;
	tb->cap = cap;
	return true;
}

/**
 * tb_printf() - append formatted text, growing the buffer as needed.
 * @tb: the buffer; nothing is added once tb->oom is set (a failed grow sets it)
 * @fmt: printf format
 */
void tb_printf(struct textbuf *tb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!reserve(tb, 128))
		return;
	va_start(ap, fmt);
	n = vsnprintf(tb->p + tb->len, tb->cap - tb->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		tb->oom = true;
		return;
	}
	if ((size_t)n >= tb->cap - tb->len) { /* did not fit: grow and format again */
		if (!reserve(tb, (size_t)n))
			return;
		va_start(ap, fmt);
		vsnprintf(tb->p + tb->len, tb->cap - tb->len, fmt, ap);
		va_end(ap);
	}
	tb->len += (size_t)n;
}

/**
 * tb_puts() - append a string (nothing once tb->oom is set).
 * @tb: the buffer
 * @s: NUL-terminated text
 */
void tb_puts(struct textbuf *tb, const char *s)
{
	size_t n = strlen(s);

	if (!reserve(tb, n))
		return;
	memcpy(tb->p + tb->len, s, n + 1);
	tb->len += n;
}

/**
 * tb_free() - release the text; the buffer is empty (and usable) again, oom cleared.
 * @tb: the buffer
 */
void tb_free(struct textbuf *tb)
{
	free(tb->p);
	*tb = (struct textbuf){0};
}
