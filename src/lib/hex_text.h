/* SPDX-License-Identifier: MIT */
/* hex_text.h - hex digits and XX:XX:XX:XX:XX:XX MAC text, for every parser that reads them. */
#ifndef VNETD_HEX_TEXT_H
#define VNETD_HEX_TEXT_H

#include <stdbool.h>
#include <stdint.h>

/* The value of one hex digit (either case), or -1 if c is not one. */
static inline int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Two hex digits at s (s[0] checked before s[1] is read) as a byte, or -1. */
static inline int hex_byte(const char *s)
{
	int hi = hex_digit(s[0]), lo = hi < 0 ? -1 : hex_digit(s[1]);

	return lo < 0 ? -1 : hi << 4 | lo;
}

/*
 * s is exactly "XX:XX:XX:XX:XX:XX" (hex digits of either case, then the string's end): its
 * bytes into mac. False for anything else; mac may then be partly written.
 */
static inline bool hex_parse_mac(const char *s, uint8_t mac[6])
{
	for (unsigned i = 0; i < 6; i++, s += 3) {
		int b = hex_byte(s);

		if (b < 0 || s[2] != (i == 5 ? '\0' : ':'))
			return false;
		mac[i] = (uint8_t)b;
	}
	return true;
}

#endif
