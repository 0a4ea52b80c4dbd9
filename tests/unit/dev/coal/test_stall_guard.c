/* SPDX-License-Identifier: MIT */
/* test_stall_guard.c - early notifications of the stall guard (notify.c), on the fake clock. */
#include "coal_helpers.h"

#include "dev/coal/coal_adaptive.h"
#include "vq_packed_driver.h"

/* A device with the stall guard as given, every queue of size qsize. */
static struct test_dev *td_guard(bool on, uint32_t bytes, uint32_t idle_usecs, uint16_t qsize,
				 uint64_t extra_features)
{
	struct vnet_dev_params p;
	struct test_dev *td;

	td_default_params(&p, 1);
	p.stall_guard = (struct vnet_stall_guard){on, bytes, idle_usecs};
	td = td_create(&p, TD_BASE_FEATURES | extra_features);
	td_start_queues(td, qsize);
	return td;
}

static uint64_t early(struct test_dev *td, unsigned q)
{
	return stats(td, q)->early_idle + stats(td, q)->early_ring + stats(td, q)->early_bytes;
}

static void test_bytes_held_end_the_hold(void **state)
{
	struct test_dev *td = td_guard(true, 4000, 0, 256, 0);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 64, 5000), VIRTIO_NET_OK);
	for (unsigned i = 0; i < 3; i++)
		td_tx(td, TXQ, 1, 1000);
	assert_int_equal(td->notifies[TXQ], 0); /* 3000 bytes held */
	td_tx(td, TXQ, 1, 1000);
	assert_int_equal(td->notifies[TXQ], 1); /* 4000: now */
	assert_int_equal(stats(td, TXQ)->early_bytes, 1);
	assert_int_equal(coal(td, TXQ)->pending, 0);
	assert_int_equal(td->deadline[TXQ], 0);
	/* Counting starts afresh after the notification. */
	for (unsigned i = 0; i < 3; i++)
		td_tx(td, TXQ, 1, 1000);
	assert_int_equal(td->notifies[TXQ], 1);
	td_advance(td, 5 * MS);
	assert_int_equal(td->notifies[TXQ], 2);
	assert_int_equal(stats(td, TXQ)->timer_notifications, 1);
	assert_int_equal(stats(td, TXQ)->early_bytes, 1);
	td_free(td);
}

static void test_guard_off_holds_as_before(void **state)
{
	struct test_dev *td = td_guard(false, 4000, 1000, 16, 0);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 64, 5000), VIRTIO_NET_OK);
	assert_int_equal(td_coal_cmd(td, RX_SET, 64, 5000), VIRTIO_NET_OK);
	for (unsigned i = 0; i < 7; i++)
		td_tx(td, TXQ, 1, 1000); /* bytes, idle and 14 of 16 descriptors: all would fire */
	td_post_rx(td, RXQ, 4, 2048);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(td_receive(td, 60, 1), 1);
	td_advance(td, 4999 * US);
	assert_int_equal(td->notifies[TXQ], 0);
	assert_int_equal(td->notifies[RXQ], 0);
	assert_int_equal(early(td, TXQ) + early(td, RXQ), 0);
	td_advance(td, 1 * US);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(td->notifies[RXQ], 1);
	td_free(td);
}

static void test_tx_driver_idle_gets_its_completions(void **state)
{
	struct test_dev *td = td_guard(true, 0, 1000, 256, 0);
	uint64_t t0 = td->now;

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 64, 5000), VIRTIO_NET_OK);
	td_tx(td, TXQ, 2, 100);
	assert_int_equal(td->deadline[TXQ], t0 + 1 * MS); /* the idle check comes first */
	td_advance(td, 999 * US);
	assert_int_equal(td->notifies[TXQ], 0);
	td_advance(td, 1 * US);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(stats(td, TXQ)->early_idle, 1);
	assert_int_equal(stats(td, TXQ)->timer_notifications, 0);
	assert_int_equal(td->deadline[TXQ], 0);
	td_free(td);
}

