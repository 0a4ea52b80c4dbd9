/* SPDX-License-Identifier: MIT */
/* test_switch_flood.c - switch backend: storm control (flood-rate) and segments (switch=NAME). */
#include "switch_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * (23) Storm control: a port with flood-rate=10 floods 10 frames a second (broadcast, multicast
 * and unknown unicast alike), one second's worth at once; the rest are dropped and counted. Its
 * unicast to a known port is never limited, and the other ports flood on.
 */
static void test_storm_control_flood_rate(void **state)
{
	struct port *a = &ports[0], *b = &ports[1], *c = &ports[2];
	const unsigned rate = 10;
	unsigned seq = 100;

	(void)state;
	sw_up(3, 128);
	switch_port_set_flood_rate(a->be, rate);
	vnet_dev_attach_backend(a->td->dev, switch_port_ops(a->be), a->be);
	assert_int_equal(counters(a).flood_rate, rate);
	tx_send(b, mac_bcast, 60, 1); /* B and C learnt */
	expect_from(a, b, mac_bcast, 60, 1);
	expect_from(c, b, mac_bcast, 60, 1);
	tx_send(c, mac_bcast, 60, 2);
	expect_from(a, c, mac_bcast, 60, 2);
	expect_from(b, c, mac_bcast, 60, 2);
	for (unsigned i = 0; i < 3 * rate; i++)
		tx_send(a, i % 3 == 0 ? mac_bcast : i % 3 == 1 ? mac_mcast : mac_unknown, 60, seq + i);
	for (unsigned i = 0; i < rate; i++) {
		const uint8_t *dst = i % 3 == 0 ? mac_bcast : i % 3 == 1 ? mac_mcast : mac_unknown;

		expect_from(b, a, dst, 60, seq + i);
		expect_from(c, a, dst, 60, seq + i);
	}
	expect_nothing(b);
	expect_nothing(c);
	assert_int_equal(flooded(a), rate);
	assert_int_equal(counters(a).storm_dropped, 2 * rate);
	/* Over the rate, unicast to a known port still goes, every frame. */
	for (unsigned i = 0; i < 3 * rate; i++)
		tx_send(a, b->mac, 60, 200 + i);
	for (unsigned i = 0; i < 3 * rate; i++)
		expect_from(b, a, b->mac, 60, 200 + i);
	expect_nothing(c);
	assert_int_equal(forwarded(a), 3 * rate);
	/* B, without a limit, floods on. */
	for (unsigned i = 0; i < 3 * rate; i++)
		tx_send(b, mac_bcast, 60, 300 + i);
	for (unsigned i = 0; i < 3 * rate; i++)
		expect_from(c, b, mac_bcast, 60, 300 + i);
	assert_int_equal(counters(b).storm_dropped, 0);
	/* Half a second: half a bucket. A minute idle: one second's worth, not sixty. */
	clock_ns += NS / 2;
	switch_set_clock(sw, clock_ns);
	for (unsigned i = 0; i < rate; i++)
		tx_send(a, mac_bcast, 60, 400 + i);
	assert_int_equal(flooded(a), rate + rate / 2);
	clock_advance(60);
	for (unsigned i = 0; i < 3 * rate; i++)
		tx_send(a, mac_bcast, 60, 500 + i);
	assert_int_equal(flooded(a), 2 * rate + rate / 2);
	assert_int_equal(counters(a).storm_dropped, 2 * rate + rate / 2 + 2 * rate);
	/* 0: no limit again. */
	switch_port_set_flood_rate(a->be, 0);
	vnet_dev_attach_backend(a->td->dev, switch_port_ops(a->be), a->be);
	for (unsigned i = 0; i < 3 * rate; i++)
		tx_send(a, mac_bcast, 60, 600 + i);
	assert_int_equal(flooded(a), 5 * rate + rate / 2);
}

/*
 * (23b) Over the rate, a broadcast or multicast is dropped before any other work: its source is
 * not learnt (a MAC that only ever storms stays unknown; unicast to it floods), as a frame port
 * security drops teaches nothing either.
 */
