/* SPDX-License-Identifier: MIT */
/* textbuf.h - a growable text buffer with printf-style appends (metrics text, HTTP replies). */
#ifndef VNETD_TEXTBUF_H
#define VNETD_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

/* Text in p[0 .. len), NUL-terminated once anything was added; oom sticks after a failed grow. */
struct textbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

/* tb_printf() - append formatted text (nothing once oom is set). */
void tb_printf(struct textbuf *tb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* tb_puts() - append a string. */
void tb_puts(struct textbuf *tb, const char *s);

/* tb_free() - release the text; the buffer is empty (and usable) again. */
void tb_free(struct textbuf *tb);

#endif
