/* SPDX-License-Identifier: MIT */
/* test_switch_lanes.c - one switch port's queue pairs on two workers (queue-workers=): lanes. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "backend/switch/switch.h"
#include "switch_test_stats.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"
#include "dev/vnet_dev_lane.h"

/*
 * Port S has two queue pairs: pair 0 on worker 0 (its home: the device), pair 1 on worker 1
 * (a lane: vnet_dev_lane_create() + switch_attach_lane()). A is a plain port on worker 0, B on
 * worker 1. One thread plays both workers, as test_switch_xworker.c does; the last test runs
 * them as two threads (and under ThreadSanitizer in test_switch_lanes_tsan).
 */

#define HDR 12u
#define BUFSZ 1526u
#define NBUF 256u

static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

struct lport {
	struct test_dev *td;
	struct vnet_backend *be;
	uint8_t mac[6];
	uint64_t rx_gpa[VNET_MAX_QUEUES][NBUF]; /* by RX queue and head */
	uint64_t tx_gpa[VNET_MAX_QUEUES][NBUF]; /* by TX queue and head */
	uint64_t tx_free[VNET_MAX_QUEUES][NBUF];
	unsigned ntx_free[VNET_MAX_QUEUES];
};

static struct vnet_switch *sw;
static struct lport A, B, S;
static struct vnet_dev *lane;	     /* S's pair 1, run by worker 1 */
static struct vnet_backend *lane_be; /* its switch lane */
static bool lane_sched[VNET_MAX_QUEUES];
static unsigned wakes[2];

static void test_wake(void *ctx, unsigned worker)
{
	(void)ctx;
	__atomic_fetch_add(&wakes[worker], 1, __ATOMIC_RELAXED);
}

static const struct switch_owner_ops wake_ops = {.wake = test_wake};

/* The lane's owner: S's clock; its run queue is lane_sched[]. */
static uint64_t lane_now(void *ctx)
{
	return ((struct test_dev *)ctx)->now;
}

static void lane_notify(void *ctx, unsigned qidx)
{
	(void)ctx;
	(void)qidx;
}

static void lane_arm(void *ctx, unsigned qidx, uint64_t deadline)
{
	(void)ctx;
	(void)qidx;
	(void)deadline;
}

static bool lane_schedule(void *ctx, unsigned qidx)
{
	(void)ctx;
	lane_sched[qidx] = true;
	return true;
}

static const struct vnet_env_ops lane_env = {
	.now_ns = lane_now,
	.notify = lane_notify,
	.arm_timer = lane_arm,
	.schedule = lane_schedule,
};

static void rx_give(struct lport *p, unsigned rxq, uint64_t gpa)
{
	struct fake_buf b = {gpa, BUFSZ, true};
	int head = fake_vq_add_chain(&p->td->vq[rxq], &b, 1);

	p->rx_gpa[rxq][head] = gpa;
}

/* Port p with `pairs` pairs, RX buffers on every RX queue, TX buffers on every TX queue. */
static void lport_init(struct lport *p, uint16_t pairs, unsigned worker, uint8_t id)
{
	memset(p, 0, sizeof(*p));
	p->td = td_new(pairs, TD_BASE_FEATURES | BIT_ULL(VIRTIO_NET_F_MQ));
	if (pairs > 1) {
		uint8_t mq[4] = {VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, (uint8_t)pairs, 0};
		uint32_t used_len;

		assert_int_equal(td_ctrl(p->td, mq, sizeof(mq), NULL, 0, &used_len), VIRTIO_NET_OK);
		assert_int_equal(vnet_dev_active_pairs(p->td->dev), pairs);
	}
	p->be = switch_attach(sw, p->td->dev, "p", worker);
	assert_non_null(p->be);
	vnet_dev_attach_backend(p->td->dev, switch_port_ops(p->be), p->be);
	memcpy(p->mac, (const uint8_t[6]){0x02, 0, 0, 0, 0, id}, 6);
	for (unsigned q = 0; q < 2u * pairs; q++) {
		for (unsigned i = 0; i < NBUF / 2; i++) {
			uint64_t gpa = fake_mem_alloc(&p->td->mem, BUFSZ, 8);

			if (q % 2 == 0)
				rx_give(p, q, gpa);
			else
				p->tx_free[q][p->ntx_free[q]++] = gpa;
		}
		if (q % 2 == 0)
			fake_vq_publish(&p->td->vq[q]);
	}
}