/* RX: the guest sent until the hold began, then went quiet: it waits for what we hold. */
static void test_rx_hold_ends_when_the_guest_stops_sending(void **state)
{
	struct test_dev *td = td_guard(true, 0, 1000, 256, 0);
	uint64_t t0;

	(void)state;
	assert_int_equal(td_coal_cmd(td, RX_SET, 64, 5000), VIRTIO_NET_OK);
	td_post_rx(td, RXQ, 16, 2048);
	td_tx(td, TXQ, 1, 100); /* a request (TX not coalesced: notified at once) */
	t0 = td->now;
	td_advance(td, 10 * US);
	assert_int_equal(td_receive(td, 60, 1), 1); /* the answer */
	assert_int_equal(td->deadline[RXQ], t0 + 10 * US + 250 * US); /* a quarter of 1000 us */
	td_advance(td, 249 * US);
	assert_int_equal(td->notifies[RXQ], 0);
	td_advance(td, 1 * US);
	assert_int_equal(td->notifies[RXQ], 1);
	assert_int_equal(stats(td, RXQ)->early_idle, 1);
	/* The guest sent nothing around the next hold: coalescing holds it to its deadline. */
	td_advance(td, 10 * MS);
	assert_int_equal(td_receive(td, 60, 2), 1);
	td_advance(td, 4999 * US);
	assert_int_equal(td->notifies[RXQ], 1);
	td_advance(td, 1 * US);
	assert_int_equal(td->notifies[RXQ], 2);
	assert_int_equal(stats(td, RXQ)->early_idle, 1);
	assert_int_equal(stats(td, RXQ)->timer_notifications, 1);
	td_free(td);
}

/* ... while it keeps sending (a bulk sender whose ACKs we hold is not stalled yet). */
static void test_rx_hold_lasts_while_the_guest_sends(void **state)
{
	struct test_dev *td = td_guard(true, 0, 1000, 256, 0);

	(void)state;
	assert_int_equal(td_coal_cmd(td, RX_SET, 64, 5000), VIRTIO_NET_OK);
	td_post_rx(td, RXQ, 16, 2048);
	td_tx(td, TXQ, 1, 100);
	assert_int_equal(td_receive(td, 60, 1), 1);
	for (unsigned i = 0; i < 20; i++) { /* 4 ms of TX every 200 us */
		td_advance(td, 200 * US);
		td_tx(td, TXQ, 1, 100);
	}
	assert_int_equal(td->notifies[RXQ], 0);
	td_advance(td, 250 * US); /* then quiet */
	assert_int_equal(td->notifies[RXQ], 1);
	assert_int_equal(stats(td, RXQ)->early_idle, 1);
	td_free(td);
}

/*
 * RX into a guest whose ACKs stopped because its data is held: while packets keep arriving its
 * peer still has window, nobody waits yet; the hold ends once arrivals stop too.
 */
static void test_rx_hold_lasts_while_packets_arrive(void **state)
{
	struct test_dev *td = td_guard(true, 0, 1000, 256, 0);

	(void)state;
	assert_int_equal(td_coal_cmd(td, RX_SET, 64, 5000), VIRTIO_NET_OK);
	td_post_rx(td, RXQ, 32, 2048);
	td_tx(td, TXQ, 1, 100); /* the guest's last ACK before the hold */
	assert_int_equal(td_receive(td, 1500, 1), 1);
	for (unsigned i = 0; i < 20; i++) { /* 2 ms of data every 100 us, the guest silent */
		td_advance(td, 100 * US);
		assert_int_equal(td_receive(td, 1500, 1), 1);
	}
	assert_int_equal(td->notifies[RXQ], 0);
	td_advance(td, 249 * US);
	assert_int_equal(td->notifies[RXQ], 0);
	td_advance(td, 1 * US); /* a quarter of 1000 us after the last arrival */
	assert_int_equal(td->notifies[RXQ], 1);
	assert_int_equal(stats(td, RXQ)->early_idle, 1);
	assert_int_equal(stats(td, RXQ)->timer_notifications, 0);
	td_free(td);
}

/* Paced traffic (a packet every 500 us) keeps its reduction: the driver is not idle. */
static void test_paced_tx_keeps_coalescing(void **state)
{
	struct test_dev *td = td_guard(true, 64 * 1024, 1000, 256, 0);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 50, 5000), VIRTIO_NET_OK);
	for (unsigned i = 0; i < 100; i++) { /* 50 ms */
		td_tx(td, TXQ, 1, 1400);
		td_advance(td, 500 * US);
	}
	/* One notification per 5 ms window (10 packets), none early. */
	assert_int_equal(early(td, TXQ), 0);
	assert_true(td->notifies[TXQ] >= 9 && td->notifies[TXQ] <= 10);
	assert_int_equal(stats(td, TXQ)->timer_notifications, td->notifies[TXQ]);
	td_free(td);
}

/* td_advance() in 10 us steps: each timer fires at its deadline, as a timerfd's would. */
static void step(struct test_dev *td, uint64_t ns)
{
	for (uint64_t t = 0; t < ns; t += 10 * US)
		td_advance(td, ns - t < 10 * US ? ns - t : 10 * US);
}

