/* SPDX-License-Identifier: MIT */
/* test_switch_burst.c - switch backend: a kick's frames sent as one burst keep every receiver's order. */
#include "switch_fixture.h"

#include <stdlib.h>
#include <string.h>

/*
 * The device hands a burst-capable backend (the switch's plain ops table) the one-buffer chains
 * of a batch together (net_tx.c tx_burst_take()), and the switch gives each run of frames for one
 * port to that port's guest in one vnet_dev_receive_burst(). These tests queue many frames and
 * kick once, so that every frame goes through that path, and check what each guest got, in which
 * order, and that the sender's chains complete in the order they were made available.
 */

static struct vnet_queue_stats *tx_stats(const struct port *p)
{
	return &vnet_dev_queue(p->td->dev, TXQ)->stats;
}

/* Queue one frame on p's TX ring (one descriptor; its header's flags byte `flags`): its head. */
static int tx_queue_flags(struct port *p, const uint8_t *dst, size_t len, unsigned seed,
			  uint8_t flags)
{
	struct test_dev *td = p->td;
	struct fake_buf b = {fake_mem_alloc(&td->mem, HDR + len, 8), (uint32_t)(HDR + len), false};
	uint8_t *host = fake_mem_host(&td->mem, b.gpa);

	tx_header(host);
	host[0] = flags;
	memcpy(host + HDR, make_frame(dst, p->mac, len, seed), len);
	return fake_vq_add_chain(&td->vq[TXQ], &b, 1);
}

/* Every chain p made available (heads[0..n)) came back used, in that order, with length 0. */
static void expect_tx_used_in_order(struct port *p, const int *heads, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t id, len;

		assert_true(fake_vq_get_used(&p->td->vq[TXQ], &id, &len));
		assert_int_equal(id, heads[i]);
		assert_int_equal(len, 0);
	}
	assert_false(fake_vq_get_used(&p->td->vq[TXQ], NULL, NULL));
}

/* Queue one frame on p's TX ring in two descriptors (header + 20 bytes, the rest): its head. */
static int tx_queue_two(struct port *p, const uint8_t *dst, size_t len, unsigned seed)
{
	struct test_dev *td = p->td;
	struct fake_buf b[2];
	uint8_t *h0, *h1;

	b[0] = (struct fake_buf){fake_mem_alloc(&td->mem, HDR + 20, 8), HDR + 20, false};
	b[1] = (struct fake_buf){fake_mem_alloc(&td->mem, len - 20, 8), (uint32_t)(len - 20), false};
	h0 = fake_mem_host(&td->mem, b[0].gpa);
	h1 = fake_mem_host(&td->mem, b[1].gpa);
	tx_header(h0);
	make_frame(dst, p->mac, len, seed);
	memcpy(h0 + HDR, frame_buf, 20);
	memcpy(h1, frame_buf + 20, len - 20);
	return fake_vq_add_chain(&td->vq[TXQ], b, 2);
}

/* Three ports, each learned (it sent once), each with 32 RX buffers. */
static void three_ports_learned(void)
{
	sw_up(3, 32);
	for (unsigned i = 0; i < 3; i++) {
		tx_send(&ports[i], mac_unknown, 60, 900 + i); /* flooded to the other two */
		for (unsigned k = 0; k < 3; k++)
			if (k != i)
				expect_from(&ports[k], &ports[i], mac_unknown, 60, 900 + i);
	}
}

enum dest { TO_B, TO_C, TO_ALL, TO_UNKNOWN, TO_SELF, TO_B_TWO_DESCS };

static const uint8_t *dest_mac(enum dest d)
{
	switch (d) {
	case TO_B:
	case TO_B_TWO_DESCS:
		return ports[1].mac;
	case TO_C:
		return ports[2].mac;
	case TO_ALL:
		return mac_bcast;
	case TO_UNKNOWN:
		return mac_unknown;
	case TO_SELF:
		break;
	}
	return ports[0].mac;
}

/*
 * One kick, frames for B and C interleaved with a broadcast, an unknown destination, a frame
 * to the sender's own MAC and a chain of two descriptors (not a burst frame): each guest gets
 * exactly its frames, in the order sent; the sender's chains complete in order.
 */
