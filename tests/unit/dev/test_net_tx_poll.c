/* SPDX-License-Identifier: MIT */
/* test_net_tx_poll.c - TX poll modes: a fixed window, adaptive windows and their pay, the relook. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dev/backend.h"
#include "fake_driver.h"
#include "lib/iov.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

#define F(bit) BIT_ULL(VIRTIO_NET_F_##bit)
#define RXQ 0
#define TXQ 1
#define HDR 12u
#define US 1000ull

static struct vnet_queue_stats *stats(struct test_dev *td, unsigned q)
{
	return &vnet_dev_queue(td->dev, q)->stats;
}

static bool tx_kicks_off(struct test_dev *td)
{
	return td->vq[TXQ].used->flags & VRING_USED_F_NO_NOTIFY;
}

/*
 * --poll-us: a run that found work leaves kicks off and the queue in the run queue; chains the
 * driver adds meanwhile (without a kick) go out at the next run; once the window passed with an
 * empty ring kicks are asked for again and the queue leaves the run queue.
 */
static void test_tx_poll_mode_polls_then_rearms_kicks(void **state)
{
	struct test_dev *td;

	(void)state;
	td = td_new(1, TD_BASE_FEATURES);
	vnet_dev_set_poll(td->dev, 50, VNET_POLL_BUDGET_DEFAULT);
	td_tx(td, TXQ, 3, 64);
	assert_int_equal(td->npkts, 3);
	assert_true(td->scheduled[TXQ]);
	assert_true(tx_kicks_off(td));
	assert_int_equal(stats(td, TXQ)->polls, 1);
	assert_int_equal(stats(td, TXQ)->yields, 0);
	/* Added while it polls, no kick: the next run sends it and opens a new window. */
	td->now += 30 * US;
	td_tx_queue(td, TXQ, 64, 0x5a);
	fake_vq_publish(&td->vq[TXQ]);
	assert_int_equal(td_run_scheduled(td), 1);
	assert_int_equal(td->npkts, 4);
	assert_true(td->scheduled[TXQ]);
	/* Empty, but within 50 us of the last work: still polling, kicks still off. */
	td->now += 49 * US;
	assert_int_equal(td_run_scheduled(td), 1);
	assert_true(td->scheduled[TXQ]);
	assert_true(tx_kicks_off(td));
	/* The window passed: kicks on, out of the run queue. */
	td->now += 2 * US;
	assert_int_equal(td_run_scheduled(td), 1);
	assert_false(td->scheduled[TXQ]);
	assert_false(tx_kicks_off(td));
	assert_int_equal(stats(td, TXQ)->polls, 3);
	assert_int_equal(fake_vq_used_idx(&td->vq[TXQ]), 4);
	/* A kick that finds nothing never starts polling: idle queues cost nothing. */
	vnet_dev_kick(td->dev, TXQ);
	assert_false(td->scheduled[TXQ]);
	assert_false(tx_kicks_off(td));
	td_free(td);
}

/* Poll mode off (0, the default): a run that empties the ring asks for kicks at once. */
static void test_tx_poll_mode_off_is_kick_driven(void **state)
{
	struct test_dev *td;

	(void)state;
	td = td_new(1, TD_BASE_FEATURES);
	vnet_dev_set_poll(td->dev, 50, VNET_POLL_BUDGET_DEFAULT);
	vnet_dev_set_poll(td->dev, 0, VNET_POLL_BUDGET_DEFAULT);
	td_tx(td, TXQ, 3, 64);
	assert_int_equal(td->npkts, 3);
	assert_false(td->scheduled[TXQ]);
	assert_false(tx_kicks_off(td));
	assert_int_equal(stats(td, TXQ)->polls, 0);
	td_free(td);
}

/*
 * tx_relook (what port specs set): a run that moved packets leaves kicks off and the queue in the
 * run queue; a chain the driver adds meanwhile, without a kick, goes out at that next run, which
 * looks again; the first run that finds the ring empty asks for kicks and leaves the run queue.
 * Without it (the other tests' devices) the run that drained the ring asks at once.
 */