/*
 * A paced sender's bursts (here one packet every 4 ms: longer than stall-idle-usecs, shorter
 * than max_usecs) come on its own clock: the early notifications it leaves unanswered stop,
 * and coalescing holds to its deadline as without the guard.
 */
static void test_paced_bursts_stop_the_tx_idle_rule(void **state)
{
	struct test_dev *td = td_guard(true, 0, 1000, 256, 0);
	uint64_t early_at_100ms;

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 50, 5000), VIRTIO_NET_OK);
	for (unsigned i = 0; i < 25; i++) { /* 100 ms */
		td_tx(td, TXQ, 1, 1400);
		step(td, 4 * MS);
	}
	early_at_100ms = early(td, TXQ);
	assert_true(early_at_100ms <= 6); /* a few, to learn */
	for (unsigned i = 0; i < 25; i++) {
		td_tx(td, TXQ, 1, 1400);
		step(td, 4 * MS);
	}
	assert_int_equal(early(td, TXQ), early_at_100ms);
	/* Without the guard: 1 notification per 2 packets (5 ms windows of 4 ms gaps). */
	assert_true(td->notifies[TXQ] <= 25 + early_at_100ms);
	td_free(td);
}

/* A driver that answers each early notification at once keeps getting them early. */
static void test_answered_idle_notifications_stay_early(void **state)
{
	struct test_dev *td = td_guard(true, 0, 1000, 256, 0);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 50, 5000), VIRTIO_NET_OK);
	for (unsigned i = 0; i < 20; i++) {
		td_tx(td, TXQ, 1, 100);
		step(td, 1 * MS); /* idle: the early notification */
		assert_int_equal(stats(td, TXQ)->early_idle, i + 1);
		step(td, 50 * US); /* the waiting driver answers */
	}
	assert_int_equal(td->notifies[TXQ], 20);
	td_free(td);
}

/* After a paced phase, a driver that waits again (answers deadline notifications at once)
 * gets its early notifications back. */
static void test_idle_rule_returns_when_answered(void **state)
{
	struct test_dev *td = td_guard(true, 0, 1000, 256, 0);
	uint64_t e;

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 50, 5000), VIRTIO_NET_OK);
	for (unsigned i = 0; i < 50; i++) {
		td_tx(td, TXQ, 1, 1400);
		step(td, 4 * MS);
	}
	e = early(td, TXQ);
	for (unsigned i = 0; i < 40; i++) {
		uint64_t n = td->notifies[TXQ];

		td_tx(td, TXQ, 1, 100);
		while (td->notifies[TXQ] == n)
			step(td, 100 * US);
		step(td, 50 * US); /* answered */
	}
	assert_true(early(td, TXQ) > e + 20);
	td_free(td);
}

/* RX: a guest sending paced bursts gets its peer's ACKs at the deadline, not after each burst. */
static void test_paced_sender_stops_the_rx_idle_rule(void **state)
{
	struct test_dev *td = td_guard(true, 0, 1000, 256, 0);
	uint64_t e;

	(void)state;
	assert_int_equal(td_coal_cmd(td, RX_SET, 50, 5000), VIRTIO_NET_OK);
	td_post_rx(td, RXQ, 200, 2048);
	for (unsigned i = 0; i < 50; i++) { /* 200 ms: burst, its ACK 100 us later, 4 ms period */
		td_tx(td, TXQ, 1, 1400);
		step(td, 100 * US);
		assert_int_equal(td_receive(td, 60, (uint8_t)i), 1);
		step(td, 3900 * US);
		if (i == 24)
			e = early(td, RXQ);
	}
	assert_true(e <= 6);
	assert_int_equal(early(td, RXQ), e);
	td_free(td);
}

/* Paced RX: the ring stays mostly full of buffers, so nothing fires early. */
static void test_paced_rx_keeps_coalescing(void **state)
{
	struct test_dev *td = td_guard(true, 64 * 1024, 1000, 256, 0);

	(void)state;
	assert_int_equal(td_coal_cmd(td, RX_SET, 50, 5000), VIRTIO_NET_OK);
	td_post_rx(td, RXQ, 200, 2048);
	for (unsigned i = 0; i < 100; i++) {
		assert_int_equal(td_receive(td, 1400, (uint8_t)i), 1);
		td_advance(td, 500 * US);
	}
	assert_int_equal(early(td, RXQ), 0);
	assert_true(td->notifies[RXQ] >= 9 && td->notifies[RXQ] <= 10);
	td_free(td);
}

