/* SPDX-License-Identifier: MIT */
/* pkt_parse.c - a virtio-net header checked against its frame's headers: what the offload asks, where its headers are. */
#include "pkt/pkt.h"

#include <endian.h>
#include <string.h>

#include "pkt/pkt_internal.h"

#define IPV6_HOPOPTS 0
#define IPV6_ROUTING 43
#define IPV6_DSTOPTS 60

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

#define PROTO_ANY 0xff	  /* parse_ipv4/6(): any protocol (255 is reserved) */
#define PKT_CSUM_L3_NEED (14 + 2 * 4 + 60) /* Ethernet, two tags, the longest IPv4 header */
#ifndef IPV6_FRAGMENT
#define IPV6_FRAGMENT 44 /* IPv6's fragment header: a fragment has no whole L4 header */
#endif

/**
 * pkt_offload_head_need() - how many of a frame's first bytes pkt_offload_parse() needs in head.
 * @h: the frame's virtio-net header (as the sender wrote it: not yet checked)
 * @frame_len: the frame's length, the header excluded
 *
 * NEEDS_CSUM alone: up to the checksum field (the seed pkt_soft() sums is then the checked
 * copy's), and at least Ethernet, two tags and the longest IPv4 header (the position check
 * reads them). A GSO type: csum_start, which must point at the TCP or UDP header, plus the longest
 * TCP header (60 bytes) or the checksum field if that ends later; everything before csum_start
 * (Ethernet, VLAN tags, IP and IPv6 extension headers) is then in head too, and
 * pkt_offload_parse() checks that it is consistent.
 *
 * Return: the byte count, at most PKT_HEAD_MAX and @frame_len; 0 when no offload is asked.
 */
size_t pkt_offload_head_need(const struct virtio_net_hdr_v1 *h, size_t frame_len)
{
	size_t start = le16toh(h->csum_start);
	size_t csum_end = start + le16toh(h->csum_offset) + 2;
	size_t need = 0;

	if ((h->gso_type & ~VIRTIO_NET_HDR_GSO_ECN) != VIRTIO_NET_HDR_GSO_NONE)
		need = start + PKT_TCP_HLEN_MAX > csum_end ? start + PKT_TCP_HLEN_MAX : csum_end;
	else if (h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)
		need = csum_end > PKT_CSUM_L3_NEED ? csum_end : PKT_CSUM_L3_NEED;
	return min_size(min_size(need, PKT_HEAD_MAX), frame_len);
}

/* The flags and gso_type alone: a known type, ECN only on TCP, GSO with a checksum and a size. */
static enum pkt_bad parse_type(const struct virtio_net_hdr_v1 *h, struct pkt_offload *o)
{
	uint8_t type = h->gso_type & ~VIRTIO_NET_HDR_GSO_ECN;

	o->csum = h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM;
	o->gso = type;
	o->ecn = h->gso_type & VIRTIO_NET_HDR_GSO_ECN;
	if (type != VIRTIO_NET_HDR_GSO_NONE && type != VIRTIO_NET_HDR_GSO_TCPV4 &&
	    type != VIRTIO_NET_HDR_GSO_TCPV6 && type != VIRTIO_NET_HDR_GSO_UDP_L4)
		return PKT_BAD_GSO_TYPE; /* UFO (3) included: nobody should still send it */
	if (o->ecn && (type == VIRTIO_NET_HDR_GSO_NONE || type == VIRTIO_NET_HDR_GSO_UDP_L4))
		return PKT_BAD_GSO_TYPE;
	if (type == VIRTIO_NET_HDR_GSO_NONE)
		return PKT_OK;
	if (!o->csum)
		return PKT_BAD_GSO_CSUM;
	return o->gso_size ? PKT_OK : PKT_BAD_GSO_SIZE;
}

