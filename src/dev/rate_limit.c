/* SPDX-License-Identifier: MIT */
/* rate_limit.c - a token bucket in bytes for one direction of a port (pure, clock passed in). */
#include "dev/rate_limit.h"

#include <string.h>

#define NS_PER_SEC 1000000000ull
/* Tokens never go further below zero than one packet; this bounds it with room to spare. */
#define RATE_DEBT_MAX (1ull << 20)

/**
 * rate_bucket_set() - give a bucket new parameters
 * @b: the bucket
 * @p: Mbit/s (0: off, the burst then ignored) and burst in KiB (0: the default); values above
 *     RATE_MBIT_MAX / RATE_BURST_KB_MAX are clamped (b->params says what is in effect)
 * @now_ns: the time; the bucket starts full then
 *
 * The default burst is 10 ms of the rate, at least RATE_BURST_MIN bytes.
 */
void rate_bucket_set(struct rate_bucket *b, const struct rate_params *p, uint64_t now_ns)
{
	uint64_t bps, burst;

	memset(b, 0, sizeof(*b));
	b->params = *p;
	if (!p->mbit) {
		b->params.burst_kb = 0;
		return;
	}
	if (b->params.mbit > RATE_MBIT_MAX)
		b->params.mbit = RATE_MBIT_MAX;
	if (b->params.burst_kb > RATE_BURST_KB_MAX)
		b->params.burst_kb = RATE_BURST_KB_MAX;
	bps = (uint64_t)b->params.mbit * 125000u; /* 10^6 bits = 125000 bytes */
	burst = (uint64_t)b->params.burst_kb * 1024u;
	if (!burst) {
		burst = bps / 100u;
		if (burst < RATE_BURST_MIN)
			burst = RATE_BURST_MIN;
	}
	b->on = true;
	b->bytes_per_sec = bps;
	b->burst = burst;
	b->wake = burst / 4u ? burst / 4u : 1u;
	/* (burst + debt) * 10^9 <= (2^30 + 2^20) * 10^9 < 2^64: every product below fits. */
	b->fill_ns = (burst + RATE_DEBT_MAX) * NS_PER_SEC / bps + 1u;
	b->tokens = (int64_t)burst;
	b->last_ns = now_ns;
}

/**
 * rate_bucket_refill() - add the tokens the rate gave since the last refill
 * @b: the bucket (on)
 * @now_ns: the time now; a time before the last refill adds nothing
 *
 * Exact over time: the fraction of a byte not added yet is carried in b->rem. The bucket never
 * holds more than its burst.
 */
void rate_bucket_refill(struct rate_bucket *b, uint64_t now_ns)
{
	uint64_t dt, acc;

	if (now_ns <= b->last_ns)
		return;
	dt = now_ns - b->last_ns;
	b->last_ns = now_ns;
	if (dt >= b->fill_ns) {
		b->tokens = (int64_t)b->burst;
		b->rem = 0;
		return;
	}
	acc = dt * b->bytes_per_sec + b->rem; /* dt < fill_ns: below (burst + debt + 1) * 10^9 */
	b->tokens += (int64_t)(acc / NS_PER_SEC);
	b->rem = acc % NS_PER_SEC;
	if (b->tokens >= (int64_t)b->burst) {
		b->tokens = (int64_t)b->burst;
		b->rem = 0;
	}
}

/**
 * rate_bucket_wait_ns() - time from the last refill until the bucket holds its wake level
 * @b: the bucket (on)
 *
 * A sender that found it empty sleeps this long (b->last_ns + this is its deadline): a quarter
 * of the burst at once, not one wake-up per packet.
 * Return: nanoseconds (rounded up); 0 if the bucket holds that much already.
 */
uint64_t rate_bucket_wait_ns(const struct rate_bucket *b)
{
	uint64_t need, num;

	if (b->tokens >= (int64_t)b->wake)
		return 0;
	need = (uint64_t)((int64_t)b->wake - b->tokens);
	num = need * NS_PER_SEC - b->rem; /* rem < 10^9 <= need * 10^9 */
	return (num + b->bytes_per_sec - 1u) / b->bytes_per_sec;
}