static void test_interleaved_destinations_keep_order(void **state)
{
	static const enum dest dests[] = {TO_B,   TO_B, TO_C, TO_B,	  TO_ALL,	  TO_C,
					  TO_C,   TO_UNKNOWN, TO_B, TO_SELF, TO_B, TO_B_TWO_DESCS,
					  TO_B,   TO_C, TO_B,	  TO_B};
	const unsigned n = sizeof(dests) / sizeof(dests[0]);
	struct port *a = &ports[0], *b, *c;
	int heads[sizeof(dests) / sizeof(dests[0])];
	uint64_t fwd, fl, sent;

	(void)state;
	three_ports_learned();
	b = &ports[1];
	c = &ports[2];
	fwd = forwarded(a);
	fl = flooded(a);
	sent = tx_stats(a)->packets;
	while (fake_vq_get_used(&a->td->vq[TXQ], NULL, NULL))
		; /* what three_ports_learned() sent */
	for (unsigned i = 0; i < n; i++)
		heads[i] = dests[i] == TO_B_TWO_DESCS ? tx_queue_two(a, dest_mac(dests[i]), 100, i)
						      : tx_queue_flags(a, dest_mac(dests[i]), 60 + i, i, 0);
	tx_kick(a);
	for (unsigned i = 0; i < n; i++) {
		size_t len = dests[i] == TO_B_TWO_DESCS ? 100 : 60 + i;
		bool to_b = dests[i] == TO_B || dests[i] == TO_B_TWO_DESCS || dests[i] == TO_ALL ||
			    dests[i] == TO_UNKNOWN;
		bool to_c = dests[i] == TO_C || dests[i] == TO_ALL || dests[i] == TO_UNKNOWN;

		if (to_b)
			expect_from(b, a, dest_mac(dests[i]), len, i);
		if (to_c)
			expect_from(c, a, dest_mac(dests[i]), len, i);
	}
	expect_nothing(a);
	expect_nothing(b);
	expect_nothing(c);
	/* 13 known unicasts to another port (the one to A itself is filtered), 2 floods. */
	assert_int_equal(forwarded(a) - fwd, 13);
	assert_int_equal(flooded(a) - fl, 2);
	assert_int_equal(dropped(a), 0);
	assert_int_equal(tx_stats(a)->packets - sent, n);
	expect_tx_used_in_order(a, heads, n);
}

/*
 * A burst larger than the receiver's buffers: what fits is delivered, the rest is queued in
 * order, and goes out before anything sent later, once the guest posts buffers.
 */
static void test_receiver_runs_dry_inside_a_burst(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	two_ports_b_learned();
	rx_post(b, 3, 1526);
	for (unsigned i = 0; i < 20; i++)
		(void)tx_queue_flags(a, b->mac, 60, i, 0);
	tx_kick(a);
	for (unsigned i = 0; i < 3; i++)
		expect_from(b, a, b->mac, 60, i);
	expect_nothing(b);
	assert_int_equal(switch_port_queued(b->be), 17);
	for (unsigned i = 20; i < 25; i++)
		(void)tx_queue_flags(a, b->mac, 60, i, 0);
	tx_kick(a); /* behind the queue, not before it */
	assert_int_equal(switch_port_queued(b->be), 22);
	rx_post(b, 64, 1526);
	assert_int_equal(switch_port_queued(b->be), 0);
	for (unsigned i = 3; i < 25; i++)
		expect_from(b, a, b->mac, 60, i);
	expect_nothing(b);
	assert_int_equal(forwarded(a), 25);
	assert_int_equal(dropped(b), 0);
}

/*
 * A frame asking for a checksum (the switch offers none) in the middle of a burst is dropped by
 * the device and counted; the frames around it arrive in order, and every chain, the dropped
 * one included, completes in the order the driver made them available.
 */
