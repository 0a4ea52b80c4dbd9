/* SPDX-License-Identifier: MIT */
/* test_switch_xworker.c - switch ports on different workers: queues, floods, drops, detach, threads. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "backend/switch/switch.h"
#include "switch_test_stats.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

/*
 * Built twice: as test_switch_xworker and, with the device model, the fake driver and the
 * switch all compiled with -fsanitize=thread, as test_switch_xworker_tsan — the threaded case
 * then checks the shared FDB, the flow caches and the cross-worker queues for data races.
 */

#define RXQ 0
#define TXQ 1
#define HDR 12u
#define QSIZE 256u
#define BUFSZ 1526u
#define MAX_PORTS 4

static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

/* ---- Ports with recycled guest buffers (the fake memory is a bump allocator) ---- */

struct xport {
	struct test_dev *td;
	struct vnet_backend *be;
	unsigned worker;
	uint8_t mac[6];
	uint64_t rx_gpa[QSIZE]; /* by RX head */
	uint64_t tx_free[QSIZE]; /* TX buffers not in the ring */
	unsigned ntx_free;
	uint64_t tx_gpa[QSIZE]; /* by TX head */
};

static struct vnet_switch *sw;
static struct xport xp[MAX_PORTS];
static unsigned nxp;
static unsigned wakes[SWITCH_MAX_WORKERS];
static int wake_fd[SWITCH_MAX_WORKERS] = {-1, -1, -1, -1};

static void test_wake(void *ctx, unsigned worker)
{
	uint64_t one = 1;

	(void)ctx;
	__atomic_fetch_add(&wakes[worker], 1, __ATOMIC_RELAXED);
	if (wake_fd[worker] >= 0 && write(wake_fd[worker], &one, sizeof(one)) != sizeof(one))
		abort();
}

static const struct switch_owner_ops wake_ops = {.wake = test_wake};

static void sw_new(unsigned nworkers)
{
	sw = switch_create(nworkers, &wake_ops, NULL);
	assert_non_null(sw);
	nxp = 0;
	memset(wakes, 0, sizeof(wakes));
}

/* Post one receive buffer at gpa on p's RX ring (no publish). */
static void rx_give(struct xport *p, uint64_t gpa)
{
	struct fake_buf b = {gpa, BUFSZ, true};
	int head = fake_vq_add_chain(&p->td->vq[RXQ], &b, 1);

	p->rx_gpa[head] = gpa;
}

/* Port i on `worker` with `rx` receive buffers posted, MAC 02:00:00:00:00:b<i>. */
static struct xport *xport_add(unsigned worker, unsigned rx)
{
	struct xport *p = &xp[nxp];

	assert_true(nxp < MAX_PORTS);
	memset(p, 0, sizeof(*p));
	p->td = td_new(1, TD_BASE_FEATURES);
	p->worker = worker;
	p->be = switch_attach(sw, p->td->dev, "x", worker);
	assert_non_null(p->be);
	vnet_dev_attach_backend(p->td->dev, switch_port_ops(p->be), p->be);
	memcpy(p->mac, (const uint8_t[6]){0x02, 0, 0, 0, 0, (uint8_t)(0xb0 + nxp)}, 6);
	for (unsigned i = 0; i < QSIZE; i++) {
		uint64_t gpa = fake_mem_alloc(&p->td->mem, BUFSZ, 8);

		if (i < rx)
			rx_give(p, gpa);
		p->tx_free[p->ntx_free++] = fake_mem_alloc(&p->td->mem, BUFSZ, 8);
	}
	fake_vq_publish(&p->td->vq[RXQ]);
	nxp++;
	return p;
}

static int teardown(void **state)
{
	switch_destroy(sw);
	sw = NULL;
	nxp = 0;
	return td_cleanup(state);
}

/* Frame bytes: destination, source, ethertype 0x88b5, the sequence number, then a pattern. */
static void make_frame(uint8_t *f, const uint8_t *dst, const uint8_t *src, size_t len,
		       uint32_t seq)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = 0x88;
	f[13] = 0xb5;
	memcpy(f + 14, &seq, 4);
	for (size_t i = 18; i < len; i++)
		f[i] = (uint8_t)(seq * 13 + i * 7 + src[5]);
}