static void test_tx_relook_once_before_kicks(void **state)
{
	struct vnet_dev_params p;
	struct test_dev *td;

	(void)state;
	td_default_params(&p, 1);
	p.tx_relook = true;
	td = td_create(&p, TD_BASE_FEATURES);
	td_start_queues(td, 256);
	td_tx(td, TXQ, 3, 64);
	assert_int_equal(td->npkts, 3);
	assert_true(td->scheduled[TXQ]);
	assert_true(tx_kicks_off(td));
	/* The driver adds one, no kick (kicks are off): the scheduled run takes it. */
	td_tx_queue(td, TXQ, 64, 3);
	fake_vq_publish(&td->vq[TXQ]);
	assert_int_equal(td_run_scheduled(td), 1);
	assert_int_equal(td->npkts, 4);
	assert_true(td->scheduled[TXQ]);
	assert_true(tx_kicks_off(td));
	/* Nothing more: that run asks for kicks and the queue leaves the run queue. */
	assert_int_equal(td_run_scheduled(td), 1);
	assert_int_equal(td->npkts, 4);
	assert_false(td->scheduled[TXQ]);
	assert_false(tx_kicks_off(td));
	assert_int_equal(stats(td, TXQ)->polls, 0);
	assert_int_equal(stats(td, TXQ)->yields, 0); /* a look more is no yield */
	/* A kick starts the next busy period. */
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->npkts, 5);
	assert_true(td->scheduled[TXQ]);
	td_free(td);
}

/* A device reset ends a poll window: the queue's next run does not poll on stale state. */
static void test_tx_poll_mode_ends_at_reset(void **state)
{
	struct test_dev *td;

	(void)state;
	td = td_new(1, TD_BASE_FEATURES);
	vnet_dev_set_poll(td->dev, 1000, VNET_POLL_BUDGET_DEFAULT);
	td_tx(td, TXQ, 1, 64);
	assert_true(td->scheduled[TXQ]);
	vnet_dev_reset(td->dev);
	assert_int_equal(vnet_dev_queue(td->dev, TXQ)->poll_until_ns, 0);
	assert_false(vnet_dev_queue(td->dev, TXQ)->polling);
	td_run_scheduled(td); /* the entry that stayed finds the queue stopped */
	assert_false(td->scheduled[TXQ]);
	td_free(td);
}

/*
 * --poll-us auto: a queue starts event-driven (no window); a kick that comes soon after it asked
 * for kicks grows its window to cover that gap, so the next time its ring empties it polls; the
 * polling of an empty ring is paid from the credit its packets brought (--poll-budget), and once
 * spent the queue asks for kicks again; a kick long after it asked halves the window, down to
 * none. Time spent polling is counted.
 */
static void test_tx_poll_auto_adapts_and_pays(void **state)
{
	struct vnet_queue *q;
	struct test_dev *td;

	(void)state;
	td = td_new(1, TD_BASE_FEATURES);
	vnet_dev_set_poll(td->dev, VNET_POLL_AUTO, 100);
	q = vnet_dev_queue(td->dev, TXQ);
	/* No window yet: the run that empties the ring asks for kicks at once. */
	td_tx(td, TXQ, 8, 64);
	assert_int_equal(td->npkts, 8);
	assert_false(td->scheduled[TXQ]);
	assert_false(tx_kicks_off(td));
	assert_int_equal(q->poll_win_ns, 0);
	/* A kick 2 us later: a window of 3 us would have caught it. */
	td->now += 2 * US;
	td_tx(td, TXQ, 8, 64);
	assert_int_equal(q->poll_win_ns, 3000);
	assert_true(td->scheduled[TXQ]); /* polls now, kicks off */
	assert_true(tx_kicks_off(td));
	/* Empty looks within the window, paid from 16 packets x 100 ns of credit. */
	td->now += 1 * US;
	assert_int_equal(td_run_scheduled(td), 1);
	assert_true(td->scheduled[TXQ]);
	assert_int_equal(stats(td, TXQ)->poll_ns, 1000);
	/* The driver adds a chain without a kick: the next look takes it (and earns credit). */
	td_tx_queue(td, TXQ, 64, 0x11);
	fake_vq_publish(&td->vq[TXQ]);
	td->now += 1 * US;
	assert_int_equal(td_run_scheduled(td), 1);
	assert_int_equal(td->npkts, 17);
	assert_true(td->scheduled[TXQ]);
	/* 2 us empty: more than the credit left (about 0.7 us): kicks on, out of the run queue. */
	td->now += 2 * US;
	assert_int_equal(td_run_scheduled(td), 1);
	assert_false(td->scheduled[TXQ]);
	assert_false(tx_kicks_off(td));
	/* A kick 100 us later: no window would have paid; it halves, then goes. */
	td->now += 100 * US;
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(q->poll_win_ns, 1500);
	td_run_scheduled(td);
	td->now += 100 * US;
	td_run_scheduled(td);
	td->now += 100 * US;
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(q->poll_win_ns, 750);
	td_run_scheduled(td);
	td->now += 100 * US;
	td_run_scheduled(td);
	td->now += 100 * US;
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(q->poll_win_ns, 0);
	assert_true(stats(td, TXQ)->poll_ns > 0);
	td_free(td);
}

