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

/* ---- ARP and ND: the MACs inside (port security) ---- */

static uint8_t nf[1024]; /* the frame being built */

/* Ethernet header from p's MAC to broadcast with `type`, behind an 802.1Q tag if asked. */
static size_t nf_eth(const struct port *p, unsigned type, bool tagged)
{
	size_t at = 12;

	memset(nf, 0, sizeof(nf));
	memset(nf, 0xff, 6);
	memcpy(nf + 6, p->mac, 6);
	if (tagged) {
		nf[at++] = 0x81, nf[at++] = 0x00, nf[at++] = 0x00, nf[at++] = 0x07;
	}
	nf[at++] = (uint8_t)(type >> 8);
	nf[at++] = (uint8_t)type;
	return at;
}

/* An ARP request (op 1) or reply (2) from p's MAC whose sender MAC is sha (hlen 6 or other). */
static size_t arp_from(const struct port *p, unsigned op, const uint8_t *sha, unsigned hlen,
		       bool tagged)
{
	size_t at = nf_eth(p, 0x0806, tagged);

	nf[at + 1] = 1;
	nf[at + 2] = 0x08;
	nf[at + 4] = (uint8_t)hlen;
	nf[at + 5] = 4;
	nf[at + 7] = (uint8_t)op;
	memcpy(nf + at + 8, sha, 6);
	nf[at + 14] = 10, nf[at + 17] = 1;			 /* sender 10.0.0.1 */
	nf[at + 24] = 10, nf[at + 27] = 254;			 /* target 10.0.0.254 */
	return 60;
}

/*
 * An ICMPv6 ND message of `type` from fe80::1 with options: pad 8-byte padding options (type
 * 99) first, then one link-layer address option of `opt` type (0: none, or its length in 8-byte
 * units `olen`) holding `mac`; after a hop-by-hop header if asked. Its length.
 */
static size_t nd_from(const struct port *p, unsigned type, unsigned pad, unsigned opt,
		      unsigned olen, const uint8_t *mac, bool hbh)
{
	size_t at = nf_eth(p, 0x86dd, false), l4 = at + 40, o;

	nf[at] = 0x60;
	nf[at + 6] = 58;
	nf[at + 7] = 255;
	nf[at + 8] = 0xfe, nf[at + 9] = 0x80, nf[at + 23] = 1;
	nf[at + 24] = 0xff, nf[at + 25] = 0x02, nf[at + 39] = 1;
	if (hbh) {
		nf[l4] = 58;
		nf[at + 6] = 0;
		l4 += 8;
	}
	nf[l4] = (uint8_t)type;
	o = l4 + (type == 133 ? 8 : type == 134 ? 16 : 24);
	for (unsigned i = 0; i < pad; i++, o += 8)
		nf[o] = 99, nf[o + 1] = 1;
	if (opt) {
		nf[o] = (uint8_t)opt;
		nf[o + 1] = (uint8_t)olen;
		memcpy(nf + o + 2, mac, 6);
		o += olen ? olen * 8u : 8;
	}
	nf[at + 4] = (uint8_t)((o - at - 40) >> 8);
	nf[at + 5] = (uint8_t)(o - at - 40);
	assert_true(o <= sizeof(nf));
	return o;
}

/* p sends the frame in nf; `to` got it byte-exact, or nothing if it does not pass. */
static void nf_send(struct port *p, struct port *to, size_t len, bool passes)
{
	uint8_t want[sizeof(nf)];

	memcpy(want, nf, len);
	tx_queue_cut(p, want, len, NULL, 0, false);
	tx_kick(p);
	if (!passes) {
		expect_nothing(to);
		return;
	}
	assert_int_equal(rx_take(to, NULL), HDR + len);
	assert_memory_equal(rx_out + HDR, want, len);
}

/*
 * (22a) ARP from a port-secured port: a request or reply whose sender MAC is another port's
 * (the Ethernet source its own) is dropped and counted, also behind a VLAN tag and with
 * hardware type 6 (IEEE 802, which Linux takes on Ethernet too); its own or an allowed MAC
 * passes; an ARP packet whose addresses are not 6 bytes (which port security cannot read and
 * no Ethernet host takes) is dropped, as is a truncated one; a port without port security
 * sends any.
 */