/* Queue one frame on p's TX ring (a recycled buffer); false if none is free. No kick. */
static bool tx_queue(struct xport *p, const uint8_t *dst, size_t len, uint32_t seq)
{
	struct fake_vq *q = &p->td->vq[TXQ];
	uint32_t id;
	struct fake_buf b;
	uint8_t *buf;
	int head;

	while (fake_vq_get_used(q, &id, NULL))
		p->tx_free[p->ntx_free++] = p->tx_gpa[id];
	if (!p->ntx_free)
		return false;
	b = (struct fake_buf){p->tx_free[--p->ntx_free], (uint32_t)(HDR + len), false};
	buf = fake_mem_host(&p->td->mem, b.gpa);
	memset(buf, 0, HDR);
	make_frame(buf + HDR, dst, p->mac, len, seq);
	head = fake_vq_add_chain(q, &b, 1);
	p->tx_gpa[head] = b.gpa;
	return true;
}

static void tx_kick(struct xport *p)
{
	fake_vq_publish(&p->td->vq[TXQ]);
	vnet_dev_kick(p->td->dev, TXQ);
}

/* The end of worker w's round: run what its devices scheduled, publish RX, wake peers. */
static void round_end(unsigned w)
{
	for (unsigned i = 0; i < nxp; i++)
		if (xp[i].worker == w) {
			while (td_run_scheduled(xp[i].td))
				;
			vnet_dev_rx_flush(xp[i].td->dev);
		}
	switch_worker_round_end(sw, w);
}

/* Worker w woke up: place everything queued for it (budget by budget), then end its round. */
static void worker_rx(unsigned w)
{
	while (switch_worker_rx(sw, w))
		;
	round_end(w);
}

/*
 * The next frame p's guest got: checks the header (zero but num_buffers) and that it is the
 * frame make_frame() builds for (dst, or the broadcast address, src, len, seq); returns seq,
 * -1 if nothing came, -2 if it was not that frame.
 * The buffer goes back on the ring (published at the next rx_repost()).
 */
static long rx_next(struct xport *p, const uint8_t *dst, const uint8_t *src, size_t *len_out)
{
	static const uint8_t zero[HDR - 2];
	uint8_t want[BUFSZ];
	uint32_t id, len, seq;
	const uint8_t *buf;

	if (!fake_vq_get_used(&p->td->vq[RXQ], &id, &len))
		return -1;
	if (id >= QSIZE || len < HDR + 18 || len > BUFSZ)
		return -2;
	buf = fake_mem_host(&p->td->mem, p->rx_gpa[id]);
	memcpy(&seq, buf + HDR + 14, 4);
	make_frame(want, buf[HDR] == 0xff ? bcast : dst, src, len - HDR, seq);
	if (memcmp(buf, zero, sizeof(zero)) || memcmp(buf + HDR, want, len - HDR))
		return -2;
	if (len_out)
		*len_out = len - HDR;
	rx_give(p, p->rx_gpa[id]);
	return seq;
}

static void rx_repost(struct xport *p)
{
	fake_vq_publish(&p->td->vq[RXQ]);
	vnet_dev_kick(p->td->dev, RXQ);
}

/* ---- One thread playing two workers ---- */