static int setup(void **state)
{
	struct vnet_backend *runs[2];

	(void)state;
	sw = switch_create(2, &wake_ops, NULL);
	assert_non_null(sw);
	memset(wakes, 0, sizeof(wakes));
	memset(lane_sched, 0, sizeof(lane_sched));
	lport_init(&A, 1, 0, 0xa0);
	lport_init(&B, 1, 1, 0xb0);
	lport_init(&S, 2, 0, 0x50);
	lane = vnet_dev_lane_create(S.td->dev, vnet_dev_pair_mask(1), &lane_env, S.td);
	assert_non_null(lane);
	lane_be = switch_attach_lane(S.be, lane, 1);
	assert_non_null(lane_be);
	vnet_dev_lane_sync(lane, S.td->dev, lane_be);
	runs[0] = S.be;
	runs[1] = lane_be;
	assert_int_equal(switch_port_set_pairs(S.be, runs, 2), 0);
	return 0;
}

static int teardown(void **state)
{
	switch_destroy(sw); /* detaches S's lane with S */
	sw = NULL;
	vnet_dev_lane_destroy(lane, S.td->dev);
	lane = NULL;
	return td_cleanup(state);
}

/* An IPv4-looking frame of flow `flow` (the bytes the flow hash reads) carrying seq. */
static void make_frame(uint8_t *f, const uint8_t *dst, const uint8_t *src, size_t len,
		       uint32_t flow, uint32_t seq)
{
	memset(f, 0, len);
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	f[14] = 0x45;
	memcpy(f + 26, (const uint8_t[4]){10, 0, 0, 1}, 4);
	memcpy(f + 30, (const uint8_t[4]){10, 0, 0, 2}, 4);
	memcpy(f + 34, &flow, 4); /* "ports" */
	memcpy(f + 42, &seq, 4);
}

/* The pair S's device picks for flow (what the switch asks on the sender's thread). */
static unsigned pair_of(uint32_t flow)
{
	uint8_t f[64];
	struct iovec iov = {f, sizeof(f)};

	make_frame(f, S.mac, A.mac, sizeof(f), flow, 0);
	return vnet_dev_rx_pair(S.td->dev, 0, &iov, 1, 0, sizeof(f));
}

static bool tx_queue(struct lport *p, unsigned txq, const uint8_t *dst, uint32_t flow,
		     uint32_t seq)
{
	struct fake_vq *q = &p->td->vq[txq];
	struct fake_buf b;
	uint32_t id;
	int head;

	while (fake_vq_get_used(q, &id, NULL))
		p->tx_free[txq][p->ntx_free[txq]++] = p->tx_gpa[txq][id];
	if (!p->ntx_free[txq])
		return false;
	b = (struct fake_buf){p->tx_free[txq][--p->ntx_free[txq]], HDR + 64, false};
	memset(fake_mem_host(&p->td->mem, b.gpa), 0, HDR);
	make_frame((uint8_t *)fake_mem_host(&p->td->mem, b.gpa) + HDR, dst, p->mac, 64, flow, seq);
	head = fake_vq_add_chain(q, &b, 1);
	p->tx_gpa[txq][head] = b.gpa;
	return true;
}

/* Kick TX queue txq of p through the view that runs it (S's pair 1: the lane). */
static void tx_kick(struct lport *p, unsigned txq)
{
	fake_vq_publish(&p->td->vq[txq]);
	vnet_dev_kick(p == &S && txq == 3 ? lane : p->td->dev, txq);
}

/* The end of worker w's round: publish RX of the views it runs, wake the other worker. */
static void round_end(unsigned w)
{
	if (w == 0) {
		vnet_dev_rx_flush(A.td->dev);
		vnet_dev_rx_flush(S.td->dev);
	} else {
		vnet_dev_rx_flush(B.td->dev);
		vnet_dev_rx_flush(lane);
	}
	switch_worker_round_end(sw, w);
}

static void worker_rx(unsigned w)
{
	while (switch_worker_rx(sw, w))
		;
	round_end(w);
}

/* The next frame on RX queue rxq of p: its flow and seq; false if none. Buffer re-posted. */
static bool rx_next(struct lport *p, unsigned rxq, uint32_t *flow, uint32_t *seq)
{
	uint32_t id, len;
	const uint8_t *buf;

	if (!fake_vq_get_used(&p->td->vq[rxq], &id, &len))
		return false;
	assert_true(len >= HDR + 46);
	buf = fake_mem_host(&p->td->mem, p->rx_gpa[rxq][id]);
	memcpy(flow, buf + HDR + 34, 4);
	memcpy(seq, buf + HDR + 42, 4);
	rx_give(p, rxq, p->rx_gpa[rxq][id]);
	return true;
}

/* S's MAC is learnt (from its home pair), then A's frames land on the pair each flow hashes to:
 * pair 0 directly from worker 0, pair 1 only once worker 1 placed it (its lane's queue). */
