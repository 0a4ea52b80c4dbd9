/* SPDX-License-Identifier: MIT */
/* test_stats_lockfree.c - a writer thread updates a queue while a reader reads it without a lock. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lib/lat_hist.h"
#include "lib/stat_atomic.h"
#include "dev/dev.h"
#include "dev/vnet_dev_core.h" /* white-box: struct vnet_queue */
#include "dev/queue_view_internal.h"

/*
 * Linked with queue_view.c and lat_hist.c only, so that the same file also builds with
 * -fsanitize=thread (test_stats_lockfree_tsan): ThreadSanitizer then checks that the writer's
 * stores and the reader's loads never race.
 */

#define ROUNDS 200000u

struct shared {
	struct vnet_queue q;
	bool done;        /* the writer finished (atomic) */
	unsigned bad;     /* what the reader saw wrong (cmocka is not thread-safe: checked later) */
	unsigned reads;
};

/* The worker's side: counters every round, settings and lateness now and then. */
static void *writer(void *arg)
{
	struct shared *s = arg;

	for (uint32_t i = 1; i <= ROUNDS; i++) {
		stat_inc(&s->q.stats.packets);
		stat_add(&s->q.stats.bytes, 64);
		if (i % 64 == 0) {
			/* Settings that only make sense together: usecs = 10 * packets. */
			s->q.coal.params = (struct coal_params){i, 10u * i};
			s->q.coal.setter = (i & 64) ? COAL_SET_HOST : COAL_SET_GUEST;
			s->q.enabled = i & 128;
			s->q.adapt.windows = i;
			queue_view_publish(&s->q);
			lat_hist_add(&s->q.stats.lateness, (uint64_t)i * 100u);
		}
	}
	__atomic_store_n(&s->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* The main thread's side (vnetctl stats): values only grow, settings always belong together. */
static void *reader(void *arg)
{
	struct shared *s = arg;
	uint64_t last_packets = 0, last_bytes = 0, last_windows = 0;

	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
		struct vnet_queue_view v;
		struct lat_hist h;
		uint64_t packets = stat_read(&s->q.stats.packets);
		uint64_t bytes = stat_read(&s->q.stats.bytes);
		uint64_t n = 0;

		/* Each counter only grows and is a multiple of what was added (never torn); two
		 * counters are not ordered against each other (relaxed). */
		if (packets < last_packets || bytes < last_bytes || bytes % 64)
			s->bad++;
		last_packets = packets;
		last_bytes = bytes;
		vnet_queue_view_read(&s->q, &v);
		if (v.coal.max_usecs != 10u * v.coal.max_packets ||
		    v.adapt_windows != v.coal.max_packets || v.adapt_windows < last_windows ||
		    (v.coal.max_packets && v.set_by != ((v.coal.max_packets & 64) ? COAL_SET_HOST
										  : COAL_SET_GUEST)) ||
		    v.enabled != ((v.coal.max_packets & 128) != 0))
			s->bad++;
		last_windows = v.adapt_windows;
		lat_hist_snapshot(&s->q.stats.lateness, &h);
		for (unsigned i = 0; i < LAT_HIST_BUCKETS; i++)
			n += h.bucket[i];
		if (n != h.count || (h.count && lat_hist_percentile(&h, 100) > h.max_ns))
			s->bad++;
		s->reads++;
	}
	return NULL;
}

static void test_reader_never_sees_torn_or_mixed_values(void **state)
{
	static struct shared s;
	pthread_t w, r;

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(pthread_create(&r, NULL, reader, &s), 0);
	assert_int_equal(pthread_create(&w, NULL, writer, &s), 0);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	assert_int_equal(s.bad, 0);
	assert_int_equal(stat_read(&s.q.stats.packets), ROUNDS);
	assert_int_equal(stat_read(&s.q.stats.bytes), 64ull * ROUNDS);
	assert_int_equal(s.q.stats.lateness.count, ROUNDS / 64);
}

static void test_view_of_a_fresh_queue_is_all_zero(void **state)
{
	static struct vnet_queue q;
	struct vnet_queue_view v;

	(void)state;
	vnet_queue_view_read(&q, &v);
	assert_false(v.enabled || v.started || v.broken || v.adaptive);
	assert_int_equal(v.coal.max_packets, 0);
	assert_int_equal(v.set_by, COAL_SET_NONE);
	q.vq.broken = true;
	q.kind = VNET_QUEUE_CTRL;
	q.adapt.on = true;
	q.adapt.level = 5;
	q.adapt.state = COAL_ADAPT_PROBING;
	q.adapt.changes = UINT64_MAX;
	queue_view_publish(&q);
	vnet_queue_view_read(&q, &v);
	assert_true(v.broken && v.adaptive);
	assert_int_equal(v.kind, VNET_QUEUE_CTRL);
	assert_int_equal(v.adapt_level, 5);
	assert_int_equal(v.adapt_state, COAL_ADAPT_PROBING);
	assert_true(v.adapt_changes == UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reader_never_sees_torn_or_mixed_values),
	    cmocka_unit_test(test_view_of_a_fresh_queue_is_all_zero),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