/*
 * --poll-us auto, polling that does not pay: a polling queue that looks every 1 us and finds a
 * packet every 10 us (a light open load: a wake-up costs less) averages that gap, closes its
 * window and asks for kicks; the next kicks, however soon, do not open it again until
 * POLL_PROBE_WAKES (64) wake-ups have passed; then one may (a probe), and packets found close
 * together keep it open. Another poll mode starts the adaptive state afresh.
 */
static void test_tx_poll_auto_stops_on_long_gaps(void **state)
{
	struct vnet_queue *q;
	struct test_dev *td;
	unsigned wakes = 0;

	(void)state;
	td = td_new(1, TD_BASE_FEATURES);
	vnet_dev_set_poll(td->dev, VNET_POLL_AUTO, 100000); /* credit is not what stops it */
	q = vnet_dev_queue(td->dev, TXQ);
	td_tx(td, TXQ, 1, 64);
	td->now += 20 * US; /* a kick 20 us after it asked: a 30 us window */
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(q->poll_win_ns, 30000);
	assert_true(td->scheduled[TXQ]);
	/* Polling: a look every 1 us, a packet every 10 us, no kick. */
	for (int i = 0; i < 12 && q->poll_win_ns; i++) {
		for (int k = 0; k < 9; k++) {
			td->now += US;
			assert_int_equal(td_run_scheduled(td), 1);
			assert_true(td->scheduled[TXQ]);
		}
		td->now += US;
		td_tx_queue(td, TXQ, 64, (uint8_t)i);
		fake_vq_publish(&td->vq[TXQ]);
		assert_int_equal(td_run_scheduled(td), 1);
	}
	assert_int_equal(q->poll_win_ns, 0);
	assert_true(q->poll_gap_ns > 5000);
	assert_false(td->scheduled[TXQ]);
	assert_false(tx_kicks_off(td)); /* event-driven */
	/* Kicks 2 us after each ask: no window for 64 wake-ups, then a probe opens one. */
	while (!q->poll_win_ns && wakes < 100) {
		td->now += 2 * US;
		td_tx(td, TXQ, 1, 64);
		wakes++;
		if (!q->poll_win_ns)
			assert_false(td->scheduled[TXQ]); /* drained, asked for kicks */
	}
	assert_int_equal(wakes, 65);
	assert_true(td->scheduled[TXQ]); /* the probe polls */
	/* Close together now: the gap average falls and the window stays. */
	for (int i = 0; i < 16; i++) {
		td->now += 500;
		td_tx_queue(td, TXQ, 64, (uint8_t)i);
		fake_vq_publish(&td->vq[TXQ]);
		assert_int_equal(td_run_scheduled(td), 1);
		assert_true(td->scheduled[TXQ]);
	}
	assert_true(q->poll_gap_ns < 5000);
	assert_true(q->poll_win_ns > 0);
	vnet_dev_set_poll(td->dev, 50, VNET_POLL_BUDGET_DEFAULT);
	assert_int_equal(q->poll_win_ns, 0);
	assert_int_equal(q->poll_gap_ns, 0);
	assert_int_equal(q->poll_found_ns, 0);
	td_free(td);
}

/* ---- Copies between iovec arrays (iov_copy_iov()'s inline cases) ---- */

#define T(fn) cmocka_unit_test_teardown(fn, td_cleanup)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_tx_poll_mode_polls_then_rearms_kicks),
	    T(test_tx_poll_mode_off_is_kick_driven),
	    T(test_tx_relook_once_before_kicks),
	    T(test_tx_poll_mode_ends_at_reset),
	    T(test_tx_poll_auto_adapts_and_pays),
	    T(test_tx_poll_auto_stops_on_long_gaps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
