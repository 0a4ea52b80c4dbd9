/* SPDX-License-Identifier: MIT */
/* switch_lladdr.c - port security inside ARP and ND: the link-layer addresses a frame claims. */
#include "backend/switch/switch_lladdr.h"

#include <stdlib.h>
#include <string.h>

#include "lib/iov.h"

/*
 * Port security checks a frame's Ethernet source (switch.c); a neighbour learns the MAC of an
 * IP address from inside ARP and ND though, so a guest sending from its own MAC could still
 * point another tenant's address, or any, at a MAC of its choosing. A leaf, the rules only,
 * on a copy of the frame's first bytes in vnetd's memory (the switch forwards that copy, so
 * the guest cannot change what was read):
 *
 * - ARP with 6-byte hardware addresses, whatever its hardware type (Linux takes types 1 and 6
 *   on Ethernet, others more): the sender MAC is one of the port's. An ARP packet with another
 *   address length, or too short for its sender MAC, is dropped (no receiver takes it).
 * - IPv6 ICMP router solicitation, router advertisement, neighbour solicitation and
 *   advertisement: every source or target link-layer address option (types 1, 2) is
 *   Ethernet's (length 1: 8 bytes) and carries one of the port's MACs. Dropped: an option of
 *   length 0 (receivers must discard the message, RFC 4861), a link-layer address option of
 *   another length, an option running past the message, a message shorter than its fixed part,
 *   a payload length past the frame. Options are read along the whole message, so padding them
 *   out does not hide one. Hop-by-hop, routing and destination option headers are walked (one
 *   running past the payload drops the frame); a fragment is not looked into (ND is never
 *   fragmented: receivers drop it, RFC 6980). Redirects pass: their target's address is
 *   another host's.
 * - Up to two VLAN tags (802.1Q, 802.1ad, 0x9100) are looked behind; a frame with more is
 *   dropped (the rules do not read it, so it may not leave a port-secured port).
 * - Other EtherTypes, and IPv6 whose next header is neither ICMPv6 nor an option header, pass.
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
#define MAX_TAGS 2

/* The frame as the caller copied it: its first `have` bytes of `len`. */
struct rd {
	const uint8_t *f;
	size_t have, len;
	size_t need; /* > have: a read went past the copy (within the frame) */
};

/* A marker a rule returns for "the copy is too short" (never logged). */
static const char more[] = "more";

/* n bytes at byte pos of the frame, or NULL: past its end, or past the copy (r->need set). */
static const uint8_t *rd_get(struct rd *r, size_t pos, size_t n)
{
	if (pos > r->len || n > r->len - pos)
		return NULL;
	if (pos + n > r->have) {
		if (pos + n > r->need)
			r->need = pos + n;
		return NULL;
	}
	return r->f + pos;
}

/* What a rule answers when rd_get() gave NULL: ask for more, or `why` (the frame ends there). */
static const char *rd_fail(const struct rd *r, const char *why)
{
	return r->need > r->have ? more : why;
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
	const uint8_t *a = rd_get(r, l3, 14); /* hardware type .. sender hardware address */

	if (!a)
		return rd_fail(r, "a truncated ARP packet");
	if (a[4] != 6)
		return "an ARP packet whose hardware addresses are not 6 bytes";
	return mac_in(m, a + 8) ? NULL : "an ARP sender MAC not the port's";
}

/* The ND options from byte o to end (the message's end): each link-layer address the port's. */
static const char *check_nd_options(struct rd *r, size_t o, size_t end,
				    const struct switch_mac_set *m)
{
	const uint8_t *p;

	/* Each option at least 8 bytes: bounded by the message. */
	while (o < end) {
		size_t olen;

		if (end - o < 2)
			return "a truncated ND option";
		if (!(p = rd_get(r, o, 2)))
			return rd_fail(r, "a truncated ND option");
		olen = (size_t)p[1] * 8;
		if (!olen)
			return "an ND option of length 0";
		if (olen > end - o)
			return "an ND option running past its message";
		if (p[0] == ND_OPT_SLLA || p[0] == ND_OPT_TLLA) {
			if (olen != 8)
				return "an ND link-layer address option not Ethernet's";
			if (!(p = rd_get(r, o, 8)))
				return rd_fail(r, "a truncated ND option");
			if (!mac_in(m, p + 2))
				return p[0] == ND_OPT_SLLA ? "an ND source link-layer address not the port's"
							   : "an ND target link-layer address not the port's";
		}
		o += olen;
	}
	return NULL;
}

