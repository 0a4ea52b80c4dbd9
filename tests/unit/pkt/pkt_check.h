/* SPDX-License-Identifier: MIT */
/* pkt_check.h - what pkt_soft()'s output must be, checked by the book (RFC 1071 sums word by word): the unit tests' and the fuzzer's oracle. */
#ifndef VNETD_TEST_PKT_CHECK_H
#define VNETD_TEST_PKT_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pkt/pkt.h"
#include "pkt/pkt_internal.h"

/* ref_add() - RFC 1071 by the book: big-endian words, an odd last byte padded, carries folded. */
static inline uint32_t ref_add(uint32_t acc, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i += 2) {
		acc += (uint32_t)p[i] << 8 | (i + 1 < len ? p[i + 1] : 0);
		acc = (acc & 0xffff) + (acc >> 16);
	}
	return acc;
}

/* ref_zero() - a one's-complement sum that is zero (0xffff or 0): the data checks out. */
static inline int ref_zero(uint32_t acc)
{
	return acc % 0xffff == 0;
}

/* ref_pseudo() - the pseudo-header's sum for l4_len bytes of L4 behind the IP header ip. */
static inline uint32_t ref_pseudo(const uint8_t *ip, int ipv6, uint8_t proto, size_t l4_len)
{
	uint32_t acc = ref_add(0, ip + (ipv6 ? 8 : 12), ipv6 ? 32 : 8);

	return acc + proto + (uint32_t)(l4_len >> 16) + (uint32_t)(l4_len & 0xffff); /* < 2^18 */
}

/* Bytes [a, b) of x and y equal, but for the ranges listed as skip pairs (relative offsets). */
static inline int ref_same_but(const uint8_t *x, const uint8_t *y, size_t len, const size_t *skip,
			       unsigned nskip)
{
	for (size_t i = 0; i < len; i++) {
		int skipped = 0;

		for (unsigned k = 0; k < nskip; k++)
			skipped |= i >= skip[2 * k] && i < skip[2 * k + 1];
		if (!skipped && x[i] != y[i])
			return 0;
	}
	return 1;
}

/* Segment i's IP header against the original's: lengths, id, header checksum; all else kept. */
static inline const char *ref_check_ip(const struct pkt_offload *o, const uint8_t *frame,
				       const uint8_t *s, size_t len, unsigned i)
{
	const uint8_t *ip = s + o->l3_off, *ip0 = frame + o->l3_off;
	size_t hl = o->l4_off - o->l3_off;
	static const size_t v4_skip[] = {2, 6, 10, 12}, v6_skip[] = {4, 6};

	if (o->ipv6) {
		if (pkt_get16(ip + 4) != len - o->l3_off - 40)
			return "IPv6 payload_len";
		return ref_same_but(ip, ip0, hl, v6_skip, 1) ? NULL : "IPv6 header changed";
	}
	if (pkt_get16(ip + 2) != len - o->l3_off)
		return "IPv4 tot_len";
	if (pkt_get16(ip + 4) != (uint16_t)(pkt_get16(ip0 + 4) + i))
		return "IPv4 id";
	if (!ref_zero(ref_add(0, ip, (size_t)(ip[0] & 15) * 4)))
		return "IPv4 header checksum";
	return ref_same_but(ip, ip0, hl, v4_skip, 2) ? NULL : "IPv4 header changed";
}