/* (1) A frame for a port of another worker waits for that worker, which one wake-up calls. */
static void test_unicast_goes_through_the_receivers_worker(void **state)
{
	struct xport *a, *b;
	size_t len;

	(void)state;
	sw_new(2);
	a = xport_add(0, 16);
	b = xport_add(1, 16);
	/* B speaks first (a flood to worker 0: A learns nothing, the FDB learns B). */
	assert_true(tx_queue(b, bcast, 60, 7));
	tx_kick(b);
	round_end(1);
	assert_int_equal(wakes[0], 1);
	assert_int_equal(rx_next(a, bcast, b->mac, NULL), -1); /* not placed by B's thread */
	worker_rx(0);
	assert_int_equal(rx_next(a, bcast, b->mac, NULL), 7);
	/* A to B: known, one port, across. */
	assert_true(tx_queue(a, b->mac, 1514, 1));
	tx_kick(a);
	assert_int_equal(forwarded(a), 1);
	assert_int_equal(switch_port_crossed(a->be), 1);
	assert_int_equal(rx_next(b, b->mac, a->mac, NULL), -1);
	round_end(0);
	assert_int_equal(wakes[1], 1);
	worker_rx(1);
	assert_int_equal(rx_next(b, b->mac, a->mac, &len), 1);
	assert_int_equal(len, 1514);
	assert_int_equal(flooded(b), 1);
	assert_int_equal(dropped(a) + dropped(b), 0);
}

/* (2) A flood reaches the sender's own worker at once and each other worker as one copy. */
static void test_flood_over_three_workers(void **state)
{
	struct xport *a, *b, *c, *d;

	(void)state;
	sw_new(3);
	a = xport_add(0, 16);
	b = xport_add(1, 16);
	c = xport_add(1, 16);
	d = xport_add(0, 16);
	for (uint32_t i = 0; i < 5; i++)
		assert_true(tx_queue(a, bcast, 100 + i, i));
	tx_kick(a);
	round_end(0);
	assert_int_equal(flooded(a), 5);
	assert_int_equal(switch_port_crossed(a->be), 5); /* one copy per frame for worker 1 */
	assert_int_equal(wakes[1], 1);
	assert_int_equal(wakes[2], 0); /* worker 2 has no switch port */
	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(rx_next(d, bcast, a->mac, NULL), i);
	assert_int_equal(rx_next(b, bcast, a->mac, NULL), -1);
	worker_rx(1);
	for (uint32_t i = 0; i < 5; i++) {
		assert_int_equal(rx_next(b, bcast, a->mac, NULL), i);
		assert_int_equal(rx_next(c, bcast, a->mac, NULL), i);
	}
	assert_int_equal(rx_next(a, bcast, a->mac, NULL), -1); /* never back to the sender */
	assert_int_equal(rx_next(b, bcast, a->mac, NULL), -1);
}

/* Storm control across workers: floods over the sender's flood-rate reach no worker. */
static void test_flood_rate_over_two_workers(void **state)
{
	struct switch_port_counters cnt;
	struct xport *a, *b, *d;

	(void)state;
	sw_new(2);
	a = xport_add(0, 16);
	b = xport_add(1, 16);
	d = xport_add(0, 16);
	switch_port_set_flood_rate(a->be, 3);
	vnet_dev_attach_backend(a->td->dev, switch_port_ops(a->be), a->be);
	for (uint32_t i = 0; i < 8; i++)
		assert_true(tx_queue(a, bcast, 100 + i, i));
	tx_kick(a);
	round_end(0);
	switch_port_counters(a->be, &cnt);
	assert_int_equal(flooded(a), 3);
	assert_int_equal(cnt.storm_dropped, 5);
	assert_int_equal(switch_port_crossed(a->be), 3);
	worker_rx(1);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(rx_next(d, bcast, a->mac, NULL), i);
		assert_int_equal(rx_next(b, bcast, a->mac, NULL), i);
	}
	assert_int_equal(rx_next(d, bcast, a->mac, NULL), -1);
	assert_int_equal(rx_next(b, bcast, a->mac, NULL), -1);
}

/*
 * (3) A full cross-worker queue back-pressures the sender: its TX stops with the chains left in
 * its ring (nothing dropped), the receiver wakes the sender's worker once it gave bytes back,
 * and the TX resumes there; every frame arrives, in order.
 */
