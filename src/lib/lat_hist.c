/* SPDX-License-Identifier: MIT */
/* lat_hist.c - fixed log-spaced histogram: bucket index, bounds and percentiles (a leaf). */
#include "lib/lat_hist.h"

#include <stddef.h>

#include "lib/stat_atomic.h"

static unsigned bucket_of(uint64_t ns)
{
	unsigned e;

	if (ns < (1ull << LAT_HIST_MIN_SHIFT))
		return 0;
	e = 63u - (unsigned)__builtin_clzll(ns); /* ns < 2^32 here: e is 10..31 */
	return 1u + (e - LAT_HIST_MIN_SHIFT) * LAT_HIST_SUB +
	       (unsigned)((ns >> (e - LAT_HIST_SUB_SHIFT)) & (LAT_HIST_SUB - 1));
}

/**
 * lat_hist_add() - record one value.
 * @h: the histogram
 * @ns: the value; clamped to 2^32 - 1 ns
 *
 * Called by the histogram's one writer (the queue's thread); readers on other threads use
 * lat_hist_snapshot().
 */
void lat_hist_add(struct lat_hist *h, uint64_t ns)
{
	if (ns > UINT32_MAX)
		ns = UINT32_MAX;
	/* One writer (the queue's thread); readers elsewhere use lat_hist_snapshot(). */
	stat_inc(&h->bucket[bucket_of(ns)]);
	stat_inc(&h->count);
	if (ns > h->max_ns)
		stat_set(&h->max_ns, ns);
}

/**
 * lat_hist_snapshot() - copy a histogram while its writer records.
 * @h: the histogram
 * @out: the copy: every bucket torn-free, out->count their sum (so percentiles of the copy are
 * consistent), max_ns from the same moment or a little later
 *
 * Any thread; lock-free.
 */
void lat_hist_snapshot(const struct lat_hist *h, struct lat_hist *out)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < LAT_HIST_BUCKETS; i++)
		n += out->bucket[i] = stat_read(&h->bucket[i]);
	out->count = n; /* what these buckets hold, so the percentile ranks stay inside them */
	out->max_ns = n ? stat_read(&h->max_ns) : 0;
}

/**
 * lat_hist_bucket() - one bucket's bounds and count: THE accessor for readers (control socket,
 * metrics exporters).
 * @h: the histogram (plain reads: a lat_hist_snapshot() copy on another thread); NULL: count 0
 * @i: the bucket, 0 <= i < LAT_HIST_BUCKETS; out of range gives zeros
 * @lower_ns: out (may be NULL): the bucket holds values v with *lower_ns <= v < *upper_ns
 * @upper_ns: out (may be NULL)
 * @count: out (may be NULL): values in the bucket
 *
 * Bounds are fixed (independent of the data); buckets are disjoint and ascending, bucket 0 starts
 * at 0 and the last ends at 2^32.
 */
void lat_hist_bucket(const struct lat_hist *h, unsigned i, uint64_t *lower_ns, uint64_t *upper_ns,
		     uint64_t *count)
{
	uint64_t lo = 0, hi = 0, n = 0;

	if (i == 0) {
		hi = 1ull << LAT_HIST_MIN_SHIFT;
	} else if (i < LAT_HIST_BUCKETS) {
		unsigned e = LAT_HIST_MIN_SHIFT + (i - 1) / LAT_HIST_SUB;
		uint64_t step = 1ull << (e - LAT_HIST_SUB_SHIFT);

		lo = (LAT_HIST_SUB + (i - 1) % LAT_HIST_SUB) * step;
		hi = lo + step;
	}
	if (i < LAT_HIST_BUCKETS && h)
		n = h->bucket[i];
	if (lower_ns)
		*lower_ns = lo;
	if (upper_ns)
		*upper_ns = hi;
	if (count)
		*count = n;
}

/**
 * lat_hist_percentile() - a nearest-rank percentile of the recorded values.
 * @h: the histogram (plain reads, as lat_hist_bucket())
 * @pct: 1..100 (larger is taken as 100)
 *
 * Return: in ns, the upper bound of the bucket holding that rank, capped at the largest value seen
 * (so 100 is the exact maximum); 0 when empty or @pct is 0.
 */
uint64_t lat_hist_percentile(const struct lat_hist *h, unsigned pct)
{
	uint64_t rank, seen = 0, upper = 0, n;

	if (!h->count || pct == 0)
		return 0;
	if (pct > 100)
		pct = 100;
	rank = (h->count * pct + 99) / 100;
	for (unsigned i = 0; i < LAT_HIST_BUCKETS; i++) {
		lat_hist_bucket(h, i, NULL, &upper, &n);
		seen += n;
		if (seen >= rank)
			break;
	}
	/* upper is exclusive; the largest value seen bounds every bucket's contents. */
	return upper - 1 < h->max_ns ? upper - 1 : h->max_ns;
}