/* Segment i's TCP or UDP header: seq and flags (TCP), length (UDP), the checksum; all else kept. */
static inline const char *ref_check_l4(const struct pkt_offload *o, const uint8_t *frame,
				       const uint8_t *s, size_t len, unsigned i)
{
	const uint8_t *l4 = s + o->l4_off, *l40 = frame + o->l4_off;
	size_t l4_len = len - o->l4_off, hl = o->hdr_len - o->l4_off;
	int udp = o->gso == VIRTIO_NET_HDR_GSO_UDP_L4;
	static const size_t tcp_skip[] = {4, 8, 13, 14, 16, 18}, udp_skip[] = {4, 8};
	uint8_t flags = l40[13];
	uint32_t sum = ref_pseudo(s + o->l3_off, o->ipv6, udp ? 17 : 6, l4_len);

	if (!ref_zero(ref_add(sum, l4, l4_len)))
		return "L4 checksum";
	if (udp) {
		if (pkt_get16(l4 + 4) != l4_len || pkt_get16(l4 + 6) == 0)
			return "UDP length or checksum 0";
		return ref_same_but(l4, l40, hl, udp_skip, 1) ? NULL : "UDP header changed";
	}
	if (pkt_get32(l4 + 4) != pkt_get32(l40 + 4) + (uint32_t)i * o->gso_size)
		return "TCP seq";
	if (i + 1u != o->segs)
		flags &= (uint8_t)~0x09; /* FIN, PSH: the last segment's */
	if (i)
		flags &= (uint8_t)~0x80; /* CWR: the first's */
	if (l4[13] != flags)
		return "TCP flags";
	return ref_same_but(l4, l40, hl, tcp_skip, 3) ? NULL : "TCP header changed";
}

/*
 * ref_check_gso() - pkt_soft()'s n segments of a GSO frame (frame: the bytes pkt_soft() was to
 * take, head copy first): o->segs of them, each the headers and up to gso_size bytes of the
 * payload in order, every length, id, seq, flag and checksum right. NULL: all good.
 */
static inline const char *ref_check_gso(const struct pkt_offload *o, const uint8_t *frame,
					const struct pkt_seg *seg, unsigned n)
{
	size_t from = o->hdr_len;
	const char *why = NULL;

	if (n != o->segs)
		return "segment count";
	for (unsigned i = 0; i < n && !why; i++) {
		const uint8_t *s = seg[i].data;
		size_t len = seg[i].len, want = o->frame_len - from;

		if (want > o->gso_size)
			want = o->gso_size;
		if (len < o->hdr_len || len - o->hdr_len != want)
			return "segment length";
		if (memcmp(s + o->hdr_len, frame + from, want))
			return "payload";
		if (memcmp(s, frame, o->l3_off))
			return "Ethernet header changed";
		why = ref_check_ip(o, frame, s, len, i);
		if (!why)
			why = ref_check_l4(o, frame, s, len, i);
		from += want;
	}
	return why ? why : from == o->frame_len ? NULL : "payload total";
}

/*
 * ref_check_one() - pkt_soft()'s frame without GSO: the frame as it was but for the checksum
 * field, which holds the complemented sum from csum_start with the sender's seed (the field's
 * content before) in it. Where the field sits at an even offset from csum_start (every protocol's
 * does), the sum with the seed then checks out. NULL: all good.
 */
static inline const char *ref_check_one(const struct pkt_offload *o, const uint8_t *frame,
					const struct pkt_seg *seg, unsigned n)
{
	size_t at = (size_t)o->csum_start + o->csum_offset;
	size_t skip[2] = {at, at + 2};
	uint16_t want;

	if (n != 1 || seg[0].len != o->frame_len)
		return "one frame of frame_len";
	if (!ref_same_but(seg[0].data, frame, o->frame_len, skip, o->csum ? 1 : 0))
		return "frame changed";
	if (!o->csum)
		return NULL;
	want = (uint16_t)~ref_add(0, frame + o->csum_start, o->frame_len - o->csum_start);
	if (pkt_get16(seg[0].data + at) != (want ? want : 0xffff)) /* 0 is sent as 0xffff */
		return "completed checksum";
	if (!(o->csum_offset & 1) &&
	    !ref_zero(ref_add(pkt_get16(frame + at), seg[0].data + o->csum_start,
			      o->frame_len - o->csum_start)))
		return "completed checksum does not check out";
	return NULL;
}

#endif
