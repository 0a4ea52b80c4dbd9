/* SPDX-License-Identifier: MIT */
/* switch_lladdr.c - port security inside ARP and ND: the link-layer addresses a frame claims. */
#include "switch_lladdr.h"

#include <string.h>

#include "iov.h"

/*
 * Port security checks a frame's Ethernet source (switch.c); a neighbour learns the MAC of an
 * IP address from inside ARP and ND though, so a guest sending from its own MAC could still
 * point another tenant's address, or any, at a MAC of its choosing. A leaf, the rules only:
 *
 * - ARP over Ethernet (hardware type 1, 6-byte addresses): the sender MAC is one of the port's.
 *   Other hardware types pass (Linux ignores them on Ethernet).
 * - IPv6 ICMP router solicitation, router advertisement, neighbour solicitation and
 *   advertisement: every source or target link-layer address option (types 1, 2, Ethernet's
 *   length of one) carries one of the port's MACs; an option of length 0 (which receivers must
 *   discard the message for, RFC 4861) drops the frame. Options are read through a window
 *   along the frame, so padding them out does not hide one. Hop-by-hop, routing and destination
 *   option headers are walked; a fragment is not looked into (ND is never fragmented:
 *   receivers drop it, RFC 6980). Redirects pass: their target's address is another host's.
 * - Up to two VLAN tags (802.1Q, 802.1ad, 0x9100) are looked behind; deeper, the frame passes
 *   (no host parses it).
 * - Anything short or malformed passes: its receivers drop it.
 */

#define ET_ARP 0x0806
#define ET_IPV6 0x86dd
#define IPV6_HOPOPTS 0
#define IPV6_ROUTING 43
#define IPV6_DSTOPTS 60
#define IPV6_ICMP 58
#define ND_RS 133
#define ND_RA 134
#define ND_NS 135
#define ND_NA 136
#define ND_OPT_SLLA 1
#define ND_OPT_TLLA 2

/* A window on the frame: bytes [at, at + n) of it copied into buf. */
struct rd {
	const struct iovec *iov;
	unsigned iovcnt;
	size_t off, len; /* the frame: len bytes at byte off of iov */
	size_t at, n;
	uint8_t buf[128];
};

/* n bytes (n <= sizeof(buf)) at byte pos of the frame, or NULL past its end. */
static const uint8_t *rd_get(struct rd *r, size_t pos, size_t n)
{
	size_t want;

	if (pos > r->len || n > r->len - pos)
		return NULL;
	if (pos >= r->at && pos + n <= r->at + r->n)
		return r->buf + (pos - r->at);
	want = r->len - pos < sizeof(r->buf) ? r->len - pos : sizeof(r->buf);
	r->at = pos;
	r->n = iov_copy_from(r->iov, r->iovcnt, r->off + pos, r->buf, want);
	return r->n >= n ? r->buf : NULL;
}

static unsigned be16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static bool mac_in(const struct switch_mac_set *m, const uint8_t *mac)
{
	if (!memcmp(m->own, mac, 6))
		return true;
	for (unsigned i = 0; i < m->n_allowed; i++)
		if (!memcmp(m->allowed[i], mac, 6))
			return true;
	return false;
}

static const char *check_arp(struct rd *r, size_t l3, const struct switch_mac_set *m)
{
	const uint8_t *a = rd_get(r, l3, 14);

	if (!a || be16(a) != 1 || a[4] != 6)
		return NULL;
	return mac_in(m, a + 8) ? NULL : "an ARP sender MAC not the port's";
}

static const char *check_nd(struct rd *r, size_t l3, const struct switch_mac_set *m)
{
	const uint8_t *h = rd_get(r, l3, 40), *p;
	size_t o = l3 + 40, end;
	unsigned nh;

	if (!h || h[0] >> 4 != 6)
		return NULL;
	/* What receivers read: the payload length, not padding after it. */
	end = o + be16(h + 4) < r->len ? o + be16(h + 4) : r->len;
	nh = h[6];
	while (nh == IPV6_HOPOPTS || nh == IPV6_ROUTING || nh == IPV6_DSTOPTS) {
		if (!(p = rd_get(r, o, 2)) || o + 2 > end)
			return NULL;
		nh = p[0];
		o += ((size_t)p[1] + 1) * 8;
	}
	if (nh != IPV6_ICMP || !(p = rd_get(r, o, 1)) || o >= end)
		return NULL;
	switch (p[0]) {
	case ND_RS:
		o += 8;
		break;
	case ND_RA:
		o += 16;
		break;
	case ND_NS:
	case ND_NA:
		o += 24;
		break;
	default:
		return NULL;
	}
	/* Options: type, length in units of 8 bytes, data. Each at least 8 bytes: bounded. */
	while (o + 2 <= end && (p = rd_get(r, o, 2))) {
		size_t olen = (size_t)p[1] * 8;

		if (!olen)
			return "an ND option of length 0";
		if ((p[0] == ND_OPT_SLLA || p[0] == ND_OPT_TLLA) && olen == 8 && o + 8 <= end) {
			p = rd_get(r, o, 8);
			if (p && !mac_in(m, p + 2))
				return p[0] == ND_OPT_SLLA ? "an ND source link-layer address not the port's"
							   : "an ND target link-layer address not the port's";
		}
		if (olen > end - o)
			break;
		o += olen;
	}
	return NULL;
}

/**
 * switch_lladdr_check() - whether a port-secured port's ARP or ND frame claims only its MACs.
 * @iov: the frame's buffers
 * @iovcnt: how many
 * @off: the frame's first byte in them
 * @len: its length (at least an Ethernet header)
 * @macs: the MACs the port may send from
 *
 * Reads at most the frame's headers and ND options, a window of them at a time (bounded by
 * len); any thread (the port's).
 *
 * Return: NULL when the frame passes, else why it is dropped (a static string, for the log).
 */
const char *switch_lladdr_check(const struct iovec *iov, unsigned iovcnt, size_t off, size_t len,
				const struct switch_mac_set *macs)
{
	struct rd r = {.iov = iov, .iovcnt = iovcnt, .off = off, .len = len};
	size_t at = 2 * 6;
	const uint8_t *t;
	unsigned type, tags = 0;

	for (;;) {
		if (!(t = rd_get(&r, at, 2)))
			return NULL;
		type = be16(t);
		at += 2;
		if (type != 0x8100 && type != 0x88a8 && type != 0x9100)
			break;
		if (tags++ == 2)
			return NULL;
		at += 2; /* the tag's TCI; its EtherType follows */
	}
	if (type == ET_ARP)
		return check_arp(&r, at, macs);
	if (type == ET_IPV6)
		return check_nd(&r, at, macs);
	return NULL;
}