static void test_frames_reach_the_pair_the_device_picks(void **state)
{
	unsigned want[2] = {0, 0}, got[2] = {0, 0};
	uint32_t flow, seq, last[2] = {0, 0};

	(void)state;
	assert_true(tx_queue(&S, 1, bcast, 0, 0)); /* S speaks (learnt as S) */
	tx_kick(&S, 1);
	round_end(0);
	worker_rx(1);
	assert_true(rx_next(&A, 0, &flow, &seq));
	assert_true(rx_next(&B, 0, &flow, &seq));
	for (uint32_t i = 0; i < 64; i++) {
		assert_true(tx_queue(&A, 1, S.mac, i, i + 1));
		want[pair_of(i)]++;
	}
	assert_true(want[0] > 0 && want[1] > 0); /* 64 flows use both pairs */
	tx_kick(&A, 1);
	round_end(0);
	while (rx_next(&S, 0, &flow, &seq)) {
		assert_int_equal(pair_of(flow), 0);
		assert_true(seq > last[0]);
		last[0] = seq;
		got[0]++;
	}
	assert_int_equal(got[0], want[0]);
	assert_false(rx_next(&S, 2, &flow, &seq)); /* not placed by worker 0 */
	assert_int_equal(wakes[1], 2);
	worker_rx(1);
	while (rx_next(&S, 2, &flow, &seq)) {
		assert_int_equal(pair_of(flow), 1);
		assert_true(seq > last[1]);
		last[1] = seq;
		got[1]++;
	}
	assert_int_equal(got[1], want[1]);
	assert_int_equal(forwarded(&A), 64);
	assert_int_equal(dropped(&A) + dropped(&S), 0);
	assert_int_equal(flooded(&A), 0); /* S's MAC is known: never flooded */
}

/* S's pair 1 sends on worker 1: to B directly, to A through the ring; learnt as S (a frame
 * from A to S's MAC is forwarded, not flooded); its flood never comes back to S's home. */
static void test_lane_sends_as_the_port(void **state)
{
	uint32_t flow, seq;

	(void)state;
	assert_true(tx_queue(&A, 1, bcast, 0, 1)); /* A is learnt */
	tx_kick(&A, 1);
	round_end(0);
	assert_true(rx_next(&S, 0, &flow, &seq) || rx_next(&S, 2, &flow, &seq) ||
		    (worker_rx(1), rx_next(&S, 2, &flow, &seq)));
	worker_rx(1);
	assert_true(tx_queue(&B, 1, bcast, 0, 1)); /* B is learnt */
	tx_kick(&B, 1);
	round_end(1);
	worker_rx(0);
	while (rx_next(&S, 0, &flow, &seq) || rx_next(&S, 2, &flow, &seq) ||
	       rx_next(&A, 0, &flow, &seq) || rx_next(&B, 0, &flow, &seq))
		;
	/* From S's pair 1 (the lane): a unicast to B and one to A, then a broadcast. */
	assert_true(tx_queue(&S, 3, B.mac, 1, 10));
	assert_true(tx_queue(&S, 3, A.mac, 1, 11));
	assert_true(tx_queue(&S, 3, bcast, 1, 12));
	tx_kick(&S, 3);
	round_end(1);
	assert_true(rx_next(&B, 0, &flow, &seq)); /* same worker: in worker 1's round */
	assert_int_equal(seq, 10);
	assert_true(rx_next(&B, 0, &flow, &seq));
	assert_int_equal(seq, 12);
	assert_false(rx_next(&A, 0, &flow, &seq)); /* not placed by worker 1 */
	worker_rx(0);
	assert_true(rx_next(&A, 0, &flow, &seq));
	assert_int_equal(seq, 11);
	assert_true(rx_next(&A, 0, &flow, &seq));
	assert_int_equal(seq, 12);
	assert_false(rx_next(&S, 0, &flow, &seq)); /* its own flood: not back to S */
	assert_false(rx_next(&S, 2, &flow, &seq));
	assert_int_equal(forwarded(&S), 2); /* the lane's counters are the port's */
	assert_int_equal(flooded(&S), 1);
	/* The FDB knows S's MAC as S: A's next frame to it is forwarded, not flooded. */
	assert_true(tx_queue(&A, 1, S.mac, 3, 20));
	tx_kick(&A, 1);
	round_end(0);
	worker_rx(1);
	assert_int_equal(flooded(&A), 1); /* only its first broadcast */
	assert_true(rx_next(&S, 2 * pair_of(3), &flow, &seq));
	assert_int_equal(seq, 20);
}

/* Frames queued at S's lane (its pair 1 has no buffers left) are dropped when S's device resets:
 * they were for the guest that is gone (the home resets it, the lane's worker parked). */
