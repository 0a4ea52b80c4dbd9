/* SPDX-License-Identifier: MIT */
/* test_switch_delivery.c - switch backend: the receiver's queue, sizes, descriptor layouts, exact bytes. */
#include "switch_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- A receiver without buffers ---- */

/* (7a) Frames wait in order while B has no buffers and go out as buffers come. */
static void test_no_rx_buffers_queues_in_order(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	two_ports_b_learned();
	send_many(a, b->mac, 60, 0, 10);
	assert_int_equal(switch_port_queued(b->be), 10);
	expect_nothing(b);
	assert_int_equal(forwarded(a), 10);
	rx_post(b, 4, 1526); /* the kick resumes the switch port */
	assert_int_equal(switch_port_queued(b->be), 6);
	for (unsigned i = 0; i < 4; i++)
		expect_from(b, a, b->mac, 60, i);
	expect_nothing(b);
	tx_send(a, b->mac, 60, 10); /* queues behind the rest, not before */
	assert_int_equal(switch_port_queued(b->be), 7);
	expect_nothing(b);
	/* Buffers posted, their kick not seen yet: the next frame still goes after the queue. */
	rx_post_kick(b, 16, 1526, false);
	tx_send(a, b->mac, 60, 11);
	assert_int_equal(switch_port_queued(b->be), 0);
	for (unsigned i = 4; i <= 11; i++)
		expect_from(b, a, b->mac, 60, i);
	expect_nothing(b);
	vnet_dev_kick(b->td->dev, RXQ); /* the late kick: nothing left to resume */
	pump();
	expect_nothing(b);
	tx_send(a, b->mac, 60, 12); /* buffers left: straight through */
	assert_int_equal(switch_port_queued(b->be), 0);
	expect_from(b, a, b->mac, 60, 12);
	assert_int_equal(dropped(b), 0);
	assert_int_equal(dropped(a), 0);
}

/*
 * (7a') Frames queued for a guest that has no buffers are dropped when its device resets (the
 * driver's reset, or its frontend gone): the next guest on the port never sees them.
 */
static void test_device_reset_drops_queued_frames(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	two_ports_b_learned();
	send_many(a, b->mac, 60, 0, 5);
	assert_int_equal(switch_port_queued(b->be), 5);
	td_recycle(b->td, b->td->features); /* device reset, a new driver negotiates again */
	assert_int_equal(switch_port_queued(b->be), 0);
	td_start_queues(b->td, QSIZE);
	rx_post(b, 8, 1526);
	expect_nothing(b);
	tx_send(a, b->mac, 60, 7); /* the new guest gets what is sent to it from now on */
	expect_from(b, a, b->mac, 60, 7);
	expect_nothing(b);
}

/* (7b) Beyond SWITCH_QUEUE_PACKETS frames are dropped and counted; the rest keep their order. */
static void test_full_queue_drops_and_counts(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];
	const unsigned extra = 5;

	(void)state;
	two_ports_b_learned();
	send_many(a, b->mac, 60, 0, SWITCH_QUEUE_PACKETS + extra);
	assert_int_equal(switch_port_queued(b->be), SWITCH_QUEUE_PACKETS);
	assert_int_equal(dropped(b), extra);
	assert_int_equal(dropped(a), 0);
	assert_int_equal(forwarded(a), SWITCH_QUEUE_PACKETS + extra);
	rx_post(b, QSIZE, 128);
	assert_int_equal(switch_port_queued(b->be), SWITCH_QUEUE_PACKETS - QSIZE);
	for (unsigned i = 0; i < QSIZE; i++)
		expect_from(b, a, b->mac, 60, i);
	expect_nothing(b);
	rx_post(b, 4, 128);
	tx_send(a, b->mac, 60, 999);
	expect_from(b, a, b->mac, 60, 999);
	expect_nothing(b);
	assert_int_equal(dropped(b), extra);
}

