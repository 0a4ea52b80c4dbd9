/* SPDX-License-Identifier: MIT */
/* switch_ips.c - IP anti-spoofing of a switch port: may a guest frame carry its IP addresses. */
#include "backend/switch/switch_ips.h"

#include <string.h>

/*
 * A leaf: the rules only, on the first bytes of a frame that switch.c copies for the ports with
 * an ips= list (their own ops tables: the others never come here).
 *
 * - IPv4: the source is in the list, or the frame is a DHCP client's (0.0.0.0 to
 *   255.255.255.255, UDP 68 to 67, the first fragment), as nwfilter's clean-traffic allows.
 * - ARP: IPv4 over Ethernet only; the sender IP is in the list, or 0.0.0.0 (an address probe,
 *   RFC 5227).
 * - IPv6: the source is in the list, or :: for a router solicitation, a neighbour solicitation
 *   (duplicate address detection) or an MLDv2 report (RFC 4861, 3810). Link-local addresses are
 *   not exempt: list them (fe80::/64 trusts the guest on all of link-local). A neighbour
 *   advertisement is dropped unless its target is in the list (from :: it is invalid anyway).
 *   Hop-by-hop, routing and destination option headers are walked; a fragment is checked for its
 *   source only (ND is never fragmented: receivers drop it, RFC 6980).
 * - 802.1Q / 802.1ad tagged frames are dropped: the switch forwards a tag as it is, and the tag
 *   would hide the addresses behind it.
 * - Other EtherTypes carry no IP address and pass.
 */

#define ETH_HLEN 14
#define ET_IPV4 0x0800
#define ET_ARP 0x0806
#define ET_IPV6 0x86dd
#define ET_8021Q 0x8100
#define ET_8021AD 0x88a8
#define ET_QINQ 0x9100

#define IPPROTO_UDP_ 17
#define IPV6_HOPOPTS 0
#define IPV6_ROUTING 43
#define IPV6_FRAGMENT 44
#define IPV6_DSTOPTS 60
#define IPV6_ICMP 58
#define ND_RS 133
#define ND_NS 135
#define ND_NA 136
#define MLD2_REPORT 143

static unsigned be16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

/* a (4 or 16 bytes) is in one of the list's networks of its family. */
static bool in_list(const struct switch_ip_net *nets, unsigned n, bool v6, const uint8_t *a)
{
	for (unsigned i = 0; i < n; i++) {
		const struct switch_ip_net *e = &nets[i];
		unsigned full = e->prefix / 8, rest = e->prefix % 8;

		if (e->v6 != v6 || memcmp(e->addr, a, full) != 0)
			continue;
		if (rest && ((e->addr[full] ^ a[full]) & (uint8_t)(0xff00u >> rest)))
			continue;
		return true;
	}
	return false;
}

static bool all_zero(const uint8_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i])
			return false;
	return true;
}

static const char *check_ipv4(const struct switch_ip_net *nets, unsigned n, const uint8_t *ip,
			      size_t len)
{
	size_t ihl;
	const uint8_t *udp;

	if (len < 20 || ip[0] >> 4 != 4 || (ihl = (size_t)(ip[0] & 15) * 4) < 20)
		return "a malformed IPv4 header";
	if (in_list(nets, n, false, ip + 12))
		return NULL;
	/* DHCP: 0.0.0.0:68 to 255.255.255.255:67, not a later fragment. */
	udp = ip + ihl;
	if (all_zero(ip + 12, 4) && ip[9] == IPPROTO_UDP_ && (be16(ip + 6) & 0x1fff) == 0 &&
	    !memcmp(ip + 16, "\xff\xff\xff\xff", 4) && len >= ihl + 4 && be16(udp) == 68 &&
	    be16(udp + 2) == 67)
		return NULL;
	return "an IPv4 source outside ips=";
}

static const char *check_arp(const struct switch_ip_net *nets, unsigned n, const uint8_t *arp,
			     size_t len)
{
	if (len < 28 || be16(arp) != 1 || be16(arp + 2) != ET_IPV4 || arp[4] != 6 || arp[5] != 4)
		return "an ARP packet that is not IPv4 over Ethernet";
	if (in_list(nets, n, false, arp + 14) || all_zero(arp + 14, 4))
		return NULL;
	return "an ARP sender IP outside ips=";
}

static const char *check_ipv6(const struct switch_ip_net *nets, unsigned n, const uint8_t *ip,
			      size_t len)
{
	bool unspec, listed;
	unsigned nh;
	size_t off = 40;

	if (len < 40 || ip[0] >> 4 != 6)
		return "a malformed IPv6 header";
	unspec = all_zero(ip + 8, 16);
	listed = !unspec && in_list(nets, n, true, ip + 8);
	if (!unspec && !listed)
		return "an IPv6 source outside ips=";
	nh = ip[6];
	while (nh == IPV6_HOPOPTS || nh == IPV6_ROUTING || nh == IPV6_DSTOPTS) {
		if (off + 2 > len)
			return "IPv6 extension headers too long to check";
		nh = ip[off];
		off += ((size_t)ip[off + 1] + 1) * 8;
	}
	if (nh != IPV6_ICMP)
		return listed ? NULL : "an IPv6 packet from :: that is not ND or MLD";
	if (off + 24 > len) {
		if (off + 1 > len)
			return "IPv6 extension headers too long to check";
		if (ip[off] == ND_NA)
			return "a truncated neighbour advertisement";
	}
	switch (ip[off]) {
	case ND_NA:
		if (unspec)
			return "a neighbour advertisement from ::";
		return in_list(nets, n, true, ip + off + 8) ? NULL
							     : "a neighbour advertisement target "
							       "outside ips=";
	case ND_RS:
	case ND_NS:
	case MLD2_REPORT:
		return NULL;
	default:
		return listed ? NULL : "an ICMPv6 packet from :: that is not ND or MLD";
	}
}

/**
 * switch_ips_check() - whether a guest frame may leave a port with an ips= list.
 * @nets: the port's list
 * @n: its entries (at least one: a port without a list never calls this)
 * @hdr: the frame's first bytes
 * @len: how many: at most SWITCH_IPS_HDR, the whole frame if it is shorter
 *
 * Return: NULL when the frame passes, else why it is dropped (a static string, for the log).
 */
const char *switch_ips_check(const struct switch_ip_net *nets, unsigned n, const uint8_t *hdr,
			     size_t len)
{
	unsigned type;

	if (len < ETH_HLEN)
		return "a runt frame";
	type = be16(hdr + 12);
	switch (type) {
	case ET_IPV4:
		return check_ipv4(nets, n, hdr + ETH_HLEN, len - ETH_HLEN);
	case ET_ARP:
		return check_arp(nets, n, hdr + ETH_HLEN, len - ETH_HLEN);
	case ET_IPV6:
		return check_ipv6(nets, n, hdr + ETH_HLEN, len - ETH_HLEN);
	case ET_8021Q:
	case ET_8021AD:
	case ET_QINQ:
		return "a VLAN-tagged frame (a port with ips= sends untagged)";
	default:
		return NULL;
	}
}
