/* SPDX-License-Identifier: MIT */
/* test_switch_ips.c - switch backend: IP anti-spoofing (ips=): IPv4, ARP, IPv6 and ND, tags. */
#include "switch_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

/* ---- IP anti-spoofing ---- */

/* p's ips= list: "ADDR/LEN+ADDR/LEN..." (every entry with its /LEN), then its ops table. */
static void set_ips(struct port *p, const char *list)
{
	struct switch_ip_net nets[SWITCH_IPS];
	char buf[512], *ent, *next;
	unsigned n = 0;

	memset(nets, 0, sizeof(nets));
	snprintf(buf, sizeof(buf), "%s", list);
	for (ent = buf; ent; ent = next, n++) {
		char *slash;

		next = strchr(ent, '+');
		if (next)
			*next++ = '\0';
		slash = strchr(ent, '/');
		assert_non_null(slash);
		*slash++ = '\0';
		nets[n].v6 = strchr(ent, ':') != NULL;
		assert_int_equal(inet_pton(nets[n].v6 ? AF_INET6 : AF_INET, ent, nets[n].addr), 1);
		nets[n].prefix = (uint8_t)atoi(slash);
	}
	assert_int_equal(switch_port_set_ips(p->be, nets, n), 0);
	vnet_dev_attach_backend(p->td->dev, switch_port_ops(p->be), p->be);
}

static uint8_t ipf[256]; /* the frame being built */

/* Ethernet header from p to broadcast with `type`, optionally behind an 802.1Q tag. */
static size_t ip_eth(const struct port *p, unsigned type, bool tagged)
{
	size_t at = 12;

	memset(ipf, 0, sizeof(ipf));
	memset(ipf, 0xff, 6);
	memcpy(ipf + 6, p->mac, 6);
	if (tagged) {
		ipf[at++] = 0x81, ipf[at++] = 0x00, ipf[at++] = 0x00, ipf[at++] = 0x05;
	}
	ipf[at++] = (uint8_t)(type >> 8);
	ipf[at++] = (uint8_t)type;
	return at;
}

/* An IPv4 UDP frame src:sport -> dst:dport (64 bytes). */
static size_t ip4_udp(const struct port *p, const char *src, const char *dst, unsigned sport,
		      unsigned dport, bool tagged)
{
	size_t at = ip_eth(p, 0x0800, tagged);

	ipf[at] = 0x45;
	ipf[at + 9] = 17;
	assert_int_equal(inet_pton(AF_INET, src, ipf + at + 12), 1);
	assert_int_equal(inet_pton(AF_INET, dst, ipf + at + 16), 1);
	ipf[at + 20] = (uint8_t)(sport >> 8), ipf[at + 21] = (uint8_t)sport;
	ipf[at + 22] = (uint8_t)(dport >> 8), ipf[at + 23] = (uint8_t)dport;
	return 64;
}

/* An ARP packet (op 1 request, 2 reply) with sender IP `sip` asking for 10.0.0.254. */
static size_t arp(const struct port *p, unsigned op, const char *sip, unsigned plen)
{
	size_t at = ip_eth(p, 0x0806, false);

	ipf[at + 1] = 1;
	ipf[at + 2] = 0x08;
	ipf[at + 4] = 6;
	ipf[at + 5] = (uint8_t)plen;
	ipf[at + 7] = (uint8_t)op;
	memcpy(ipf + at + 8, p->mac, 6);
	assert_int_equal(inet_pton(AF_INET, sip, ipf + at + 14), 1);
	assert_int_equal(inet_pton(AF_INET, "10.0.0.254", ipf + at + 24), 1);
	return 60;
}

/*
 * An IPv6 frame from src: ICMPv6 of `type` with target `target` (NULL: UDP instead), after a
 * hop-by-hop header if asked.
 */
static size_t ip6(const struct port *p, const char *src, unsigned type, const char *target,
		  bool hbh)
{
	size_t at = ip_eth(p, 0x86dd, false), l4 = at + 40;

	ipf[at] = 0x60;
	ipf[at + 6] = target ? 58 : 17;
	assert_int_equal(inet_pton(AF_INET6, src, ipf + at + 8), 1);
	assert_int_equal(inet_pton(AF_INET6, "ff02::1", ipf + at + 24), 1);
	if (hbh) {
		ipf[l4] = ipf[at + 6];
		ipf[at + 6] = 0;
		l4 += 8;
	}
	if (target) {
		ipf[l4] = (uint8_t)type;
		assert_int_equal(inet_pton(AF_INET6, target, ipf + l4 + 8), 1);
	}
	return l4 + 32;
}

