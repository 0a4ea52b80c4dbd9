/* SPDX-License-Identifier: MIT */
/* pkt_csum.c - the Internet checksum (RFC 1071): a running sum over bytes, folded to the 16 bits to store. */
#include "pkt/pkt.h"

#include <string.h>

/*
 * The sum is kept in memory order: 16-bit words are read as the host reads them (memcpy), and
 * byte order does not change a one's-complement sum except by swapping its two bytes (RFC 1071,
 * 2(B)). So the folded result, stored with memcpy, is the checksum in network order on any host,
 * with no byte swap anywhere. 64-bit words with an end-around carry give the same sum as 16-bit
 * ones, since 2^16, 2^32 and 2^64 are all 1 modulo 0xffff.
 */

/* Add w to a 64-bit one's-complement accumulator, the carry going around. */
static inline uint64_t add64(uint64_t acc, uint64_t w)
{
	acc += w;
	return acc + (acc < w);
}

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return w;
}

/**
 * pkt_csum_add() - add bytes to a running Internet checksum.
 * @sum: the sum so far (0 to start; a pkt_csum_add() result to go on)
 * @data: the bytes, at any alignment
 * @len: how many; any length
 *
 * @data is taken to start at an even offset of the summed stream: an odd @len adds its last
 * byte as the first byte of a word whose second byte is 0 (RFC 1071's padding), so in a sum
 * built from several calls only the last piece may have an odd length. Words are read in
 * memory order (see pkt_csum_fold()).
 *
 * Return: the new sum, 32 bits, not folded (equal to the true sum modulo 0xffff).
 */
uint32_t pkt_csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t acc = sum;

	while (len >= 32) {
		acc = add64(acc, load64(p));
		acc = add64(acc, load64(p + 8));
		acc = add64(acc, load64(p + 16));
		acc = add64(acc, load64(p + 24));
		p += 32;
		len -= 32;
	}
	while (len >= 8) {
		acc = add64(acc, load64(p));
		p += 8;
		len -= 8;
	}
	if (len) {
		uint8_t tail[8] = {0}; /* the last 1..7 bytes, zero-padded: the same words */

		memcpy(tail, p, len);
		acc = add64(acc, load64(tail));
	}
	acc = (acc & 0xffffffffu) + (acc >> 32);
	acc = (acc & 0xffffffffu) + (acc >> 32);
	return (uint32_t)acc;
}

/**
 * pkt_csum_fold() - the checksum field's value for a finished sum.
 * @sum: a pkt_csum_add() result over everything the checksum covers, the field itself counted
 *       as 0 (or holding a seed the sum should include)
 *
 * Folds @sum to 16 bits with the carries and complements it. The result is in network byte
 * order as stored in memory: memcpy() it into the packet's field as it is (on a little-endian
 * host its numeric value is the byte swap of the textbook value). A sum over data that already
 * holds a correct checksum (and its pseudo-header) folds to 0.
 *
 * Return: ~(the folded sum), 16 bits, ready to store.
 */
uint16_t pkt_csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}