static void test_storm_control_drops_before_learning(void **state)
{
	struct port *a = &ports[0], *b = &ports[1], *c = &ports[2];

	(void)state;
	sw_up(3, 32);
	switch_port_set_flood_rate(a->be, 1);
	vnet_dev_attach_backend(a->td->dev, switch_port_ops(a->be), a->be);
	tx_send(a, mac_bcast, 60, 1); /* the one token: flooded, a's MAC learnt */
	expect_from(b, a, mac_bcast, 60, 1);
	expect_from(c, a, mac_bcast, 60, 1);
	send_from(a, mac_bcast, mac_unknown, 60, 2); /* over the rate, from another MAC */
	send_from(a, mac_mcast, mac_unknown, 60, 3);
	expect_nothing(b);
	expect_nothing(c);
	assert_int_equal(counters(a).storm_dropped, 2);
	assert_int_equal(counters(a).macs, 1);
	tx_send(b, mac_unknown, 60, 4); /* unknown: flooded to a and c */
	expect_from(a, b, mac_unknown, 60, 4);
	expect_from(c, b, mac_unknown, 60, 4);
}

/*
 * Segments (switch=NAME): each is a switch of its own. Ports a, b on the test's switch, c, d
 * on a second one, port security off (c sends from a's MAC).
 */
static struct vnet_switch *sw_segments(void)
{
	struct vnet_switch *first, *second = switch_create(1, NULL, NULL);

	assert_non_null(second);
	sw_new();
	first = sw;
	port_add(0);
	port_add(0);
	sw = second;
	switch_set_clock(sw, clock_ns);
	port_add(0);
	port_add(0);
	sw = first;
	for (unsigned i = 0; i < 4; i++)
		rx_post(&ports[i], 32, 1526);
	return second;
}

/* (24) A broadcast, multicast or unknown unicast in one segment never reaches the other. */
static void test_segments_floods_stay_in_segment(void **state)
{
	struct port *a = &ports[0], *b = &ports[1], *c = &ports[2], *d = &ports[3];
	struct vnet_switch *second = sw_segments();

	(void)state;
	tx_send(a, mac_bcast, 60, 1);
	tx_send(a, mac_mcast, 61, 2);
	tx_send(a, mac_unknown, 62, 3);
	expect_from(b, a, mac_bcast, 60, 1);
	expect_from(b, a, mac_mcast, 61, 2);
	expect_from(b, a, mac_unknown, 62, 3);
	expect_nothing(c);
	expect_nothing(d);
	tx_send(c, mac_bcast, 70, 4);
	expect_from(d, c, mac_bcast, 70, 4);
	expect_nothing(a);
	expect_nothing(b);
	/* Unicast to a MAC of the other segment: unknown here, flooded here only. */
	tx_send(c, a->mac, 71, 5);
	expect_from(d, c, a->mac, 71, 5);
	expect_nothing(a);
	expect_nothing(b);
	switch_destroy(second);
}

/* (25) The same MAC in two segments is learnt in each, independently. */
static void test_segments_same_mac_learnt_independently(void **state)
{
	struct port *a = &ports[0], *b = &ports[1], *c = &ports[2], *d = &ports[3];
	struct vnet_switch *second = sw_segments();

	(void)state;
	tx_send(a, mac_bcast, 60, 1); /* a's MAC learnt at a in the first segment */
	expect_from(b, a, mac_bcast, 60, 1);
	send_from(c, mac_bcast, a->mac, 60, 2); /* the same MAC at c in the second */
	expect_frame(d, mac_bcast, a->mac, 60, 2);
	expect_nothing(a);
	expect_nothing(b);
	/* Each segment's unicast to that MAC goes to its own port, not flooded, not moved. */
	tx_send(b, a->mac, 64, 3);
	expect_from(a, b, a->mac, 64, 3);
	send_from(d, a->mac, d->mac, 65, 4);
	expect_frame(c, a->mac, d->mac, 65, 4);
	expect_nothing(a);
	expect_nothing(b);
	expect_nothing(d);
	assert_int_equal(forwarded(b), 1);
	assert_int_equal(forwarded(d), 1);
	assert_int_equal(counters(a).macs, 1);
	assert_int_equal(counters(c).macs, 1);
	switch_destroy(second);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_storm_control_flood_rate),
	    T(test_storm_control_drops_before_learning),
	    T(test_segments_floods_stay_in_segment),
	    T(test_segments_same_mac_learnt_independently),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