/* Ethernet and at most two VLAN tags (802.1Q, 802.1ad): the ethertype and where L3 starts. */
static enum pkt_bad parse_l2(const uint8_t *head, size_t head_len, size_t *l3, uint16_t *type)
{
	size_t off = 12;

	for (unsigned tags = 0;; tags++) {
		if (off + 2 > head_len)
			return PKT_BAD_L2;
		*type = pkt_get16(head + off);
		if (*type != PKT_ETH_P_8021Q && *type != PKT_ETH_P_8021AD)
			break;
		if (tags == 2)
			return PKT_BAD_L2;
		off += PKT_VLAN_HLEN;
	}
	*l3 = off + 2;
	return PKT_OK;
}

/*
 * IPv4 at l3: the whole header in head, no fragment, protocol proto, tot_len covering the header
 * and inside the frame. *l4: the L4 header; *end: where the IP packet ends (Ethernet padding
 * after it is no part of the offload).
 */
static enum pkt_bad parse_ipv4(const uint8_t *head, size_t head_len, size_t frame_len, size_t l3,
			       uint8_t proto, size_t *l4, size_t *end)
{
	const uint8_t *ip = head + l3;
	size_t ihl, tot;

	if (l3 + PKT_IPV4_HLEN > head_len || ip[0] >> 4 != 4)
		return PKT_BAD_L3;
	ihl = (size_t)(ip[0] & 15) * 4;
	tot = pkt_get16(ip + 2);
	if (ihl < PKT_IPV4_HLEN || l3 + ihl > head_len || tot < ihl || l3 + tot > frame_len)
		return PKT_BAD_L3;
	if ((pkt_get16(ip + 6) & 0x3fff) || (proto != PROTO_ANY && ip[9] != proto))
		return PKT_BAD_L3; /* MF or an offset: a fragment */
	*l4 = l3 + ihl;
	*end = l3 + tot;
	return PKT_OK;
}

/*
 * IPv6 at l3: payload_len non-zero (0 is a jumbogram) and inside the frame, the next-header
 * chain through hop-by-hop, routing and destination options headers (each in head) to proto.
 * A fragment header ends the chain at 44: refused. A routing header with segments left is
 * refused too: the checksum's pseudo-header would take its destination from inside it.
 */
static enum pkt_bad parse_ipv6(const uint8_t *head, size_t head_len, size_t frame_len, size_t l3,
			       uint8_t proto, size_t *l4, size_t *end)
{
	const uint8_t *ip = head + l3;
	size_t plen, off = l3 + PKT_IPV6_HLEN;
	uint8_t nh;

	if (off > head_len || ip[0] >> 4 != 6)
		return PKT_BAD_L3;
	plen = pkt_get16(ip + 4);
	if (plen == 0 || off + plen > frame_len)
		return PKT_BAD_L3;
	nh = ip[6];
	while (nh == IPV6_HOPOPTS || nh == IPV6_ROUTING || nh == IPV6_DSTOPTS) {
		if (off + 8 > head_len || (nh == IPV6_ROUTING && head[off + 3] != 0))
			return PKT_BAD_L3;
		nh = head[off];
		off += ((size_t)head[off + 1] + 1) * 8;
	}
	if ((proto != PROTO_ANY && nh != proto) || nh == IPV6_FRAGMENT || off > head_len)
		return PKT_BAD_L3;
	*l4 = off;
	*end = l3 + PKT_IPV6_HLEN + plen;
	return PKT_OK;
}

/* The TCP or UDP header at o->l4_off, where csum_start points, whole in head and the packet. */
static enum pkt_bad parse_l4(const uint8_t *head, size_t head_len, size_t end,
			     struct pkt_offload *o)
{
	size_t l4 = o->l4_off, len = PKT_UDP_HLEN;

