/* SPDX-License-Identifier: MIT */
/* test_rate_limit.c - per-port rate limits: bucket math, TX waits, RX drops, one timer, keys. */
#include "coal_helpers.h"

#include "config/port_spec.h"
#include "dev/rate_limit.h"

#define T0 1000000000ull /* the harness's clock at creation */

/* A one-pair device with the given TX and RX limits, its queues started (256 entries). */
static struct test_dev *td_rate(struct rate_params tx, struct rate_params rx)
{
	struct vnet_dev_params p;
	struct test_dev *td;

	td_default_params(&p, 1);
	p.tx_rate = tx;
	p.rx_rate = rx;
	td = td_create(&p, TD_BASE_FEATURES);
	td_start_queues(td, 256);
	return td;
}

static struct vnet_queue *queue(struct test_dev *td, unsigned q)
{
	return vnet_dev_queue(td->dev, q);
}

/* ---- the bucket on its own ---- */

static void test_bucket_burst_refill_wait(void **state)
{
	struct rate_bucket b;

	(void)state;
	rate_bucket_set(&b, &(struct rate_params){8, 4}, T0); /* 10^6 bytes/s, 4096 bytes */
	assert_true(b.on);
	assert_int_equal(b.bytes_per_sec, 1000000);
	assert_int_equal(b.burst, 4096);
	assert_int_equal(b.tokens, 4096);
	assert_int_equal(b.wake, 1024);
	/* A packet passes while tokens > 0, even one larger than what is left. */
	rate_bucket_take(&b, 5000);
	assert_false(rate_bucket_has(&b));
	assert_int_equal(b.tokens, -904);
	assert_false(rate_bucket_admit(&b, 100, T0)); /* no time passed: nothing refilled */
	assert_int_equal(rate_bucket_wait_ns(&b), 1928000); /* to 1024 tokens: 1928 bytes */
	rate_bucket_refill(&b, T0 + 1000000);               /* 1 ms: 1000 bytes */
	assert_int_equal(b.tokens, 96);
	assert_true(rate_bucket_has(&b));
	assert_int_equal(rate_bucket_wait_ns(&b), 928000);
	rate_bucket_refill(&b, T0 + 500000); /* a time before the last refill adds nothing */
	assert_int_equal(b.tokens, 96);
	/* Idle for long: full, never more than the burst. */
	rate_bucket_refill(&b, T0 + 3000000000ull);
	assert_int_equal(b.tokens, 4096);
	rate_bucket_refill(&b, T0 + 3002000000ull);
	assert_int_equal(b.tokens, 4096);
	assert_int_equal(rate_bucket_wait_ns(&b), 0);
	/* A packet given back does not overfill it either. */
	rate_bucket_give(&b, 1000);
	assert_int_equal(b.tokens, 4096);
}

static void test_bucket_fractions_are_carried(void **state)
{
	struct rate_bucket b;
	uint64_t t = T0;

	(void)state;
	rate_bucket_set(&b, &(struct rate_params){1, 1024}, t); /* 125000 bytes/s */
	rate_bucket_take(&b, (uint64_t)b.tokens);
	/* 8000 refills of 1 us, each 0.125 bytes: 1000 bytes, none lost to rounding. */
	for (unsigned i = 0; i < 8000; i++) {
		t += 1000;
		rate_bucket_refill(&b, t);
	}
	assert_int_equal(b.tokens, 1000);
}

static void test_bucket_off_defaults_and_limits(void **state)
{
	struct rate_bucket b;

	(void)state;
	rate_bucket_set(&b, &(struct rate_params){0, 77}, T0);
	assert_false(b.on);
	assert_int_equal(b.params.burst_kb, 0); /* no limit: no burst either */
	rate_bucket_set(&b, &(struct rate_params){100, 0}, T0);
	assert_int_equal(b.burst, RATE_BURST_MIN); /* 10 ms of 100 Mbit/s is less */
	rate_bucket_set(&b, &(struct rate_params){1000, 0}, T0);
	assert_int_equal(b.burst, 1250000); /* 10 ms of 1 Gbit/s */
	rate_bucket_set(&b, &(struct rate_params){RATE_MBIT_MAX + 1, RATE_BURST_KB_MAX + 1}, T0);
	assert_int_equal(b.params.mbit, RATE_MBIT_MAX);
	assert_int_equal(b.params.burst_kb, RATE_BURST_KB_MAX);
	assert_int_equal(b.tokens, (int64_t)RATE_BURST_KB_MAX * 1024);
	rate_bucket_refill(&b, T0 + 1);
	rate_bucket_refill(&b, UINT64_MAX); /* no overflow at the extremes */
	assert_int_equal(b.tokens, (int64_t)b.burst);
}