static const char *check_nd(struct rd *r, size_t l3, const struct switch_mac_set *m)
{
	const uint8_t *h = rd_get(r, l3, 40), *p;
	size_t o = l3 + 40, end;
	unsigned nh;

	if (!h)
		return rd_fail(r, "a truncated IPv6 header");
	if (h[0] >> 4 != 6)
		return "an IPv6 EtherType without an IPv6 header";
	/* What receivers read: the payload length, not padding after it (nor more than there is). */
	if (be16(h + 4) > r->len - o)
		return "an IPv6 payload longer than its frame";
	end = o + be16(h + 4);
	nh = h[6];
	while (nh == IPV6_HOPOPTS || nh == IPV6_ROUTING || nh == IPV6_DSTOPTS) {
		if (o > end || end - o < 2)
			return "IPv6 option headers running past the payload";
		if (!(p = rd_get(r, o, 2)))
			return rd_fail(r, "a truncated IPv6 option header");
		nh = p[0];
		o += ((size_t)p[1] + 1) * 8;
	}
	if (nh != IPV6_ICMP)
		return NULL;
	if (o >= end)
		return "an ICMPv6 header past the payload";
	if (!(p = rd_get(r, o, 1)))
		return rd_fail(r, "a truncated ICMPv6 header");
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
	if (o > end)
		return "a truncated neighbour discovery message";
	return check_nd_options(r, o, end, m);
}

/* The rules on r's frame: NULL, a reason, or `more`. */
static const char *judge(struct rd *r, const struct switch_mac_set *macs)
{
	size_t at = 2 * 6;
	const uint8_t *t;
	unsigned type, tags = 0;

	for (;;) {
		if (!(t = rd_get(r, at, 2)))
			return rd_fail(r, "a frame that ends in its VLAN tags");
		type = be16(t);
		at += 2;
		if (type != 0x8100 && type != 0x88a8 && type != 0x9100)
			break;
		if (++tags > MAX_TAGS)
			return "a frame with more than two VLAN tags";
		at += 2; /* the tag's TCI; its EtherType follows */
	}
	if (type == ET_ARP)
		return check_arp(r, at, macs);
	if (type == ET_IPV6)
		return check_nd(r, at, macs);
	return NULL;
}

/**
 * switch_lladdr_judge() - whether a port-secured port's frame claims only its MACs in ARP and ND.
 * @frame: the caller's copy of the frame's first @have bytes
 * @have: how many it holds (at most @len)
 * @len: the frame's length
 * @macs: the MACs the port may send from
 * @why: set when it drops the frame: why (a static string, for the log)
 * @need: set when the copy is too short: how many of the frame's first bytes to copy (have < *need <= len)
 *
 * Reads nothing outside frame[0 .. have); at most the frame's headers and ND options, a bounded
 * walk. Any thread (the port's).
 *
 * Return: SWITCH_LLADDR_PASS, SWITCH_LLADDR_DROP (@why), or SWITCH_LLADDR_MORE (@need).
 */
enum switch_lladdr_verdict switch_lladdr_judge(const uint8_t *frame, size_t have, size_t len,
					       const struct switch_mac_set *macs, const char **why,
					       size_t *need)
{
	struct rd r = {.f = frame, .have = have < len ? have : len, .len = len};
	const char *w = judge(&r, macs);

	if (w == more) {
		*need = r.need;
		return SWITCH_LLADDR_MORE;
	}
	if (w) {
		*why = w;
		return SWITCH_LLADDR_DROP;
	}
	return SWITCH_LLADDR_PASS;
}

/**
 * switch_lladdr_check() - switch_lladdr_judge() of a frame in buffers, read as the switch does.
 * @iov: the frame's buffers
 * @iovcnt: how many
 * @off: the frame's first byte in them
 * @len: its length (at least an Ethernet header)
 * @macs: the MACs the port may send from
 *
 * The frame's Ethernet header is copied first, then what the rules ask for behind it (each byte
 * read once): the same steps as the switch's, for tests and the fuzzer.
 *
 * Return: NULL when the frame passes, else why it is dropped (a static string).
 */
const char *switch_lladdr_check(const struct iovec *iov, unsigned iovcnt, size_t off, size_t len,
				const struct switch_mac_set *macs)
{
	uint8_t *copy = malloc(len ? len : 1);
	size_t have = len < 14 ? len : 14, need = 0;
	const char *why = NULL;
	enum switch_lladdr_verdict v;

	if (!copy)
		return "out of memory";
	have = iov_copy_from(iov, iovcnt, off, copy, have);
	while ((v = switch_lladdr_judge(copy, have, len, macs, &why, &need)) == SWITCH_LLADDR_MORE) {
		if (need <= have || need > len) {
			why = "a judge that asked for nothing more";
			break;
		}
		have += iov_copy_from(iov, iovcnt, off + have, copy + have, need - have);
		if (have < need) {
			why = "buffers shorter than the frame";
			break;
		}
	}
	free(copy);
	return v == SWITCH_LLADDR_PASS ? NULL : why;
}