/* 8 RX buffers posted, RX_SET 64 / 5000 µs: the ring rule ends the hold at the sixth frame. */
static void expect_ring_rule_at_sixth_frame(struct test_dev *td)
{
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(td_receive(td, 60, 1), 1);
	assert_int_equal(td->notifies[RXQ], 0); /* 3 buffers left, 5 held */
	assert_int_equal(td_receive(td, 60, 1), 1);
	assert_int_equal(td->notifies[RXQ], 1); /* 2 left of 8: a quarter */
	assert_int_equal(stats(td, RXQ)->early_ring, 1);
}

static void test_rx_ring_nearly_empty_notifies(void **state)
{
	struct test_dev *td = td_guard(true, 0, 0, 256, 0);

	(void)state;
	assert_int_equal(td_coal_cmd(td, RX_SET, 64, 5000), VIRTIO_NET_OK);
	td_post_rx(td, RXQ, 8, 2048);
	expect_ring_rule_at_sixth_frame(td);
	td_free(td);
}

/*
 * The same on a packed RX ring, which has no avail index: the rule reads how many buffers are
 * posted from the descriptors (it used to see one at most and notify after three).
 */
static void test_packed_rx_ring_nearly_empty_notifies(void **state)
{
	struct pd *p = pd_new(8, false, false);
	struct vnet_dev_params prm;
	struct test_dev *td;

	(void)state;
	td_default_params(&prm, 1);
	prm.stall_guard = (struct vnet_stall_guard){true, 0, 0};
	td = pd_device(p, &prm, RXQ, 0);
	assert_int_equal(td_coal_cmd(td, RX_SET, 64, 5000), VIRTIO_NET_OK);
	for (uint16_t id = 0; id < 8; id++)
		pd_add1(p, id, 2048, true);
	expect_ring_rule_at_sixth_frame(td);
	td_free(td);
	fake_mem_free(&p->mem);
	free(p);
}

static void test_tx_descriptors_nearly_used_up_notify(void **state)
{
	struct test_dev *td = td_guard(true, 0, 0, 16, 0);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 64, 5000), VIRTIO_NET_OK);
	/* Two descriptors a packet (header, data): 10 of 16 held, then 12 = three quarters. */
	for (unsigned i = 0; i < 5; i++)
		td_tx(td, TXQ, 1, 100);
	assert_int_equal(td->notifies[TXQ], 0);
	td_tx(td, TXQ, 1, 100);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(stats(td, TXQ)->early_ring, 1);
	td_free(td);
}

/* The guard never notifies a driver that suppresses notifications (flags). */
static void test_guard_respects_no_interrupt(void **state)
{
	struct test_dev *td = td_guard(true, 100, 0, 256, 0);

	(void)state;
	assert_int_equal(td_coal_cmd(td, RX_SET, 64, 5000), VIRTIO_NET_OK);
	fake_vq_set_no_interrupt(&td->vq[RXQ], true);
	td_post_rx(td, RXQ, 4, 2048);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(td_receive(td, 500, 1), 1); /* bytes and ring: both would fire */
	assert_int_equal(td->notifies[RXQ], 0);
	assert_int_equal(early(td, RXQ), 0);
	assert_int_equal(stats(td, RXQ)->suppressed, 0); /* still held: decided at the deadline */
	td_advance(td, 5 * MS);
	assert_int_equal(td->notifies[RXQ], 0);
	assert_int_equal(stats(td, RXQ)->suppressed, 1);
	td_free(td);
}

/* ... nor one whose EVENT_IDX used_event lies ahead. */
static void test_guard_respects_used_event(void **state)
{
	struct test_dev *td = td_guard(true, 100, 0, 256, BIT_ULL(VIRTIO_RING_F_EVENT_IDX));
	struct fake_vq *q = &td->vq[TXQ];

	(void)state;
	assert_true(td->features & BIT_ULL(VIRTIO_RING_F_EVENT_IDX));
	assert_int_equal(td_coal_cmd(td, TX_SET, 64, 5000), VIRTIO_NET_OK);
	fake_vq_set_used_event(q, 0);
	td_tx(td, TXQ, 1, 500); /* first decision: no EVENT_IDX history, the driver gets it */
	assert_int_equal(td->notifies[TXQ], 1);
	fake_vq_set_used_event(q, 3); /* wants one once the 4th entry is used */
	td_tx(td, TXQ, 1, 500);
	td_tx(td, TXQ, 1, 500);
	assert_int_equal(td->notifies[TXQ], 1); /* bytes say now, the driver says not yet */
	assert_int_equal(early(td, TXQ), 1);
	td_tx(td, TXQ, 1, 500);
	assert_int_equal(td->notifies[TXQ], 2);
	assert_int_equal(early(td, TXQ), 2);
	td_free(td);
}