	if (o->csum_start != l4)
		return PKT_BAD_L4;
	if (o->gso == VIRTIO_NET_HDR_GSO_UDP_L4) {
		if (o->csum_offset != PKT_UDP_CSUM_OFF)
			return PKT_BAD_L4;
	} else {
		if (o->csum_offset != PKT_TCP_CSUM_OFF || l4 + PKT_TCP_HLEN > head_len)
			return PKT_BAD_L4;
		len = (size_t)(head[l4 + 12] >> 4) * 4;
		if (len < PKT_TCP_HLEN)
			return PKT_BAD_L4;
	}
	if (l4 + len > head_len || l4 + len > end)
		return PKT_BAD_L4;
	o->hdr_len = (uint16_t)(l4 + len);
	return PKT_OK;
}

/*
 * NEEDS_CSUM without GSO: the checksum field must lie behind the IP header (in the L4 header or
 * after it), never over bytes the switch checked and forwards as checked (MACs, VLAN tags,
 * EtherType, IP addresses) nor over a tag a trunk inserts: Ethernet with at most two tags, an
 * unfragmented IPv4 or IPv6 packet of any protocol, csum_start at or behind its L4 header.
 */
static enum pkt_bad parse_csum_pos(const uint8_t *head, size_t head_len, size_t frame_len,
				   const struct pkt_offload *o)
{
	size_t l3, l4 = 0, end = 0;
	uint16_t type;
	enum pkt_bad why = parse_l2(head, head_len, &l3, &type);

	if (why)
		return why;
	if (type == PKT_ETH_P_IPV4)
		why = parse_ipv4(head, head_len, frame_len, l3, PROTO_ANY, &l4, &end);
	else if (type == PKT_ETH_P_IPV6)
		why = parse_ipv6(head, head_len, frame_len, l3, PROTO_ANY, &l4, &end);
	else
		return PKT_BAD_L2;
	if (why)
		return why;
	return o->csum_start >= l4 ? PKT_OK : PKT_BAD_CSUM_POS;
}

/* The IP header the GSO type names, behind L2: IPv4 for TCPV4, IPv6 for TCPV6, either for USO. */
static enum pkt_bad parse_l3(const uint8_t *head, size_t head_len, size_t frame_len,
			     struct pkt_offload *o, size_t *end)
{
	uint8_t proto = o->gso == VIRTIO_NET_HDR_GSO_UDP_L4 ? PKT_IPPROTO_UDP : PKT_IPPROTO_TCP;
	size_t l3, l4 = 0;
	uint16_t type;
	enum pkt_bad why = parse_l2(head, head_len, &l3, &type);

	if (why)
		return why;
	if (type == PKT_ETH_P_IPV4 && o->gso != VIRTIO_NET_HDR_GSO_TCPV6)
		why = parse_ipv4(head, head_len, frame_len, l3, proto, &l4, end);
	else if (type == PKT_ETH_P_IPV6 && o->gso != VIRTIO_NET_HDR_GSO_TCPV4)
		why = parse_ipv6(head, head_len, frame_len, l3, proto, &l4, end);
	else
		return PKT_BAD_L2;
	o->ipv6 = type == PKT_ETH_P_IPV6;
	o->l3_off = (uint16_t)l3;
	o->l4_off = (uint16_t)l4;
	return why;
}

/* A GSO frame: its headers, then how many segments of gso_size its payload makes. */
static enum pkt_bad parse_gso(const uint8_t *head, size_t head_len, size_t frame_len,
			      struct pkt_offload *o)
{
	size_t end = 0, payload, segs;
	enum pkt_bad why;

	if (frame_len > PKT_GSO_FRAME_MAX)
		return PKT_BAD_L3;
	why = parse_l3(head, head_len, frame_len, o, &end);
	if (!why)
		why = parse_l4(head, head_len, end, o);
	if (why)
		return why;
	payload = end - o->hdr_len;
	segs = payload ? (payload + o->gso_size - 1) / o->gso_size : 1;
	if (segs > PKT_GSO_MAX_SEGS)
		return PKT_BAD_SEGS;
	o->segs = (uint16_t)segs;
	o->frame_len = (uint32_t)end;
	return PKT_OK;
}

