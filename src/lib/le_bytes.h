/* SPDX-License-Identifier: MIT */
/* le_bytes.h - little-endian integers at unaligned byte positions (command payloads, state streams). */
#ifndef VNETD_LE_BYTES_H
#define VNETD_LE_BYTES_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

/* le_get16(), le_get32() - read a little-endian value from p (any alignment). */
static inline uint16_t le_get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16toh(v);
}

static inline uint32_t le_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

/* le_put16(), le_put32() - write v little-endian at p (any alignment). */
static inline void le_put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static inline void le_put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

#endif