static void test_full_queue_backpressures_order_kept(void **state)
{
	struct xport *a, *b;
	uint32_t seq = 0, next = 0;
	unsigned got = 0;
	long s;

	(void)state;
	sw_new(2);
	a = xport_add(0, 0);
	b = xport_add(1, QSIZE);
	/* B is learned (its flood reaches A, who has no buffers: queued at A). */
	assert_true(tx_queue(b, bcast, 60, 0));
	tx_kick(b);
	round_end(1);
	/* Worker 1 does not run: frames of 1514 bytes fill its queue from A. */
	for (unsigned round = 0; round < 12; round++) {
		for (unsigned i = 0; i < 100 && tx_queue(a, b->mac, 1514, seq); i++)
			seq++;
		tx_kick(a);
		while (td_run_scheduled(a->td))
			;
	}
	assert_true(seq > 400);
	assert_true(forwarded(a) < seq); /* the rest waits in A's TX ring */
	assert_int_equal(dropped(a), 0);
	assert_int_equal(switch_port_crossed(a->be), forwarded(a));
	/* The receiver takes everything, budget by budget, and wakes worker 0, which resumes. */
	for (int tries = 0; tries < 40 && got < seq; tries++) {
		unsigned w0 = wakes[0];

		worker_rx(1);
		while ((s = rx_next(b, b->mac, a->mac, NULL)) >= 0) {
			assert_int_equal((uint32_t)s, next);
			next = (uint32_t)s + 1;
			got++;
		}
		assert_int_equal(s, -1);
		rx_repost(b);
		if (wakes[0] != w0)
			worker_rx(0);
	}
	assert_int_equal(got, seq);
	assert_int_equal(forwarded(a), seq);
	assert_int_equal(dropped(a), 0);
	assert_int_equal(dropped(b), 0);
	/* Room again. */
	assert_true(tx_queue(a, b->mac, 60, 5000));
	tx_kick(a);
	round_end(0);
	worker_rx(1);
	assert_int_equal(rx_next(b, b->mac, a->mac, NULL), 5000);
}

/* (4) Frames queued for a port that is detached (its slot then reused) go to nobody. */
static void test_detach_with_frames_queued(void **state)
{
	struct xport *a, *b, *c;

	(void)state;
	sw_new(2);
	a = xport_add(0, 16);
	b = xport_add(1, 16);
	assert_true(tx_queue(b, bcast, 60, 0));
	tx_kick(b);
	round_end(1);
	worker_rx(0);
	assert_int_equal(rx_next(a, bcast, b->mac, NULL), 0);
	for (uint32_t i = 1; i <= 3; i++)
		assert_true(tx_queue(a, b->mac, 60, i));
	tx_kick(a);
	round_end(0);
	assert_int_equal(switch_port_crossed(a->be), 3);
	/* Workers parked: B leaves, C takes its slot on the same worker. */
	switch_detach(b->be);
	vnet_dev_attach_backend(b->td->dev, NULL, NULL);
	b->be = NULL;
	c = xport_add(1, 16);
	worker_rx(1);
	assert_int_equal(rx_next(c, b->mac, a->mac, NULL), -1);
	/* B's MAC is forgotten: A's next frame to it floods, and C gets that one. */
	assert_true(tx_queue(a, b->mac, 60, 4));
	tx_kick(a);
	round_end(0);
	worker_rx(1);
	assert_int_equal(rx_next(c, b->mac, a->mac, NULL), 4);
	assert_int_equal(flooded(a), 1);
}

/* (5) The receiving worker places at most one budget per call: the rest waits for the next. */
static void test_receiver_budget(void **state)
{
	struct xport *a, *b;
	unsigned calls = 0;

	(void)state;
	sw_new(2);
	a = xport_add(0, 0);
	b = xport_add(1, 0); /* no buffers: frames go to B's own queue (cheap) */
	assert_true(tx_queue(b, bcast, 60, 0));
	tx_kick(b);
	round_end(1);
	for (unsigned round = 0; round < 3; round++) {
		for (unsigned i = 0; i < 100; i++)
			assert_true(tx_queue(a, b->mac, 60, round * 100 + i));
		tx_kick(a);
		while (td_run_scheduled(a->td))
			;
	}
	round_end(0);
	while (switch_worker_rx(sw, 1))
		calls++;
	assert_int_equal(calls, 300 / VNET_BUDGET_PACKETS);
	assert_int_equal(switch_port_queued(b->be), SWITCH_QUEUE_PACKETS);
	assert_int_equal(dropped(b), 300 - SWITCH_QUEUE_PACKETS); /* B's own queue limit */
}