/**
 * pkt_offload_parse() - check a virtio-net header against its frame; say what offload it asks.
 * @h: the header (little-endian fields, as the sender wrote it)
 * @head: a copy of the frame's first @head_len bytes, which the caller took once
 * @head_len: at least pkt_offload_head_need() bytes (or the whole frame if shorter); only the
 *            first PKT_HEAD_MAX are looked at
 * @frame_len: the whole frame's length
 * @o: the result, written only on PKT_OK
 *
 * No offload: accepted as it is. NEEDS_CSUM alone: the checksum field must lie inside the frame
 * (nothing else is parsed: the checksum runs from csum_start to the frame's end, as virtio says).
 * A GSO type (TCPV4, TCPV6, UDP_L4; ECN with TCP only) needs NEEDS_CSUM, a gso_size, and headers
 * that match it inside @head: Ethernet with at most two VLAN tags, an unfragmented IPv4 or IPv6
 * packet (IPv6 extension headers 0, 43, 60 walked), TCP or UDP at csum_start with csum_offset
 * 16 or 6. The sender's hdr_len is only a hint and is ignored: o->hdr_len is what the headers
 * say. Ethernet padding after the IP packet is dropped (o->frame_len ends the IP packet).
 * Nothing is read beyond @head_len or @frame_len.
 *
 * Return: PKT_OK, or why the header was refused.
 */
enum pkt_bad pkt_offload_parse(const struct virtio_net_hdr_v1 *h, const uint8_t *head,
			       size_t head_len, size_t frame_len, struct pkt_offload *o)
{
	struct pkt_offload r;
	enum pkt_bad why;

	memset(&r, 0, sizeof(r));
	head_len = min_size(min_size(head_len, frame_len), PKT_HEAD_MAX);
	r.gso_size = le16toh(h->gso_size);
	why = parse_type(h, &r);
	if (r.csum) {
		r.csum_start = le16toh(h->csum_start);
		r.csum_offset = le16toh(h->csum_offset);
	}
	if (r.gso == VIRTIO_NET_HDR_GSO_NONE)
		r.gso_size = 0;
	if (!why && frame_len > UINT32_MAX)
		why = PKT_BAD_L2;
	if (!why && r.csum && (size_t)r.csum_start + r.csum_offset + 2 > frame_len)
		why = PKT_BAD_CSUM_POS;
	r.segs = 1;
	r.frame_len = (uint32_t)frame_len;
	if (!why && r.gso != VIRTIO_NET_HDR_GSO_NONE)
		why = parse_gso(head, head_len, frame_len, &r);
	else if (!why && r.csum)
		why = parse_csum_pos(head, head_len, frame_len, &r);
	if (!why)
		*o = r;
	return why;
}

/**
 * pkt_bad_name() - a short text for a refusal reason (for logs and counters).
 * @why: the reason
 *
 * Return: a constant string; "?" for a value that is no reason.
 */
const char *pkt_bad_name(enum pkt_bad why)
{
	static const char *const names[PKT_BAD_COUNT] = {
	    [PKT_OK] = "accepted",
	    [PKT_BAD_CSUM_POS] = "checksum position outside the frame or before its L4 header",
	    [PKT_BAD_GSO_TYPE] = "unknown or unsupported GSO type",
	    [PKT_BAD_GSO_CSUM] = "GSO without NEEDS_CSUM",
	    [PKT_BAD_GSO_SIZE] = "GSO with gso_size 0",
	    [PKT_BAD_L2] = "not Ethernet (VLAN) with the IP version the GSO type says",
	    [PKT_BAD_L3] = "IP header short, fragmented, or with lengths outside the frame",
	    [PKT_BAD_L4] = "no TCP/UDP header where csum_start points, or a short one",
	    [PKT_BAD_SEGS] = "too many segments",
	};

	return (unsigned)why < PKT_BAD_COUNT ? names[why] : "?";
}