/* (7c) The byte limit: 64 KiB frames beyond SWITCH_QUEUE_BYTES drop; the rest drain over runs. */
static void test_queue_byte_limit_and_resume_over_budgets(void **state)
{
	const size_t len = 65536;
	const unsigned fit = SWITCH_QUEUE_BYTES / SWITCH_MAX_FRAME; /* a large buffer each */
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	td_mem_size = 16u << 20;
	two_ports_b_learned();
	send_many(a, b->mac, len, 0, fit + 1);
	assert_int_equal(switch_port_queued(b->be), fit);
	assert_int_equal(dropped(b), 1);
	/* One resume moves at most VNET_BUDGET_BYTES: the device schedules the rest (pump). */
	rx_post(b, fit, HDR + 65536);
	assert_int_equal(switch_port_queued(b->be), 0);
	for (unsigned i = 0; i < fit; i++)
		expect_from(b, a, b->mac, len, i);
	expect_nothing(b);
	/* Detaching a port drops what waits for it (LeakSanitizer checks they are freed). */
	send_many(a, b->mac, len, 100, 3);
	assert_int_equal(switch_port_queued(b->be), 3);
	port_detach(b);
	tx_send(a, b->mac, 60, 200); /* floods to nobody */
	expect_nothing(b);
	assert_int_equal(flooded(a), 1);
}

/*
 * (7d) The byte limit counts each queued buffer's capacity: a frame over 2 KiB takes a 64 KiB
 * buffer, so a queue of 3000-byte frames holds SWITCH_QUEUE_BYTES / 64 KiB of them, not
 * SWITCH_QUEUE_PACKETS (that would be 16 MiB of buffers for a 4 MiB budget).
 */
static void test_queue_bytes_count_buffer_capacity(void **state)
{
	const unsigned fit = SWITCH_QUEUE_BYTES / SWITCH_MAX_FRAME, n = SWITCH_QUEUE_PACKETS;
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	td_mem_size = 8u << 20;
	two_ports_b_learned();
	send_many(a, b->mac, 3000, 0, n);
	assert_int_equal(switch_port_queued(b->be), fit);
	assert_int_equal(dropped(b), n - fit);
	/* Just over the small buffers' 2 KiB: the same. */
	rx_post(b, QSIZE, 1526 * 2 + 64);
	for (unsigned i = 0; i < fit; i++)
		expect_from(b, a, b->mac, 3000, i);
	expect_nothing(b);
	assert_int_equal(switch_port_queued(b->be), 0);
	while (fake_vq_get_used(&b->td->vq[RXQ], NULL, NULL))
		;
	send_many(a, b->mac, 2049, 1000, QSIZE - fit); /* into the buffers still posted */
	for (unsigned i = 0; i < QSIZE - fit; i++)
		expect_from(b, a, b->mac, 2049, 1000 + i);
	send_many(a, b->mac, 2049, 2000, n);
	assert_int_equal(switch_port_queued(b->be), fit);
	assert_int_equal(dropped(b), 2 * (n - fit));
	/* Frames that fit the small buffers: the packet limit, not the bytes, bounds them. */
	rx_post(b, fit, HDR + 2049);
	for (unsigned i = 0; i < fit; i++)
		expect_from(b, a, b->mac, 2049, 2000 + i);
	send_many(a, b->mac, 2048, 3000, n + 1);
	assert_int_equal(switch_port_queued(b->be), n);
	assert_int_equal(dropped(b), 2 * (n - fit) + 1);
}

/* ---- Sizes, descriptor layouts, the header ---- */

/* (8) 14-byte frames, frames that fill several mergeable buffers, direct and queued. */
static void test_sizes_byte_exact_with_mergeable_buffers(void **state)
{
	static const size_t lens[] = {14, 500, 501, 3000, 65536};
	const size_t n = sizeof(lens) / sizeof(lens[0]);
	struct port *a = &ports[0], *b;

	(void)state;
	td_mem_size = 8u << 20;
	sw_up(1, 8);
	b = port_add(F(MRG_RXBUF));
	tx_send(b, a->mac, 14, 0);
	expect_from(a, b, a->mac, 14, 0);
	for (size_t i = 0; i < n; i++) { /* straight into B's buffers */
		rx_post(b, (unsigned)((HDR + lens[i] + 511) / 512), 512);
		tx_send(a, b->mac, lens[i], (unsigned)i);
		assert_int_equal(expect_frame(b, b->mac, a->mac, lens[i], (unsigned)i),
				 (HDR + lens[i] + 511) / 512);
		expect_nothing(b);
	}
	for (size_t i = 0; i < n; i++) /* B has no buffers: through the queue */
		tx_send(a, b->mac, lens[i], 10 + (unsigned)i);
	assert_int_equal(switch_port_queued(b->be), n);
	rx_post(b, 160, 512);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(expect_frame(b, b->mac, a->mac, lens[i], 10 + (unsigned)i),
				 (HDR + lens[i] + 511) / 512);
	expect_nothing(b);
	/* Shorter than an Ethernet header: dropped and counted at the sender's port. Beyond
	 * SWITCH_MAX_FRAME (the device's own largest): the device drops it first. */
	tx_send(a, b->mac, 13, 20);
	tx_send(a, b->mac, SWITCH_MAX_FRAME + 1, 21);
	expect_nothing(b);
	assert_int_equal(dropped(a), 1);
	assert_int_equal(dropped(b), 0);
}

