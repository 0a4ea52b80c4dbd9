/* SPDX-License-Identifier: MIT */
/* lat.h - a latency histogram in nanoseconds: exact below 128 ns, then 64 buckets per octave (<1.6 %). */
#ifndef PACED_LAT_H
#define PACED_LAT_H

#include <stdint.h>
#include <stdio.h>

#define LAT_SUB 64			/* buckets per octave */
#define LAT_OCTAVES 40			/* 128 ns .. 2^47 ns */
#define LAT_BUCKETS (2 * LAT_SUB + LAT_OCTAVES * LAT_SUB)

/**
 * struct lat - counts of values by bucket, with their number, sum, least and greatest.
 * @n, @sum, @min, @max:	over every value added
 * @b:				the buckets (lat_bucket())
 */
struct lat {
	uint64_t n, sum, min, max;
	uint32_t b[LAT_BUCKETS];
};

/* The bucket of v: v itself below 2 * LAT_SUB, then LAT_SUB per power of two. */
static inline unsigned lat_bucket(uint64_t v)
{
	unsigned e, idx;

	if (v < 2 * LAT_SUB)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);		/* >= 7 */
	idx = 2 * LAT_SUB + (e - 7) * LAT_SUB + (unsigned)(v >> (e - 6)) - LAT_SUB;
	return idx < LAT_BUCKETS ? idx : LAT_BUCKETS - 1;
}

static inline void lat_add(struct lat *h, uint64_t v)
{
	if (!h->n || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->n++;
	h->sum += v;
	h->b[lat_bucket(v)]++;
}

void lat_reset(struct lat *h);
uint64_t lat_pct(const struct lat *h, double p);
void lat_json(FILE *f, const char *name, const struct lat *h);

#endif