/* Over a long run a greedy sender gets the burst plus the rate, to within a packet. */
static void test_bucket_long_run_rate(void **state)
{
	static const uint32_t mbits[] = {100, 1000, 10000};

	(void)state;
	for (unsigned m = 0; m < sizeof(mbits) / sizeof(mbits[0]); m++) {
		struct rate_bucket b;
		uint64_t sent = 0, t = T0, last = T0, want;

		rate_bucket_set(&b, &(struct rate_params){mbits[m], 0}, t);
		for (; t < T0 + 1000000000ull; t += 7919) { /* a prime step: no lucky alignment */
			while (rate_bucket_admit(&b, 1514, t))
				sent += 1514;
			last = t;
		}
		/* The burst, and the rate until the last refill (bytes_per_sec * ns / 10^9). */
		want = b.burst + (uint64_t)mbits[m] * 125000u / 1000u * (last - T0) / 1000000u;
		assert_true(sent + 2 * 1514 >= want);
		assert_true(sent <= want + 1514);
	}
}

/* ---- guest TX: waits in the ring ---- */

static void test_tx_waits_in_the_ring_and_resumes(void **state)
{
	struct test_dev *td = td_rate((struct rate_params){8, 4}, (struct rate_params){0, 0});
	struct vnet_queue *q = queue(td, TXQ);

	(void)state;
	td_tx(td, TXQ, 10, 1000);
	/* 4096 tokens: five packets pass (the fifth takes it to -904), five wait in the ring. */
	assert_int_equal(td->npkts, 5);
	assert_int_equal(stats(td, TXQ)->packets, 5);
	assert_int_equal(stats(td, TXQ)->dropped, 0);
	assert_int_equal(stats(td, TXQ)->rate_waits, 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[TXQ]), 5);
	assert_int_equal(q->vq.last_avail, 5); /* the sixth chain was given back */
	assert_int_equal(q->rate_deadline_ns, T0 + 1928000); /* refilled to a quarter burst */
	assert_int_equal(td->deadline[TXQ], T0 + 1928000);
	/* A kick meanwhile changes nothing: the timer runs the queue. */
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(td->npkts, 5);
	td_advance(td, 1927000);
	assert_int_equal(td->npkts, 5);
	td_advance(td, 1000); /* due: 1024 tokens, two packets */
	assert_int_equal(td->npkts, 7);
	assert_int_equal(stats(td, TXQ)->rate_waits, 2);
	td_advance(td, 20 * MS);
	assert_int_equal(td->npkts, 10);
	assert_int_equal(stats(td, TXQ)->dropped, 0);
	assert_int_equal(q->rate_deadline_ns, 0);
	assert_int_equal(td->deadline[TXQ], 0);
	td_free(td);
}

static void test_tx_limit_lifted_at_run_time(void **state)
{
	struct test_dev *td = td_rate((struct rate_params){8, 4}, (struct rate_params){0, 0});

	(void)state;
	td_tx(td, TXQ, 10, 1000);
	assert_int_equal(td->npkts, 5);
	vnet_dev_set_rate(td->dev, VNET_RATE_TX, &(struct rate_params){0, 0});
	assert_int_equal(vnet_dev_rate(td->dev, VNET_RATE_TX)->mbit, 0);
	assert_int_equal(td->deadline[TXQ], td->now); /* the waiting queue is due at once */
	td_advance(td, 0);
	assert_int_equal(td->npkts, 10);
	/* And set again: a new limit starts with a full bucket. */
	vnet_dev_set_rate(td->dev, VNET_RATE_TX, &(struct rate_params){8, 2});
	td_tx(td, TXQ, 4, 1000);
	assert_int_equal(td->npkts, 13); /* 2048 tokens: three packets */
	assert_int_equal(stats(td, TXQ)->dropped, 0);
	td_free(td);
}