/* p sends the frame in ipf; to says whether `to` got it (byte-exact) or nothing did. */
static void ips_send(struct port *p, struct port *to, size_t len, bool passes)
{
	uint8_t want[sizeof(ipf)];

	memcpy(want, ipf, len);
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
 * (26) IPv4 with ips=: an in-list source passes (a host and a /24), another is dropped and
 * counted, DHCP from 0.0.0.0 (68 -> 67, broadcast) passes, other traffic from 0.0.0.0 does not;
 * non-IP passes; a port without a list sends any source.
 */
static void test_ips_ipv4_source(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	sw_up(2, 32);
	set_ips(a, "10.0.0.1/32+192.168.1.0/24");
	assert_int_equal(counters(a).ips, 2);
	ips_send(a, b, ip4_udp(a, "10.0.0.1", "10.0.0.9", 1000, 53, false), true);
	ips_send(a, b, ip4_udp(a, "192.168.1.77", "10.0.0.9", 1000, 53, false), true);
	ips_send(a, b, ip4_udp(a, "10.0.0.2", "10.0.0.9", 1000, 53, false), false);
	assert_int_equal(counters(a).ip_spoofed, 1);
	ips_send(a, b, ip4_udp(a, "0.0.0.0", "255.255.255.255", 68, 67, false), true);
	ips_send(a, b, ip4_udp(a, "0.0.0.0", "255.255.255.255", 1000, 67, false), false);
	ips_send(a, b, ip4_udp(a, "0.0.0.0", "10.0.0.9", 68, 67, false), false);
	assert_int_equal(counters(a).ip_spoofed, 3);
	tx_send(a, mac_bcast, 60, 1); /* EtherType 0x88b5: no IP address, passes */
	expect_from(b, a, mac_bcast, 60, 1);
	ips_send(b, a, ip4_udp(b, "10.0.0.1", "10.0.0.9", 1000, 53, false), true);
	assert_int_equal(counters(b).ips, 0);
	assert_int_equal(counters(b).ip_spoofed, 0);
	assert_int_equal(counters(a).spoofed, 0);
}

/* (27) ARP with ips=: a request or reply from a foreign sender IP is dropped, a probe passes. */
static void test_ips_arp_sender(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	sw_up(2, 32);
	set_ips(a, "10.0.0.1/32");
	ips_send(a, b, arp(a, 1, "10.0.0.1", 4), true);
	ips_send(a, b, arp(a, 2, "10.0.0.1", 4), true);
	ips_send(a, b, arp(a, 2, "10.0.0.254", 4), false); /* claims the gateway */
	ips_send(a, b, arp(a, 1, "10.0.0.7", 4), false);
	ips_send(a, b, arp(a, 1, "0.0.0.0", 4), true); /* an address probe (RFC 5227) */
	ips_send(a, b, arp(a, 1, "10.0.0.1", 16), false); /* not IPv4 over Ethernet */
	assert_int_equal(counters(a).ip_spoofed, 3);
}

/*
 * (28) IPv6 with ips=: the source is checked (link-local only if listed), a neighbour
 * advertisement's target too (also behind a hop-by-hop header); DAD from :: passes, other
 * traffic from :: does not.
 */
static void test_ips_ipv6_source_and_na_target(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];

	(void)state;
	sw_up(2, 32);
	set_ips(a, "2001:db8::1/128+fe80::/64+10.0.0.1/32");
	ips_send(a, b, ip6(a, "2001:db8::1", 0, NULL, false), true);
	ips_send(a, b, ip6(a, "2001:db8::2", 0, NULL, false), false);
	ips_send(a, b, ip6(a, "fe80::1", 136, "2001:db8::1", false), true);
	ips_send(a, b, ip6(a, "fe80::1", 136, "fe80::99", false), true);
	ips_send(a, b, ip6(a, "fe80::1", 136, "2001:db8::5", false), false);
	ips_send(a, b, ip6(a, "2001:db8::1", 136, "2001:db8::5", true), false);
	ips_send(a, b, ip6(a, "fe80:1::1", 135, "2001:db8::1", false), false);
	ips_send(a, b, ip6(a, "::", 135, "2001:db8::1", false), true);   /* DAD */
	ips_send(a, b, ip6(a, "::", 136, "2001:db8::1", false), false);  /* NA from :: */
	ips_send(a, b, ip6(a, "::", 0, NULL, false), false);
	ips_send(a, b, ip6(a, "fe80::1", 135, "2001:db8::7", false), true); /* NS: any target */
	assert_int_equal(counters(a).ip_spoofed, 6);
}

/*
 * (29) A port with ips= sends untagged: an 802.1Q frame is dropped, even with an in-list source
 * behind the tag (the switch forwards tags as they are: the tag would hide the addresses). A
 * port without a list forwards it as before. Bad lists are refused.
 */
static void test_ips_vlan_tagged_dropped(void **state)
{
	struct port *a = &ports[0], *b = &ports[1];
	struct switch_ip_net many[SWITCH_IPS + 1] = {{.v6 = false, .prefix = 33}};

	(void)state;
	sw_up(2, 32);
	set_ips(a, "10.0.0.1/32");
	ips_send(a, b, ip4_udp(a, "10.0.0.1", "10.0.0.9", 1000, 53, true), false);
	assert_int_equal(counters(a).ip_spoofed, 1);
	ips_send(b, a, ip4_udp(b, "10.0.0.1", "10.0.0.9", 1000, 53, true), true);
	assert_int_equal(switch_port_set_ips(b->be, many, 1), -1);
	assert_int_equal(switch_port_set_ips(b->be, many, SWITCH_IPS + 1), -1);
	assert_int_equal(counters(b).ips, 0);
	assert_int_equal(switch_port_set_ips(a->be, NULL, 0), 0); /* the list gone: no check */
	vnet_dev_attach_backend(a->td->dev, switch_port_ops(a->be), a->be);
	assert_ptr_equal(switch_port_ops(a->be), &switch_backend_ops);
	ips_send(a, b, ip4_udp(a, "10.0.0.1", "10.0.0.9", 1000, 53, true), true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_ips_ipv4_source),
	    T(test_ips_arp_sender),
	    T(test_ips_ipv6_source_and_na_target),
	    T(test_ips_vlan_tagged_dropped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