/* ---- Two threads, one per worker, forwarding to each other at the same time ---- */

#define T_FRAMES 20000u
#define T_WINDOW 128u /* frames a sender may have in flight: no queue ever fills */

struct tside {
	struct xport *me, *peer;
	unsigned worker;
	uint32_t received; /* atomic: frames my guest got (the peer's window) */
	unsigned bad, out_of_order, stalls, bcasts;
};

static struct tside side[2];

static void *worker_thread(void *arg)
{
	struct tside *s = arg, *o = &side[s == &side[0]];
	struct pollfd pfd = {.fd = wake_fd[s->worker], .events = POLLIN};
	uint32_t sent = 0, next = 0;
	unsigned quiet = 0; /* seconds in a row without a wake-up while frames are due */

	for (;;) {
		uint32_t mine = __atomic_load_n(&s->received, __ATOMIC_RELAXED);
		uint32_t theirs = __atomic_load_n(&o->received, __ATOMIC_ACQUIRE);
		uint64_t v;
		bool queued = false;
		long seq;

		if (sent == T_FRAMES && mine == T_FRAMES)
			break;
		switch_tick(sw, s->worker);
		/* Send a burst within the window: every 16th frame a broadcast (a flood). */
		while (sent < T_FRAMES && sent - theirs < T_WINDOW &&
		       tx_queue(s->me, sent % 16 ? s->peer->mac : bcast, 60 + sent % 1400, sent)) {
			sent++;
			queued = true;
		}
		if (queued)
			tx_kick(s->me);
		/* Sleep until woken (a short nap while our window is shut), then place what the
		 * peer queued: only a wake-up makes this thread look. */
		if (poll(&pfd, 1, queued ? 0 : sent < T_FRAMES ? 1 : 1000) == 0 && sent == T_FRAMES) {
			if (++quiet >= 5) {
				s->stalls++; /* five seconds: a wake-up was lost */
				break;
			}
		} else {
			quiet = 0;
		}
		if (read(wake_fd[s->worker], &v, sizeof(v)) == sizeof(v))
			while (switch_worker_rx(sw, s->worker))
				;
		while (td_run_scheduled(s->me->td))
			;
		vnet_dev_rx_flush(s->me->td->dev);
		switch_worker_round_end(sw, s->worker);
		while ((seq = rx_next(s->me, s->me->mac, s->peer->mac, NULL)) != -1) {
			if (seq == -2) {
				s->bad++;
				continue;
			}
			if ((uint32_t)seq != next)
				s->out_of_order++;
			next = (uint32_t)seq + 1;
			__atomic_store_n(&s->received, next, __ATOMIC_RELEASE);
		}
		rx_repost(s->me);
	}
	return NULL;
}