static void test_tx_stop_forgets_the_wait(void **state)
{
	struct test_dev *td = td_rate((struct rate_params){8, 4}, (struct rate_params){0, 0});

	(void)state;
	td_tx(td, TXQ, 10, 1000);
	assert_int_equal(vnet_dev_queue_stop(td->dev, TXQ), 5); /* the waiting chains stay */
	assert_int_equal(queue(td, TXQ)->rate_deadline_ns, 0);
	assert_int_equal(td->deadline[TXQ], 0);
	td_free(td);
}

/* ---- guest RX: over the rate, dropped and counted ---- */

static void test_rx_drops_and_counts(void **state)
{
	struct test_dev *td = td_rate((struct rate_params){0, 0}, (struct rate_params){8, 4});

	(void)state;
	td_post_rx(td, RXQ, 32, 2048);
	for (unsigned i = 0; i < 10; i++)
		assert_int_equal(td_receive(td, 1000, (uint8_t)i), 1);
	assert_int_equal(stats(td, RXQ)->packets, 5);
	assert_int_equal(stats(td, RXQ)->rate_dropped, 5);
	assert_int_equal(stats(td, RXQ)->dropped, 0);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 5);
	/* 2 ms later: 2000 more tokens (from -904), one more passes. */
	td->now += 2 * MS;
	assert_int_equal(td_receive(td, 1000, 11), 1);
	assert_int_equal(td_receive(td, 1000, 12), 1);
	assert_int_equal(stats(td, RXQ)->packets, 7);
	assert_int_equal(stats(td, RXQ)->rate_dropped, 5);
	/* Lifted at run time: everything passes. */
	vnet_dev_set_rate(td->dev, VNET_RATE_RX, &(struct rate_params){0, 0});
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(td_receive(td, 1000, (uint8_t)i), 1);
	assert_int_equal(stats(td, RXQ)->packets, 12);
	assert_int_equal(stats(td, RXQ)->rate_dropped, 5);
	td_free(td);
}

static void test_rx_waiting_for_buffers_costs_no_tokens(void **state)
{
	struct test_dev *td = td_rate((struct rate_params){0, 0}, (struct rate_params){8, 4});

	(void)state;
	/* No buffers posted: the packet stays with the backend, its tokens are given back. */
	for (unsigned i = 0; i < 10; i++)
		assert_int_equal(td_receive(td, 1000, 1), 0);
	td_post_rx(td, RXQ, 8, 2048);
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(td_receive(td, 1000, 1), 1);
	assert_int_equal(stats(td, RXQ)->packets, 5);
	assert_int_equal(stats(td, RXQ)->rate_dropped, 0);
	td_free(td);
}

/* ---- coalescing and the refill share the queue's one timer ---- */

static void test_hold_and_refill_are_one_timer(void **state)
{
	struct test_dev *td = td_rate((struct rate_params){8, 4}, (struct rate_params){0, 0});
	struct vnet_queue *q = queue(td, TXQ);
	unsigned arms;

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 64, 500), VIRTIO_NET_OK);
	td_tx(td, TXQ, 10, 1000);
	/* Five completions held until T0 + 500 us; the bucket refills at T0 + 1928 us. */
	assert_int_equal(td->npkts, 5);
	assert_int_equal(td->notifies[TXQ], 0);
	assert_int_equal(q->coal_deadline_ns, T0 + 500 * US);
	assert_int_equal(q->rate_deadline_ns, T0 + 1928 * US);
	/* One timer, at the earlier deadline. */
	assert_int_equal(td->deadline[TXQ], T0 + 500 * US);
	assert_int_equal(q->timer_deadline_ns, T0 + 500 * US);
	arms = td->arm_calls[TXQ];
	td_advance(td, 500 * US);
	assert_int_equal(td->notifies[TXQ], 1);
	/* ... re-armed once, for the refill. */
	assert_int_equal(td->arm_calls[TXQ], arms + 1);
	assert_int_equal(td->deadline[TXQ], T0 + 1928 * US);
	td_advance(td, 1428 * US);
	assert_int_equal(td->npkts, 7);
	assert_int_equal(td->notifies[TXQ], 1); /* the two new completions are held */
	assert_int_equal(q->coal_deadline_ns, T0 + 2428 * US);
	assert_true(q->rate_deadline_ns > q->coal_deadline_ns);
	assert_int_equal(td->deadline[TXQ], q->coal_deadline_ns);
	td_free(td);
}