static void test_port_security_arp_sender_mac(void **state)
{
	static const uint8_t nested[1][6] = {{0x02, 0x11, 0, 0, 0, 1}};
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	sw_up_secure(2, 32, false);
	nf_send(b, a, arp_from(b, 1, b->mac, 6, false), true);
	nf_send(b, a, arp_from(b, 2, b->mac, 6, false), true);
	nf_send(b, a, arp_from(b, 2, a->mac, 6, false), false); /* "10.0.0.1 is at A's MAC" */
	nf_send(b, a, arp_from(b, 1, mac_unknown, 6, false), false);
	nf_send(b, a, arp_from(b, 2, mac_unknown, 6, true), false); /* behind a tag */
	assert_int_equal(counters(b).arp_nd_spoofed, 3);
	assert_int_equal(counters(b).spoofed, 0);
	nf_send(b, a, arp_from(b, 1, mac_unknown, 8, false), false); /* not 6-byte addresses */
	arp_from(b, 2, a->mac, 6, false);
	nf[14 + 1] = 6; /* hardware type IEEE 802: Linux takes it on Ethernet */
	nf_send(b, a, 60, false);
	arp_from(b, 2, b->mac, 6, false);
	nf_send(b, a, 14 + 13, false); /* ends inside the sender MAC */
	assert_int_equal(counters(b).arp_nd_spoofed, 6);
	assert_int_equal(switch_port_set_security(b->be, &(struct switch_port_security){
							    .on = true, .n_allowed = 1, .allowed = nested}),
			 0);
	nf_send(b, a, arp_from(b, 2, nested[0], 6, false), true);
	assert_int_equal(switch_port_set_security(b->be, &(struct switch_port_security){.on = false}),
			 0);
	nf_send(b, a, arp_from(b, 2, mac_unknown, 6, false), true);
	nf_send(b, a, arp_from(b, 1, mac_unknown, 8, false), true);
	assert_int_equal(counters(b).arp_nd_spoofed, 6);
	assert_int_equal(counters(a).arp_nd_spoofed, 0);
}

/*
 * (22b) ND from a port-secured port: a solicitation's source or an advertisement's target
 * link-layer address that is not the port's MAC is dropped and counted, behind padding options
 * and a hop-by-hop header too, and whatever the descriptors cut; an option of length 0 drops
 * the message; its own MAC, no option, a redirect and plain IPv6 pass.
 */
static void test_port_security_nd_link_layer_addresses(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	sw_up_secure(2, 32, false);
	nf_send(b, a, nd_from(b, 135, 0, 1, 1, b->mac, false), true);	/* NS, its own */
	nf_send(b, a, nd_from(b, 136, 0, 2, 1, b->mac, false), true);	/* NA, its own */
	nf_send(b, a, nd_from(b, 133, 0, 1, 1, b->mac, false), true);	/* RS */
	nf_send(b, a, nd_from(b, 136, 0, 0, 0, NULL, false), true);	/* no option */
	nf_send(b, a, nd_from(b, 135, 0, 1, 1, a->mac, false), false);	/* NS claiming A's */
	nf_send(b, a, nd_from(b, 136, 0, 2, 1, a->mac, false), false);	/* NA claiming A's */
	nf_send(b, a, nd_from(b, 133, 0, 1, 1, a->mac, false), false);	/* RS */
	nf_send(b, a, nd_from(b, 134, 0, 1, 1, a->mac, false), false);	/* RA */
	nf_send(b, a, nd_from(b, 136, 20, 2, 1, a->mac, false), false); /* past a window */
	nf_send(b, a, nd_from(b, 136, 0, 2, 1, a->mac, true), false);	/* behind hop-by-hop */
	nf_send(b, a, nd_from(b, 135, 0, 1, 0, b->mac, false), false);	/* length 0 */
	assert_int_equal(counters(b).arp_nd_spoofed, 7);
	/* Cut into descriptors anywhere (here through the IPv6 header and the option): the same. */
	{
		uint32_t cuts[4];
		size_t len = nd_from(b, 136, 3, 2, 1, a->mac, false);

		cuts[0] = HDR + 20, cuts[1] = 37, cuts[2] = 7;
		cuts[3] = (uint32_t)(HDR + len) - cuts[0] - cuts[1] - cuts[2];
		tx_queue_cut(b, nf, len, cuts, 4, false);
		tx_kick(b);
		expect_nothing(a);
		len = nd_from(b, 136, 3, 2, 1, b->mac, false);
		cuts[3] = (uint32_t)(HDR + len) - cuts[0] - cuts[1] - cuts[2];
		tx_queue_cut(b, nf, len, cuts, 4, true);
		tx_kick(b);
		assert_int_equal(rx_take(a, NULL), HDR + len);
		assert_memory_equal(rx_out + HDR, nf, len);
	}
	assert_int_equal(counters(b).arp_nd_spoofed, 8);
	nf_send(b, a, nd_from(b, 137, 0, 2, 1, a->mac, false), true); /* redirect: another's */
	nf_send(b, a, nd_from(b, 1, 0, 2, 1, a->mac, false), true);   /* not ND */
	{
		size_t len = nd_from(b, 136, 0, 2, 1, a->mac, false);

		nf[14 + 6] = 17; /* UDP whose payload looks like that NA: no ND, passes */
		nf_send(b, a, len, true);
	}
	assert_int_equal(counters(b).arp_nd_spoofed, 8);
	assert_int_equal(counters(b).spoofed, 0);
}