/* (6) Real threads: 20000 frames each way at once, unicast and floods, all in order, exact. */
static void test_threads_forward_to_each_other(void **state)
{
	pthread_t t[2];

	(void)state;
	sw_new(2);
	for (unsigned i = 0; i < 2; i++) {
		wake_fd[i] = eventfd(0, EFD_NONBLOCK);
		assert_true(wake_fd[i] >= 0);
	}
	xport_add(0, QSIZE);
	xport_add(1, QSIZE);
	memset(side, 0, sizeof(side));
	side[0] = (struct tside){.me = &xp[0], .peer = &xp[1], .worker = 0};
	side[1] = (struct tside){.me = &xp[1], .peer = &xp[0], .worker = 1};
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker_thread, &side[i]), 0);
	/* The statistics read the switch's counters meanwhile, lock-free (TSan: no race). */
	for (unsigned k = 0;
	     k < 1000000 && __atomic_load_n(&side[0].received, __ATOMIC_ACQUIRE) < T_FRAMES / 2;
	     k++) {
		struct switch_port_counters c;

		switch_port_counters(xp[0].be, &c);
		switch_port_counters(xp[1].be, &c);
		assert_true(c.macs <= 1);
		sched_yield();
	}
	for (unsigned i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (unsigned i = 0; i < 2; i++) {
		close(wake_fd[i]);
		wake_fd[i] = -1;
		assert_int_equal(side[i].bad, 0);
		assert_int_equal(side[i].out_of_order, 0);
		assert_int_equal(side[i].stalls, 0);
		assert_int_equal(side[i].received, T_FRAMES);
		assert_int_equal(dropped(&xp[i]), 0);
		assert_int_equal(forwarded(&xp[i]) + flooded(&xp[i]), T_FRAMES);
		assert_int_equal(switch_port_crossed(xp[i].be), T_FRAMES);
		/* Floods: the broadcasts, and what went out before the peer's MAC was learned. */
		assert_true(flooded(&xp[i]) <= T_FRAMES / 16 + T_WINDOW + 1);
	}
}

/*
 * (7) With several workers too, a port on worker 1 teaching the FDB a new MAC before each
 * frame of a pair on worker 0 leaves the pair's flow caches valid (source and destination:
 * each is checked against its own FDB set's sequence, not one generation of the table).
 */
static void test_new_macs_leave_other_workers_caches_valid(void **state)
{
	struct xport *a, *b, *c, *d;
	struct switch_port_counters ca, cc;
	const unsigned n = 100;
	uint64_t misses;

	(void)state;
	sw_new(2);
	a = xport_add(0, 16);
	b = xport_add(0, QSIZE);
	c = xport_add(1, 0);
	d = xport_add(1, 0);
	switch_port_set_limits(c->be, SWITCH_FDB_SIZE, 0);
	for (unsigned i = 0; i < nxp; i++) { /* everyone learnt */
		assert_true(tx_queue(&xp[i], bcast, 60, i));
		tx_kick(&xp[i]);
		round_end(xp[i].worker);
	}
	worker_rx(0);
	worker_rx(1);
	while (rx_next(a, bcast, b->mac, NULL) != -1) /* the broadcasts: taken, whoever sent them */
		;
	while (rx_next(b, bcast, a->mac, NULL) != -1)
		;
	assert_true(tx_queue(a, b->mac, 60, 1000));
	tx_kick(a);
	round_end(0);
	switch_port_counters(a->be, &ca);
	misses = ca.cache_misses;
	for (unsigned i = 0; i < n; i++) {
		c->mac[4] = (uint8_t)(i >> 8);
		c->mac[5] = (uint8_t)i;
		c->mac[3] = 0x5e;
		assert_true(tx_queue(c, d->mac, 60, i)); /* D has no buffers: queued or dropped */
		tx_kick(c);
		round_end(1);
		assert_true(tx_queue(a, b->mac, 60, 1001 + i));
		tx_kick(a);
		round_end(0);
	}
	switch_port_counters(a->be, &ca);
	switch_port_counters(c->be, &cc);
	assert_int_equal(cc.macs, n + 1);
	assert_int_equal(forwarded(a), n + 1);
	assert_int_equal(switch_port_crossed(c->be), 1); /* its broadcast only */
	/* Before: two misses (source and destination) after each of C's n MACs. */
	assert_true(ca.cache_misses - misses <= 10);
	for (unsigned i = 0; i <= n; i++)
		assert_int_equal(rx_next(b, b->mac, a->mac, NULL), 1000 + i);
}

#define T(fn) cmocka_unit_test_teardown(fn, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_unicast_goes_through_the_receivers_worker),
		T(test_flood_over_three_workers),
		T(test_full_queue_backpressures_order_kept),
		T(test_detach_with_frames_queued),
		T(test_receiver_budget),
		T(test_threads_forward_to_each_other),
		T(test_new_macs_leave_other_workers_caches_valid),
		T(test_flood_rate_over_two_workers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