static void test_both_due_one_expiry_handles_both(void **state)
{
	struct test_dev *td = td_rate((struct rate_params){8, 4}, (struct rate_params){0, 0});
	struct vnet_queue *q = queue(td, TXQ);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 64, 500), VIRTIO_NET_OK);
	td_tx(td, TXQ, 10, 1000);
	/* The owner sleeps past both deadlines (a busy loop): its one timer fires once. */
	td->now += 3 * MS;
	td->deadline[TXQ] = 0;
	vnet_dev_timer_expired(td->dev, TXQ);
	assert_int_equal(td->npkts, 8);         /* the refill ran TX (3000 tokens more) ... */
	assert_int_equal(td->notifies[TXQ], 1); /* ... and the held completions were signalled */
	assert_int_equal(q->coal.pending, 0);
	assert_int_equal(td->deadline[TXQ], q->rate_deadline_ns); /* one timer for what is left */
	td_free(td);
}

/* ---- the port keys ---- */

static void test_port_keys(void **state)
{
	struct port_config pc;
	char err[256];

	(void)state;
	assert_int_equal(port_spec_parse("socket=/s,tap=t0", 0, &pc, err, sizeof(err)), 0);
	assert_int_equal(pc.dev.tx_rate.mbit, 0);
	assert_int_equal(pc.dev.rx_rate.mbit, 0);
	assert_int_equal(port_spec_parse("socket=/s,tap=t0,tx-rate=100,tx-burst=256,rx-rate=1000",
					 0, &pc, err, sizeof(err)),
			 0);
	assert_int_equal(pc.dev.tx_rate.mbit, 100);
	assert_int_equal(pc.dev.tx_rate.burst_kb, 256);
	assert_int_equal(pc.dev.rx_rate.mbit, 1000);
	assert_int_equal(pc.dev.rx_rate.burst_kb, 0);
	assert_int_equal(port_spec_parse("socket=/s,switch,rx-rate=0", 0, &pc, err, sizeof(err)), 0);
	assert_int_equal(port_spec_parse("socket=/s,tap=t0,tx-rate=1000001", 0, &pc, err,
					 sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "tx-rate"));
	assert_int_equal(port_spec_parse("socket=/s,tap=t0,rx-burst=5", 0, &pc, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "rx-burst"));
	assert_int_equal(port_spec_parse("socket=/s,tap=t0,tx-rate=-1", 0, &pc, err, sizeof(err)),
			 -1);
	assert_int_equal(port_spec_parse("socket=/s,tap=t0,rx-rate=10,rx-burst=1048577", 0, &pc, err,
					 sizeof(err)),
			 -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bucket_burst_refill_wait),
	    cmocka_unit_test(test_bucket_fractions_are_carried),
	    cmocka_unit_test(test_bucket_off_defaults_and_limits),
	    cmocka_unit_test(test_bucket_long_run_rate),
	    cmocka_unit_test_teardown(test_tx_waits_in_the_ring_and_resumes, td_cleanup),
	    cmocka_unit_test_teardown(test_tx_limit_lifted_at_run_time, td_cleanup),
	    cmocka_unit_test_teardown(test_tx_stop_forgets_the_wait, td_cleanup),
	    cmocka_unit_test_teardown(test_rx_drops_and_counts, td_cleanup),
	    cmocka_unit_test_teardown(test_rx_waiting_for_buffers_costs_no_tokens, td_cleanup),
	    cmocka_unit_test_teardown(test_hold_and_refill_are_one_timer, td_cleanup),
	    cmocka_unit_test_teardown(test_both_due_one_expiry_handles_both, td_cleanup),
	    cmocka_unit_test(test_port_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