/* An ARP reply from p's MAC with sender MAC sha behind ntags 802.1Q / 802.1ad tags. */
static size_t arp_tagged(const struct port *p, unsigned ntags, const uint8_t *sha)
{
	size_t at = 12;

	arp_from(p, 2, sha, 6, false);
	memmove(nf + 12 + 4 * ntags, nf + 12, 60 - 12);
	for (unsigned i = 0; i < ntags; i++, at += 4) {
		nf[at] = i ? 0x81 : 0x88, nf[at + 1] = i ? 0x00 : 0xa8;
		nf[at + 2] = 0x00, nf[at + 3] = (uint8_t)(10 + i);
	}
	return 60 + 4 * ntags;
}

/*
 * (22c) What port security cannot read does not leave a port-secured port: ARP behind three
 * VLAN tags (two are looked behind; before, the third passed unread, whatever sender MAC it
 * carried), a frame that ends in its tags, ND whose options run past the message, a link-layer
 * address option not Ethernet's 8 bytes, a payload length past the frame. ND longer than the
 * switch's copy of a frame's first bytes (SW_HEAD_MAX) is read whole: a foreign target address
 * at its end is dropped, its own passes byte-exact.
 */
static void test_port_security_drops_what_it_cannot_read(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];
	size_t len;

	(void)state;
	sw_up_secure(2, 32, false);
	nf_send(b, a, arp_tagged(b, 2, b->mac), true);
	nf_send(b, a, arp_tagged(b, 2, a->mac), false);
	assert_int_equal(counters(b).arp_nd_spoofed, 1);
	nf_send(b, a, arp_tagged(b, 3, a->mac), false); /* passed before: three tags, unread */
	nf_send(b, a, arp_tagged(b, 3, b->mac), false);
	nf_send(b, a, arp_tagged(b, 4, b->mac), false);
	assert_int_equal(counters(b).arp_nd_spoofed, 4);
	arp_tagged(b, 2, b->mac);
	nf_send(b, a, 14 + 4 + 2, false); /* ends inside its second tag's EtherType */
	assert_int_equal(counters(b).arp_nd_spoofed, 5);
	/* ND: an option past the message's end, a 16-byte link-layer option, a long payload. */
	len = nd_from(b, 135, 0, 1, 1, b->mac, false);
	nf[len - 8 + 1] = 2; /* the SLLA option claims 16 bytes: past the message */
	nf_send(b, a, len, false);
	len = nd_from(b, 135, 0, 1, 2, b->mac, false);
	nf_send(b, a, len, false); /* 16 bytes, within the message: not Ethernet's */
	len = nd_from(b, 136, 0, 2, 1, b->mac, false);
	nf[14 + 5] += 8; /* payload length 8 bytes past the frame */
	nf_send(b, a, len, false);
	assert_int_equal(counters(b).arp_nd_spoofed, 8);
	/* Longer than the switch's copy of a frame's head: read whole. */
	len = nd_from(b, 136, 60, 2, 1, a->mac, false);
	assert_true(len > 256 + 64);
	nf_send(b, a, len, false);
	len = nd_from(b, 136, 60, 2, 1, b->mac, false);
	nf_send(b, a, len, true);
	assert_int_equal(counters(b).arp_nd_spoofed, 9);
	/* Untagged and two tags deep, its own, still pass; a port without security sends any. */
	nf_send(b, a, arp_from(b, 2, b->mac, 6, false), true);
	assert_int_equal(switch_port_set_security(b->be, &(struct switch_port_security){.on = false}),
			 0);
	nf_send(b, a, arp_tagged(b, 3, a->mac), true);
	assert_int_equal(counters(b).arp_nd_spoofed, 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_port_security_drops_spoofed_source),
	    T(test_port_security_mac_flapping),
	    T(test_port_security_allowed_macs),
	    T(test_port_security_mac_change),
	    T(test_port_security_off_learns_any_source),
	    T(test_port_security_arp_sender_mac),
	    T(test_port_security_nd_link_layer_addresses),
	    T(test_port_security_drops_what_it_cannot_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