/* (9) Header and frame cut into many descriptors, MACs across the cuts: forwarded byte-exact. */
static void test_split_tx_chain_byte_exact(void **state)
{
	/* Packet bytes: header 5 + 7, then dst 3 | 3, src 1 | 5, ethertype 1 | 1, payload. */
	static const uint32_t cuts[] = {5, 10, 4, 6, 1, 20, 33};
	const size_t len = 5 + 10 + 4 + 6 + 1 + 20 + 33 - HDR;
	uint32_t bytes[FAKE_MAX_CHAIN];
	struct port *a = &ports[0], *b = &ports[1], *c = &ports[2];

	(void)state;
	sw_up(3, 8);
	/* A broadcast from a split chain: A's MAC learned from pieces. */
	tx_queue_cut(a, make_frame(mac_bcast, a->mac, len, 1), len, cuts, 7, false);
	tx_kick(a);
	expect_from(b, a, mac_bcast, len, 1);
	expect_from(c, a, mac_bcast, len, 1);
	/* Indirect, to A: the destination read from pieces, B learned from pieces. */
	tx_queue_cut(b, make_frame(a->mac, b->mac, len, 2), len, cuts, 7, true);
	tx_kick(b);
	expect_from(a, b, a->mac, len, 2);
	expect_nothing(c);
	/* One byte per descriptor up to the payload, then the rest at once. */
	for (unsigned i = 0; i < HDR + 14; i++)
		bytes[i] = 1;
	bytes[HDR + 14] = 100;
	tx_queue_cut(a, make_frame(b->mac, a->mac, 114, 3), 114, bytes, HDR + 15, false);
	tx_kick(a);
	expect_from(b, a, b->mac, 114, 3);
	expect_nothing(c);
	/* The same while B has no buffers: the queued copy is byte-exact too. */
	while (rx_pending(b))
		rx_take(b, NULL);
	for (unsigned i = 0; i < 6; i++)
		tx_send(c, mac_bcast, 60, 50 + i); /* uses up B's last 6 buffers */
	while (rx_pending(b))
		rx_take(b, NULL);
	tx_queue_cut(a, make_frame(b->mac, a->mac, 114, 4), 114, bytes, HDR + 15, false);
	tx_kick(a);
	assert_int_equal(switch_port_queued(b->be), 1);
	rx_post(b, 1, 1526);
	expect_from(b, a, b->mac, 114, 4);
	assert_int_equal(forwarded(a), 2);
	assert_int_equal(forwarded(b), 1);
}

/* (10) The receiver's header is all zero but num_buffers, whatever the sender's held. */
static void test_receiver_header_zero_but_num_buffers(void **state)
{
	struct port *a = &ports[0], *b = &ports[1], *m;

	(void)state;
	sw_up(2, 0);
	m = port_add(F(MRG_RXBUF));
	rx_post(b, 1, 1526);
	rx_post(m, 3, 512);
	/* The sender's header (tx_header()) has every field but flags and gso_type set. */
	tx_send(a, mac_bcast, 1100, 1);
	/* expect_frame(): bytes 0..9 zero (over 0xcc), num_buffers what the buffers took. */
	assert_int_equal(expect_frame(b, mac_bcast, a->mac, 1100, 1), 1);
	assert_int_equal(expect_frame(m, mac_bcast, a->mac, 1100, 1), 3);
	/* Through the queue, the same. */
	tx_send(a, mac_bcast, 100, 2);
	assert_int_equal(switch_port_queued(b->be), 1);
	assert_int_equal(switch_port_queued(m->be), 1);
	rx_post(b, 1, 1526);
	rx_post(m, 1, 512);
	assert_int_equal(expect_frame(b, mac_bcast, a->mac, 100, 2), 1);
	assert_int_equal(expect_frame(m, mac_bcast, a->mac, 100, 2), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_no_rx_buffers_queues_in_order),
	    T(test_device_reset_drops_queued_frames),
	    T(test_full_queue_drops_and_counts),
	    T(test_queue_byte_limit_and_resume_over_budgets),
	    T(test_queue_bytes_count_buffer_capacity),
	    T(test_sizes_byte_exact_with_mergeable_buffers),
	    T(test_split_tx_chain_byte_exact),
	    T(test_receiver_header_zero_but_num_buffers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