static void test_reset_drops_the_lanes_queue(void **state)
{
	uint32_t flow = 0, seq, n = 0, f, s;

	(void)state;
	assert_true(tx_queue(&S, 1, bcast, 0, 0)); /* S is learnt */
	tx_kick(&S, 1);
	round_end(0);
	worker_rx(1);
	while (rx_next(&A, 0, &f, &s) || rx_next(&B, 0, &f, &s))
		;
	while (pair_of(flow) != 1)
		flow++;
	/* 200 frames of a flow on pair 1: 128 buffers there, the rest waits in the lane's queue. */
	for (seq = 1; seq <= 200; seq++) {
		if (!tx_queue(&A, 1, S.mac, flow, seq)) {
			tx_kick(&A, 1);
			round_end(0);
			worker_rx(1);
			assert_true(tx_queue(&A, 1, S.mac, flow, seq));
		}
	}
	tx_kick(&A, 1);
	round_end(0);
	worker_rx(1);
	assert_int_equal(switch_port_queued(lane_be), 200 - NBUF / 2);
	while (rx_next(&S, 2, &f, &s))
		n++;
	assert_int_equal(n, NBUF / 2);
	vnet_dev_reset(S.td->dev);
	assert_int_equal(switch_port_queued(lane_be), 0);
}

/* ---- Two threads, one per worker: A and S's home on 0, B and S's lane on 1 ---- */

#define T_FRAMES 4000u

struct tside {
	unsigned worker;
	struct lport *me;
	unsigned got[2]; /* frames S's pairs got on this worker */
	unsigned bad;
};

static unsigned t_received; /* atomic: frames S's pairs got, both threads */
static unsigned t_sent;	    /* atomic: frames A and B sent: at most T_WINDOW more than received */

#define T_WINDOW 96u /* below S's RX buffers per pair: nothing waits for buffers long */

static void *lane_thread(void *arg)
{
	struct tside *t = arg;
	unsigned rxq = t->worker ? 2 : 0;
	uint32_t sent = 0, flow, seq;

	for (unsigned long spins = 0; spins < 50000000ul; spins++) {
		unsigned n = 0;

		if (sent == T_FRAMES &&
		    __atomic_load_n(&t_received, __ATOMIC_RELAXED) == 2 * T_FRAMES)
			break;
		switch_tick(sw, t->worker);
		while (sent < T_FRAMES &&
		       __atomic_load_n(&t_sent, __ATOMIC_RELAXED) -
				       __atomic_load_n(&t_received, __ATOMIC_RELAXED) < T_WINDOW &&
		       tx_queue(t->me, 1, S.mac, sent % 64 + 64 * t->worker, sent / 64 + 1)) {
			sent++;
			__atomic_fetch_add(&t_sent, 1, __ATOMIC_RELAXED);
		}
		tx_kick(t->me, 1);
		while (switch_worker_rx(sw, t->worker))
			;
		if (t->worker) {
			for (unsigned q = 0; q < VNET_MAX_QUEUES; q++)
				if (lane_sched[q]) {
					lane_sched[q] = false;
					vnet_dev_queue_run(lane, q);
				}
		} else {
			while (td_run_scheduled(S.td))
				;
		}
		while (td_run_scheduled(t->me->td))
			;
		round_end(t->worker);
		while (rx_next(&S, rxq, &flow, &seq)) {
			if (flow >= 128 || pair_of(flow) != t->worker)
				t->bad++;
			n++;
		}
		t->got[t->worker] += n;
		__atomic_fetch_add(&t_received, n, __ATOMIC_RELAXED);
		fake_vq_publish(&S.td->vq[rxq]);
		vnet_dev_kick(t->worker ? lane : S.td->dev, rxq);
	}
	return NULL;
}

static void test_two_threads(void **state)
{
	struct tside t[2] = {{.worker = 0, .me = &A}, {.worker = 1, .me = &B}};
	pthread_t th[2];
	uint32_t flow, seq;

	(void)state;
	t_received = t_sent = 0;
	/* S speaks first from its home: learnt. */
	assert_true(tx_queue(&S, 1, bcast, 0, 0));
	tx_kick(&S, 1);
	round_end(0);
	worker_rx(1);
	assert_true(rx_next(&A, 0, &flow, &seq));
	assert_true(rx_next(&B, 0, &flow, &seq));
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, lane_thread, &t[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(t[0].bad + t[1].bad, 0);
	assert_int_equal(t[0].got[0] + t[1].got[1], 2 * T_FRAMES);
	assert_int_equal(dropped(&A) + dropped(&B) + dropped(&S), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_frames_reach_the_pair_the_device_picks, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lane_sends_as_the_port, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reset_drops_the_lanes_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_threads, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
