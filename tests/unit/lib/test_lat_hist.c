/* SPDX-License-Identifier: MIT */
/* test_lat_hist.c - the lateness histogram: bucket bounds, placement, percentiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lib/lat_hist.h"

static void test_bounds_are_contiguous_from_zero_to_2_32(void **state)
{
	uint64_t lo, hi, prev_hi = 0, n;

	(void)state;
	for (unsigned i = 0; i < LAT_HIST_BUCKETS; i++) {
		lat_hist_bucket(NULL, i, &lo, &hi, &n);
		assert_int_equal(lo, prev_hi);
		assert_true(hi > lo);
		assert_int_equal(n, 0);
		/* log-spaced: no bucket above the first is wider than a quarter of its lower bound */
		if (i > 0)
			assert_true((hi - lo) * 4 <= lo);
		prev_hi = hi;
	}
	assert_int_equal(prev_hi, 1ull << 32);
	lat_hist_bucket(NULL, LAT_HIST_BUCKETS, &lo, &hi, &n);
	assert_int_equal(lo | hi | n, 0);
}

static void test_every_value_lands_in_its_bucket(void **state)
{
	static const uint64_t values[] = {0, 1, 1023, 1024, 1279, 1280, 2047, 2048, 7000,
					  999999, 1000000, 123456789, UINT32_MAX - 1, UINT32_MAX};
	uint64_t lo, hi, n;

	(void)state;
	for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
		struct lat_hist h;
		unsigned found = 0;

		memset(&h, 0, sizeof(h));
		lat_hist_add(&h, values[v]);
		for (unsigned i = 0; i < LAT_HIST_BUCKETS; i++) {
			lat_hist_bucket(&h, i, &lo, &hi, &n);
			if (n) {
				found++;
				assert_true(values[v] >= lo && values[v] < hi);
			}
		}
		assert_int_equal(found, 1);
		assert_int_equal(h.count, 1);
		assert_int_equal(h.max_ns, values[v]);
		assert_int_equal(lat_hist_percentile(&h, 100), values[v]);
	}
}

static void test_huge_values_are_clamped(void **state)
{
	struct lat_hist h;

	(void)state;
	memset(&h, 0, sizeof(h));
	lat_hist_add(&h, UINT64_MAX);
	assert_int_equal(h.bucket[LAT_HIST_BUCKETS - 1], 1);
	assert_int_equal(h.max_ns, UINT32_MAX);
}

static void test_percentiles_nearest_rank(void **state)
{
	struct lat_hist h;
	uint64_t p50, p99;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_int_equal(lat_hist_percentile(&h, 50), 0);
	for (unsigned i = 0; i < 98; i++)
		lat_hist_add(&h, 10000); /* 10 us */
	lat_hist_add(&h, 500000);        /* 500 us */
	lat_hist_add(&h, 2000000);       /* 2 ms */
	p50 = lat_hist_percentile(&h, 50);
	p99 = lat_hist_percentile(&h, 99);
	/* Within the bucket of the rank: at most 25% above the true value, never below it. */
	assert_true(p50 >= 10000 && p50 < 12500);
	assert_true(p99 >= 500000 && p99 < 625000);
	assert_int_equal(lat_hist_percentile(&h, 100), 2000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bounds_are_contiguous_from_zero_to_2_32),
	    cmocka_unit_test(test_every_value_lands_in_its_bucket),
	    cmocka_unit_test(test_huge_values_are_clamped),
	    cmocka_unit_test(test_percentiles_nearest_rank),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