/* New thresholds through vnet_dev_set_stall_guard() re-check what is held at once. */
static void test_new_threshold_applies_at_once(void **state)
{
	struct test_dev *td = td_guard(true, 0, 0, 256, 0);
	struct vnet_stall_guard g = {true, 1000, 0};

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 64, 5000), VIRTIO_NET_OK);
	td_tx(td, TXQ, 3, 500);
	assert_int_equal(td->notifies[TXQ], 0);
	vnet_dev_set_stall_guard(td->dev, &g);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(stats(td, TXQ)->early_bytes, 1);
	assert_true(vnet_dev_stall_guard(td->dev)->bytes == 1000);
	td_free(td);
}

/* The byte rule leaves adaptive queues alone (their holds are short, the controller checks
 * the rate); the ring and idle rules still apply, and fixed values get the byte rule again. */
static void test_bytes_rule_not_for_adaptive_queues(void **state)
{
	struct test_dev *td = td_guard(true, 2000, 0, 256, 0);
	struct vnet_queue *q = vnet_dev_queue(td->dev, TXQ);

	(void)state;
	assert_int_equal(vnet_dev_host_adaptive(td->dev, TXQ, VNET_QUEUE_TX, true), 0);
	q->adapt.level = 3; /* as the controller would set it under bulk load */
	coal_set_params(&q->coal, coal_adapt_profile(3), COAL_SET_ADAPTIVE);
	for (unsigned i = 0; i < 4; i++)
		td_tx(td, TXQ, 1, 1000);
	assert_int_equal(td->notifies[TXQ], 0); /* 4000 bytes held, over 2000: still held */
	assert_int_equal(stats(td, TXQ)->early_bytes, 0);
	td_advance(td, coal_adapt_profile(3)->max_usecs * US);
	assert_int_equal(td->notifies[TXQ], 1); /* the level's own deadline */
	assert_int_equal(early(td, TXQ), 0);
	/* The guest's values end adaptive mode on the queue: the byte rule is back. */
	assert_int_equal(td_coal_cmd(td, TX_SET, 64, 5000), VIRTIO_NET_OK);
	assert_false(q->adapt.on);
	td_tx(td, TXQ, 1, 1000);
	td_tx(td, TXQ, 1, 1000);
	assert_int_equal(td->notifies[TXQ], 2);
	assert_int_equal(stats(td, TXQ)->early_bytes, 1);
	td_free(td);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_bytes_held_end_the_hold, td_cleanup),
		cmocka_unit_test_teardown(test_guard_off_holds_as_before, td_cleanup),
		cmocka_unit_test_teardown(test_tx_driver_idle_gets_its_completions, td_cleanup),
		cmocka_unit_test_teardown(test_rx_hold_ends_when_the_guest_stops_sending, td_cleanup),
		cmocka_unit_test_teardown(test_rx_hold_lasts_while_the_guest_sends, td_cleanup),
		cmocka_unit_test_teardown(test_rx_hold_lasts_while_packets_arrive, td_cleanup),
		cmocka_unit_test_teardown(test_paced_tx_keeps_coalescing, td_cleanup),
		cmocka_unit_test_teardown(test_paced_rx_keeps_coalescing, td_cleanup),
		cmocka_unit_test_teardown(test_paced_bursts_stop_the_tx_idle_rule, td_cleanup),
		cmocka_unit_test_teardown(test_answered_idle_notifications_stay_early, td_cleanup),
		cmocka_unit_test_teardown(test_idle_rule_returns_when_answered, td_cleanup),
		cmocka_unit_test_teardown(test_paced_sender_stops_the_rx_idle_rule, td_cleanup),
		cmocka_unit_test_teardown(test_rx_ring_nearly_empty_notifies, td_cleanup),
		cmocka_unit_test_teardown(test_packed_rx_ring_nearly_empty_notifies, td_cleanup),
		cmocka_unit_test_teardown(test_tx_descriptors_nearly_used_up_notify, td_cleanup),
		cmocka_unit_test_teardown(test_guard_respects_no_interrupt, td_cleanup),
		cmocka_unit_test_teardown(test_guard_respects_used_event, td_cleanup),
		cmocka_unit_test_teardown(test_new_threshold_applies_at_once, td_cleanup),
		cmocka_unit_test_teardown(test_bytes_rule_not_for_adaptive_queues, td_cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
