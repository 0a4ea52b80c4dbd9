/* SPDX-License-Identifier: MIT */
/* test_switch_psec.c - switch backend: port security (source MACs, allowed-macs, mac-change). */
#include "switch_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Port security ---- */

/* p's driver sets its MAC to `mac` (CTRL_MAC_ADDR_SET): the device's current MAC. */
static void driver_set_mac(struct port *p, const uint8_t *mac)
{
	uint8_t in[8] = {VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET};

	memcpy(in + 2, mac, 6);
	assert_int_equal(td_exec(p->td, in, sizeof(in)), VIRTIO_NET_OK);
}

/*
 * A switch of n ports with bufs RX buffers each, every device's MAC its port's p->mac, port
 * security on (mac_change as given, no allowed MACs).
 */
static void sw_up_secure(unsigned n, unsigned bufs, bool mac_change)
{
	sw_new();
	for (unsigned i = 0; i < n; i++) {
		struct port *p = port_add(F(CTRL_MAC_ADDR));

		driver_set_mac(p, p->mac);
		assert_int_equal(switch_port_set_security(p->be, &(struct switch_port_security){
								    .on = true,
								    .mac_change = mac_change,
								}),
				 0);
	}
	for (unsigned i = 0; bufs && i < n; i++)
		rx_post(&ports[i], bufs, 1526);
}

/*
 * (18) A port sending from another port's MAC: dropped before learning and counted; the victim
 * keeps its unicast (the FDB did not move its MAC); a multicast source is dropped too.
 */
static void test_port_security_drops_spoofed_source(void **state)
{
	struct port *a = &ports[0], *b = &ports[1], *c = &ports[2];

	(void)state;
	sw_up_secure(3, 16, false);
	tx_send(a, mac_bcast, 60, 1); /* A's MAC learnt at A */
	expect_from(b, a, mac_bcast, 60, 1);
	expect_from(c, a, mac_bcast, 60, 1);
	send_from(b, mac_bcast, a->mac, 60, 2); /* B claims A's MAC */
	expect_nothing(a);
	expect_nothing(c);
	assert_int_equal(counters(b).spoofed, 1);
	assert_int_equal(counters(b).macs, 0);
	assert_int_equal(flooded(b), 0);
	tx_send(c, a->mac, 64, 3); /* still to A, not B */
	expect_from(a, c, a->mac, 64, 3);
	expect_nothing(b);
	send_from(b, mac_bcast, mac_mcast, 60, 4); /* a multicast source */
	expect_nothing(a);
	expect_nothing(c);
	assert_int_equal(counters(b).spoofed, 2);
	assert_int_equal(counters(b).port_security, 1);
	assert_int_equal(counters(a).spoofed, 0);
	tx_send(b, a->mac, 60, 5); /* B's own MAC goes through */
	expect_from(a, b, a->mac, 60, 5);
	assert_int_equal(counters(b).macs, 1);
}

/* (19) Flapping: B alternates A's MAC and its own; A's MAC never leaves A. */
static void test_port_security_mac_flapping(void **state)
{
	struct port *a = &ports[0], *b = &ports[1], *c = &ports[2];

	(void)state;
	sw_up_secure(3, 64, false);
	tx_send(a, mac_bcast, 60, 1);
	expect_from(b, a, mac_bcast, 60, 1);
	expect_from(c, a, mac_bcast, 60, 1);
	tx_send(c, mac_bcast, 60, 2);
	expect_from(a, c, mac_bcast, 60, 2);
	expect_from(b, c, mac_bcast, 60, 2);
	for (unsigned i = 0; i < 10; i++) {
		send_from(b, c->mac, a->mac, 60, 10 + i);
		tx_send(b, c->mac, 60, 30 + i);
		expect_from(c, b, c->mac, 60, 30 + i);
		tx_send(c, a->mac, 60, 50 + i);
		expect_from(a, c, a->mac, 60, 50 + i);
	}
	expect_nothing(b);
	assert_int_equal(counters(b).spoofed, 10);
}

/* (20) allowed-macs: the port may send from those too (learnt at it), and from no other. */
static void test_port_security_allowed_macs(void **state)
{
	static const uint8_t nested[2][6] = {{0x02, 0x11, 0, 0, 0, 1}, {0x02, 0x11, 0, 0, 0, 2}};
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	sw_up_secure(2, 16, false);
	assert_int_equal(switch_port_set_security(b->be, &(struct switch_port_security){
							    .on = true, .n_allowed = 2, .allowed = nested}),
			 0);
	send_from(b, a->mac, nested[1], 60, 1);
	expect_frame(a, a->mac, nested[1], 60, 1);
	tx_send(a, nested[1], 60, 2); /* learnt at B */
	expect_from(b, a, nested[1], 60, 2);
	send_from(b, a->mac, mac_unknown, 60, 3);
	expect_nothing(a);
	assert_int_equal(counters(b).spoofed, 1);
	/* More than SWITCH_ALLOWED_MACS, or a multicast one: refused, nothing changed. */
	assert_int_equal(switch_port_set_security(b->be, &(struct switch_port_security){
							    .on = true,
							    .n_allowed = SWITCH_ALLOWED_MACS + 1,
							    .allowed = nested}),
			 -1);
	assert_int_equal(switch_port_set_security(b->be, &(struct switch_port_security){
							    .on = true, .n_allowed = 1,
							    .allowed = (const uint8_t(*)[6])mac_mcast}),
			 -1);
	send_from(b, a->mac, nested[0], 60, 4);
	expect_frame(a, a->mac, nested[0], 60, 4);
}

/* (21) mac-change: the MAC the driver set is the port's; off, the driver's new MAC is dropped. */
static void test_port_security_mac_change(void **state)
{
	static const uint8_t moved[6] = {0x02, 0x22, 0, 0, 0, 9};
	struct port *a = &ports[0], *b = &ports[1], *c = &ports[2];

	(void)state;
	sw_up_secure(3, 16, false);
	assert_int_equal(switch_port_set_security(c->be, &(struct switch_port_security){
							    .on = true, .mac_change = true}),
			 0);
	driver_set_mac(b, moved); /* mac-change off: B may still send from its MAC only */
	driver_set_mac(c, moved);
	send_from(b, a->mac, moved, 60, 1);
	expect_nothing(a);
	assert_int_equal(counters(b).spoofed, 1);
	send_from(c, a->mac, moved, 60, 2);
	expect_frame(a, a->mac, moved, 60, 2);
	send_from(c, a->mac, c->mac, 60, 3); /* its old MAC is not its any more */
	expect_nothing(a);
	assert_int_equal(counters(c).spoofed, 1);
	tx_send(b, a->mac, 60, 4); /* B's configured MAC still works */
	expect_from(a, b, a->mac, 60, 4);
}

/* (22) Off (as a port is attached): any source goes, and is learnt. */
static void test_port_security_off_learns_any_source(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	sw_up(2, 16);
	assert_int_equal(counters(b).port_security, 0);
	send_from(b, a->mac, mac_unknown, 60, 1);
	expect_frame(a, a->mac, mac_unknown, 60, 1);
	tx_send(a, mac_unknown, 60, 2);
	expect_frame(b, mac_unknown, a->mac, 60, 2);
	assert_int_equal(counters(b).spoofed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_port_security_drops_spoofed_source),
	    T(test_port_security_mac_flapping),
	    T(test_port_security_allowed_macs),
	    T(test_port_security_mac_change),
	    T(test_port_security_off_learns_any_source),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
