/* SPDX-License-Identifier: MIT */
/* rate_limit.h - a token bucket in bytes for one direction of a port (pure, clock passed in). */
#ifndef VNETD_RATE_LIMIT_H
#define VNETD_RATE_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define RATE_MBIT_MAX 1000000u     /* 1 Tbit/s: the largest rate taken */
#define RATE_BURST_KB_MAX 1048576u /* 1 GiB: the largest burst taken */
#define RATE_BURST_MIN 131072u     /* default burst, at least (two of the largest frames) */

/* A rate as the operator gives it: Mbit/s (10^6 bits) and a burst in KiB. mbit 0: no limit. */
struct rate_params {
	uint32_t mbit;
	uint32_t burst_kb; /* 0: the default, 10 ms of the rate and at least RATE_BURST_MIN */
};

/*
 * One bucket. A packet passes while tokens > 0 and takes its length, so tokens may go below
 * zero by one packet (a frame larger than the burst still passes, and the long-run rate is
 * exact); refills are lazy, at the times the caller passes in, and never above the burst.
 */
struct rate_bucket {
	bool on;                /* mbit != 0: the only field the packet path reads when off */
	int64_t tokens;         /* bytes that may pass now */
	uint64_t bytes_per_sec; /* the rate */
	uint64_t burst;         /* bytes the bucket holds, at most */
	uint64_t wake;          /* tokens a waiting sender waits for (a quarter of the burst) */
	uint64_t fill_ns;       /* refilling this long fills the bucket from any level */
	uint64_t last_ns;       /* time of the last refill */
	uint64_t rem;           /* refill remainder, in byte-nanoseconds (< 10^9) */
	struct rate_params params; /* as in effect (clamped to the maximum) */
};

/* rate_bucket_set() - new parameters; the bucket starts full at now_ns (mbit 0: off). */
void rate_bucket_set(struct rate_bucket *b, const struct rate_params *p, uint64_t now_ns);

/* rate_bucket_refill() - add what the rate gave since the last refill, up to the burst. */
void rate_bucket_refill(struct rate_bucket *b, uint64_t now_ns);

/* rate_bucket_wait_ns() - how long from the last refill until tokens reach the wake level. */
uint64_t rate_bucket_wait_ns(const struct rate_bucket *b);

/* rate_bucket_has() - whether a packet may pass now (no refill). */
static inline bool rate_bucket_has(const struct rate_bucket *b)
{
	return b->tokens > 0;
}

/* rate_bucket_take() - a packet of len bytes passed. */
static inline void rate_bucket_take(struct rate_bucket *b, uint64_t len)
{
	b->tokens -= (int64_t)len;
}

/* rate_bucket_give() - give back the len bytes a packet took that did not pass after all. */
static inline void rate_bucket_give(struct rate_bucket *b, uint64_t len)
{
	b->tokens += (int64_t)len;
	if (b->tokens > (int64_t)b->burst)
		b->tokens = (int64_t)b->burst;
}

/* rate_bucket_admit() - refill at now_ns, then take len if a packet may pass; whether it did. */
static inline bool rate_bucket_admit(struct rate_bucket *b, uint64_t len, uint64_t now_ns)
{
	rate_bucket_refill(b, now_ns);
	if (!rate_bucket_has(b))
		return false;
	rate_bucket_take(b, len);
	return true;
}

#endif
