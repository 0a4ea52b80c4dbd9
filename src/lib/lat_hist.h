/* SPDX-License-Identifier: MIT */
/* lat_hist.h - a fixed, log-spaced histogram of nanosecond values (coalescing timer lateness). */
#ifndef VNETD_LAT_HIST_H
#define VNETD_LAT_HIST_H

#include <stdint.h>

/*
 * Buckets: [0] holds 0..1023 ns; above that every power of two is split into LAT_HIST_SUB equal
 * buckets (about 19% wide each: [1024, 1280), [1280, 1536), ...), up to 2^32 ns (4.3 s, where
 * values are clamped). 89 buckets of 8 bytes: a queue's lateness costs 0.7 KB however many
 * timers fire, where 4096 raw samples cost 16 KB.
 */
#define LAT_HIST_SUB_SHIFT 2
#define LAT_HIST_SUB (1u << LAT_HIST_SUB_SHIFT)
#define LAT_HIST_MIN_SHIFT 10 /* bucket 0 ends at 2^10 ns */
#define LAT_HIST_MAX_SHIFT 32 /* the last bucket ends at 2^32 ns */
#define LAT_HIST_BUCKETS (1u + (LAT_HIST_MAX_SHIFT - LAT_HIST_MIN_SHIFT) * LAT_HIST_SUB)

struct lat_hist {
	uint64_t count;  /* values recorded */
	uint64_t max_ns; /* the largest of them (after clamping) */
	uint64_t bucket[LAT_HIST_BUCKETS];
};

/* lat_hist_add() - record one value (clamped to 2^32 - 1 ns). */
void lat_hist_add(struct lat_hist *h, uint64_t ns);

/*
 * lat_hist_snapshot() - copy h into *out from any thread while its writer records: every bucket
 * torn-free, out->count their sum (so percentiles of the copy are consistent), max from the
 * same moment or a little later.
 */
void lat_hist_snapshot(const struct lat_hist *h, struct lat_hist *out);

/*
 * lat_hist_bucket() - THE accessor for readers (control socket, metrics exporters): bucket i
 * (0 <= i < LAT_HIST_BUCKETS) holds *count values v with *lower_ns <= v < *upper_ns. Bounds
 * are fixed (independent of the data); buckets are disjoint and ascending, bucket 0 starts at
 * 0 and the last ends at 2^32. Any out pointer may be NULL; i out of range gives zeros.
 */
void lat_hist_bucket(const struct lat_hist *h, unsigned i, uint64_t *lower_ns, uint64_t *upper_ns,
		     uint64_t *count);

/*
 * lat_hist_percentile() - nearest-rank percentile pct (1..100) in ns: the upper bound of the
 * bucket holding that rank, capped at the largest value seen (so 100 is the exact maximum).
 * 0 when empty.
 */
uint64_t lat_hist_percentile(const struct lat_hist *h, unsigned pct);

#endif
