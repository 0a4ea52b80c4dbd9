/* SPDX-License-Identifier: MIT */
/* fuzz_touch.h - the fuzzers' check of a walked chain: lengths add up, every byte reachable. */
#ifndef VNETD_FUZZ_TOUCH_H
#define VNETD_FUZZ_TOUCH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "virtq/virtq.h"

static volatile uint8_t fuzz_touch_sink; /* keeps the reads */

/*
 * fuzz_touch_chain() - read every readable byte and write every writable byte of @c (ASan
 * checks each iovec); abort() unless the iovecs are never empty, at most VQ_MAX_CHAIN, and add
 * up to the chain's lengths.
 */
static inline void fuzz_touch_chain(const struct vq_chain *c)
{
	uint64_t read_len = 0, write_len = 0;
	uint8_t sum = 0;

	if (c->nread + c->nwrite > VQ_MAX_CHAIN)
		abort();
	for (unsigned i = 0; i < c->nread + c->nwrite; i++) {
		if (c->iov[i].iov_len == 0)
			abort();
		*(i < c->nread ? &read_len : &write_len) += c->iov[i].iov_len;
	}
	if (read_len != c->read_len || write_len != c->write_len)
		abort();
	for (unsigned i = 0; i < c->nread; i++)
		for (size_t j = 0; j < c->iov[i].iov_len; j++)
			sum ^= ((const uint8_t *)c->iov[i].iov_base)[j];
	for (unsigned i = c->nread; i < c->nread + c->nwrite; i++)
		memset(c->iov[i].iov_base, 0x5a, c->iov[i].iov_len);
	fuzz_touch_sink = sum;
}

#endif
