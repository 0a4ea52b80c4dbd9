/* SPDX-License-Identifier: MIT */
/* lat.c - percentiles of a latency histogram, and its JSON object. */
#include "lat.h"

#include <string.h>

/* Forget every value. */
void lat_reset(struct lat *h)
{
	memset(h, 0, sizeof(*h));
}

/* The middle of bucket idx (its value, below 2 * LAT_SUB). */
static uint64_t bucket_mid(unsigned idx)
{
	unsigned k, e;
	uint64_t lo, width;

	if (idx < 2 * LAT_SUB)
		return idx;
	k = idx - 2 * LAT_SUB;
	e = k / LAT_SUB + 7;
	width = 1ull << (e - 6);
	lo = (uint64_t)(k % LAT_SUB + LAT_SUB) << (e - 6);
	return lo + width / 2;
}

/**
 * lat_pct() - the p-th quantile (0 < p <= 1), within the bucket's resolution.
 * @h: the histogram
 * @p: e.g. 0.5, 0.99, 0.999
 *
 * Return: the middle of the bucket holding the ceil(p * n)-th value, clamped to [min, max];
 * 0 with no values.
 */
uint64_t lat_pct(const struct lat *h, double p)
{
	uint64_t rank = (uint64_t)(p * (double)h->n + 0.999999), seen = 0;

	if (!h->n)
		return 0;
	if (rank < 1)
		rank = 1;
	for (unsigned i = 0; i < LAT_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			uint64_t v = bucket_mid(i);

			return v < h->min ? h->min : v > h->max ? h->max : v;
		}
	}
	return h->max;
}

/* "name": {"n", "min", "mean", "p50", "p90", "p99", "p999", "max"} in ns (no trailing comma). */
void lat_json(FILE *f, const char *name, const struct lat *h)
{
	fprintf(f, "\"%s\": {\"n\": %llu, \"min\": %llu, \"mean\": %.1f, \"p50\": %llu, "
		"\"p90\": %llu, \"p99\": %llu, \"p999\": %llu, \"max\": %llu}",
		name, (unsigned long long)h->n, (unsigned long long)h->min,
		h->n ? (double)h->sum / (double)h->n : 0.0,
		(unsigned long long)lat_pct(h, 0.5), (unsigned long long)lat_pct(h, 0.9),
		(unsigned long long)lat_pct(h, 0.99), (unsigned long long)lat_pct(h, 0.999),
		(unsigned long long)h->max);
}