static void test_offload_frame_inside_a_burst(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];
	int heads[12];

	(void)state;
	two_ports_b_learned();
	rx_post(b, 16, 1526);
	while (fake_vq_get_used(&a->td->vq[TXQ], NULL, NULL))
		; /* nothing sent yet: A only received */
	for (unsigned i = 0; i < 12; i++)
		heads[i] = tx_queue_flags(a, b->mac, 60, i, i == 5 || i == 6 ? VIRTIO_NET_HDR_F_NEEDS_CSUM
									     : 0);
	tx_kick(a);
	for (unsigned i = 0; i < 12; i++)
		if (i != 5 && i != 6)
			expect_from(b, a, b->mac, 60, i);
	expect_nothing(b);
	assert_int_equal(tx_stats(a)->dropped, 2);
	expect_tx_used_in_order(a, heads, 12);
}

/*
 * A frame too short for an Ethernet header, inside a burst: dropped by the switch and counted;
 * the rest in order.
 */
static void test_runt_inside_a_burst(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	two_ports_b_learned();
	rx_post(b, 16, 1526);
	for (unsigned i = 0; i < 8; i++)
		(void)tx_queue_flags(a, b->mac, i == 3 ? 10 : 60, i, 0);
	tx_kick(a);
	for (unsigned i = 0; i < 8; i++)
		if (i != 3)
			expect_from(b, a, b->mac, 60, i);
	expect_nothing(b);
	assert_int_equal(dropped(a), 1);
	assert_int_equal(forwarded(a), 7);
}

/*
 * Floods inside a burst go in runs, each to every other port in one call: broadcasts and unknown
 * destinations mixed with unicast to B; B's guest runs dry within the first kick (the rest of
 * its frames queue), so in the second kick the floods go one by one behind B's queue. Each
 * guest gets its frames in the order sent; the counters as one by one.
 */
static void test_flood_runs_in_a_burst(void **state)
{
	static const enum dest dests[] = {TO_ALL,	  TO_ALL, TO_UNKNOWN, TO_ALL, TO_B, TO_B,
					  TO_UNKNOWN, TO_ALL, TO_ALL,	  TO_C,	  TO_ALL};
	const unsigned n = sizeof(dests) / sizeof(dests[0]);
	struct port *a = &ports[0], *b, *c;
	unsigned to_b = 0, to_c = 0;
	uint64_t fwd, fl;

	(void)state;
	three_ports_learned();
	b = &ports[1];
	c = &ports[2];
	fwd = forwarded(a);
	fl = flooded(a);
	send_many(a, b->mac, 60, 500, 24); /* B keeps them: 6 of its 32 buffers are left */
	fwd += 24;
	for (unsigned round = 0; round < 2; round++) {
		for (unsigned i = 0; i < n; i++)
			(void)tx_queue_flags(a, dest_mac(dests[i]), 60 + i, 100 * round + i, 0);
		tx_kick(a);
	}
	for (unsigned k = 0; k < 2 * n; k++) {
		enum dest d = dests[k % n];

		to_b += d != TO_C;
		to_c += d != TO_B;
	}
	/* What did not fit in B's 6 buffers waits in its queue, in order. */
	assert_int_equal(switch_port_queued(b->be), to_b - 6);
	rx_post(b, 64, 1526);
	for (unsigned k = 0; k < 24; k++)
		expect_from(b, a, b->mac, 60, 500 + k);
	for (unsigned k = 0; k < 2 * n; k++) {
		enum dest d = dests[k % n];
		unsigned seed = 100 * (k / n) + k % n;

		if (d != TO_C)
			expect_from(b, a, dest_mac(d), 60 + k % n, seed);
		if (d != TO_B)
			expect_from(c, a, dest_mac(d), 60 + k % n, seed);
	}
	expect_nothing(a);
	expect_nothing(b);
	expect_nothing(c);
	assert_int_equal(to_c, 18);
	assert_int_equal(forwarded(a) - fwd, 6);
	assert_int_equal(flooded(a) - fl, 16);
	assert_int_equal(dropped(a) + dropped(b) + dropped(c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_interleaved_destinations_keep_order),
	    T(test_receiver_runs_dry_inside_a_burst),
	    T(test_offload_frame_inside_a_burst),
	    T(test_runt_inside_a_burst),
	    T(test_flood_runs_in_a_burst),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
