/* SPDX-License-Identifier: MIT */
/* pkt_gso.c - offloads done in software: a checksum completed, a TCP/UDP frame cut into segments. */
#include "pkt/pkt.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "lib/iov.h"
#include "pkt/pkt_internal.h"

/* The sender's side of the frame beyond the head copy, read once and in order. */
struct src_pos {
	const struct iovec *iov;
	unsigned cnt;
	size_t off; /* into iov[0] */
};

/* Skip off bytes from the iovecs' start. */
static void src_seek(struct src_pos *s, size_t off)
{
	while (s->cnt && off >= s->iov->iov_len) {
		off -= s->iov->iov_len;
		s->iov++;
		s->cnt--;
	}
	s->off = off;
}

/* Copy the next len bytes into dst; false if the iovecs end first. */
static bool src_read(struct src_pos *s, uint8_t *dst, size_t len)
{
	while (len) {
		size_t n;

		if (!s->cnt)
			return false;
		n = s->iov->iov_len - s->off;
		if (n > len)
			n = len;
		memcpy(dst, (const uint8_t *)s->iov->iov_base + s->off, n);
		dst += n;
		len -= n;
		s->off += n;
		if (s->off == s->iov->iov_len) {
			s->iov++;
			s->cnt--;
			s->off = 0;
		}
	}
	return true;
}

/* Frame bytes [from, from + len) into dst: those below head_len from head, the rest read next. */
static bool frame_read(const uint8_t *head, size_t head_len, struct src_pos *s, size_t from,
		       size_t len, uint8_t *dst)
{
	if (from < head_len) {
		size_t n = head_len - from < len ? head_len - from : len;

		memcpy(dst, head + from, n);
		dst += n;
		len -= n;
	}
	return src_read(s, dst, len);
}

/**
 * pkt_soft_size() - the bytes pkt_soft() writes for an offload.
 * @o: a pkt_offload_parse() result
 *
 * Return: with GSO, every segment's headers plus the payload once (segs * hdr_len + frame_len -
 * hdr_len); without, the frame's length.
 */
size_t pkt_soft_size(const struct pkt_offload *o)
{
	if (o->gso == VIRTIO_NET_HDR_GSO_NONE)
		return o->frame_len;
	return (size_t)o->segs * o->hdr_len + (o->frame_len - o->hdr_len);
}

/* What pkt_soft() relies on to stay inside head and buf, whoever filled o in. */
static bool gso_sane(const struct pkt_offload *o, const uint8_t *head, size_t head_len)
{
	size_t l3_len = o->ipv6 ? PKT_IPV6_HLEN : PKT_IPV4_HLEN;
	size_t l4_len = o->gso == VIRTIO_NET_HDR_GSO_UDP_L4 ? PKT_UDP_HLEN : PKT_TCP_HLEN;
	size_t payload = o->frame_len - o->hdr_len;

	if (o->hdr_len > head_len || o->hdr_len > o->frame_len || !o->gso_size ||
	    (size_t)o->l3_off + l3_len > o->l4_off || (size_t)o->l4_off + l4_len > o->hdr_len ||
	    (size_t)o->l4_off + o->csum_offset + 2 > o->hdr_len)
		return false;
	if (!o->ipv6 && (size_t)o->l3_off + (head[o->l3_off] & 15) * 4 > o->l4_off)
		return false;
	return o->segs == (payload ? (payload + o->gso_size - 1) / o->gso_size : 1);
}

/* IPv4: tot_len, id + i, the header checksum; IPv6: payload_len. len: the segment's length. */
static void seg_fix_ip(const struct pkt_offload *o, uint8_t *s, size_t len, unsigned i)
{
	uint8_t *ip = s + o->l3_off;
	size_t ihl = (size_t)(ip[0] & 15) * 4;
	uint16_t c;

	if (o->ipv6) {
		pkt_put16(ip + 4, (uint16_t)(len - o->l3_off - PKT_IPV6_HLEN));
		return;
	}
	pkt_put16(ip + 2, (uint16_t)(len - o->l3_off));
	pkt_put16(ip + 4, (uint16_t)(pkt_get16(ip + 4) + i));
	memset(ip + 10, 0, 2);
	c = pkt_csum_fold(pkt_csum_add(0, ip, ihl));
	memcpy(ip + 10, &c, 2);
}

/* TCP: seq + i * gso_size; FIN and PSH on the last segment only, CWR on the first only. */
static void seg_fix_tcp(const struct pkt_offload *o, uint8_t *s, unsigned i)
{
	uint8_t *th = s + o->l4_off;

	pkt_put32(th + 4, pkt_get32(th + 4) + (uint32_t)i * o->gso_size);
	if (i + 1u != o->segs)
		th[13] &= (uint8_t)~(PKT_TCP_FIN | PKT_TCP_PSH);
	if (i)
		th[13] &= (uint8_t)~PKT_TCP_CWR;
}

/*
 * The L4 checksum of a segment of len bytes, computed whole: the pseudo-header from the
 * segment's own addresses, protocol and L4 length, then the L4 header and payload as copied.
 * UDP stores a result of 0 as 0xffff (0 would mean "no checksum").
 */
static void seg_l4_csum(const struct pkt_offload *o, uint8_t *s, size_t len)
{
	const uint8_t *ip = s + o->l3_off;
	uint8_t *l4 = s + o->l4_off, ph[40];
	bool udp = o->gso == VIRTIO_NET_HDR_GSO_UDP_L4;
	size_t l4_len = len - o->l4_off, ph_len = 12;
	uint16_t c;

	memset(ph, 0, sizeof(ph));
	if (o->ipv6) {
		memcpy(ph, ip + 8, 32); /* source, destination */
		pkt_put32(ph + 32, (uint32_t)l4_len);
		ph[39] = udp ? PKT_IPPROTO_UDP : PKT_IPPROTO_TCP;
		ph_len = 40;
	} else {
		memcpy(ph, ip + 12, 8);
		ph[9] = udp ? PKT_IPPROTO_UDP : PKT_IPPROTO_TCP;
		pkt_put16(ph + 10, (uint16_t)l4_len);
	}
	if (udp)
		pkt_put16(l4 + 4, (uint16_t)l4_len);
	memset(l4 + o->csum_offset, 0, 2);
	c = pkt_csum_fold(pkt_csum_add(pkt_csum_add(0, ph, ph_len), l4, l4_len));
	if (udp && c == 0)
		c = 0xffff;
	memcpy(l4 + o->csum_offset, &c, 2);
}

/* Without GSO: the frame copied, its checksum completed when asked. */
static unsigned soft_one(const struct pkt_offload *o, const uint8_t *head, size_t head_len,
			 struct src_pos *src, uint8_t *buf, struct pkt_seg *seg)
{
	memcpy(buf, head, head_len);
	if (!src_read(src, buf + head_len, o->frame_len - head_len))
		return 0;
	if (o->csum) {
		uint16_t c = pkt_csum_fold(pkt_csum_add(0, buf + o->csum_start,
							o->frame_len - o->csum_start));

		if (c == 0) /* as Linux's csum_fold() ?: CSUM_MANGLED_0: 0 means none for UDP */
			c = 0xffff;
		memcpy(buf + o->csum_start + o->csum_offset, &c, 2);
	}
	seg[0] = (struct pkt_seg){buf, o->frame_len};
	return 1;
}

/* With GSO: o->segs frames, each the checked headers fixed up and up to gso_size payload bytes. */
static unsigned soft_gso(const struct pkt_offload *o, const uint8_t *head, size_t head_len,
			 struct src_pos *src, uint8_t *buf, struct pkt_seg *seg)
{
	size_t from = o->hdr_len; /* the next payload byte's frame offset */
	uint8_t *s = buf;

	for (unsigned i = 0; i < o->segs; i++) {
		size_t n = o->frame_len - from < o->gso_size ? o->frame_len - from : o->gso_size;
		size_t len = o->hdr_len + n;

		memcpy(s, head, o->hdr_len);
		if (!frame_read(head, head_len, src, from, n, s + o->hdr_len))
			return 0;
		seg_fix_ip(o, s, len, i);
		if (o->gso != VIRTIO_NET_HDR_GSO_UDP_L4)
			seg_fix_tcp(o, s, i);
		seg_l4_csum(o, s, len);
		seg[i] = (struct pkt_seg){s, (uint32_t)len};
		s += len;
		from += n;
	}
	return o->segs;
}

/**
 * pkt_soft() - do a frame's offload in software: complete its checksum or cut it into segments.
 * @o: pkt_offload_parse()'s result for this frame and @head
 * @head: the checked copy of the frame's first bytes that pkt_offload_parse() saw
 * @head_len: its length (bytes beyond o->frame_len are ignored)
 * @iov: the frame, in any number of pieces (the sender's buffers)
 * @iovcnt: number of pieces
 * @off: the frame's first byte in @iov (it may start inside a piece)
 * @buf: where the output frames go, pkt_soft_size() bytes at least
 * @buf_len: @buf's size
 * @seg: one entry per output frame, pointing into @buf
 * @max_segs: @seg's size, o->segs at least
 *
 * Every output header is built from @head; of @iov only the bytes at frame offsets from
 * @head_len on are read, each once, into @buf, and checksums are computed over those copies:
 * what a receiver gets is what was summed, whatever the sender writes meanwhile.
 *
 * Without GSO: one frame, the copy; with NEEDS_CSUM the sum over [csum_start, frame_len), the
 * field's current content (the sender's pseudo-header seed, as virtio has it) included, folded
 * and complemented, is stored at csum_start + csum_offset; a result of 0 is stored as 0xffff,
 * as Linux's skb_checksum_help() does (the same in one's complement for TCP, and UDP's "no
 * checksum" avoided). An odd csum_offset (no protocol has one) gets the same: a value no
 * receiver will find right.
 *
 * With GSO: o->segs frames, each the headers (o->hdr_len bytes) and up to gso_size payload
 * bytes. IPv4: tot_len, id + i (wrapping), header checksum; IPv6: payload_len. TCP: seq + i *
 * gso_size, FIN and PSH kept on the last segment only, CWR on the first only (as Linux's
 * tcp_gso_segment()). UDP (UDP_L4): length. The TCP/UDP checksum is computed whole for each
 * segment (pseudo-header from its own addresses and length; UDP 0 sent as 0xffff).
 *
 * Return: the number of frames written (o->segs); 0 when @buf_len or @max_segs is too small,
 * @iov holds fewer than o->frame_len bytes from @off, or @o does not fit @head.
 */
unsigned pkt_soft(const struct pkt_offload *o, const uint8_t *head, size_t head_len,
		  const struct iovec *iov, unsigned iovcnt, size_t off, uint8_t *buf,
		  size_t buf_len, struct pkt_seg *seg, unsigned max_segs)
{
	struct src_pos src = {iov, iovcnt, 0};
	size_t have = iov_length(iov, iovcnt);
	bool gso = o->gso != VIRTIO_NET_HDR_GSO_NONE;

	if (head_len > o->frame_len)
		head_len = o->frame_len;
	if (have < off || have - off < o->frame_len || max_segs < o->segs || !o->segs ||
	    (gso && !gso_sane(o, head, head_len)) || buf_len < pkt_soft_size(o))
		return 0;
	if (!gso && o->csum && (size_t)o->csum_start + o->csum_offset + 2 > o->frame_len)
		return 0;
	src_seek(&src, off + head_len);
	return gso ? soft_gso(o, head, head_len, &src, buf, seg)
		   : soft_one(o, head, head_len, &src, buf, seg);
}

/**
 * pkt_hdr_for() - the virtio-net header for a receiver that takes the offload as it is.
 * @o: a pkt_offload_parse() result
 * @h: the header to fill (little-endian fields)
 *
 * NEEDS_CSUM with csum_start and csum_offset when o->csum; the GSO type (with ECN), gso_size
 * and hdr_len (the parsed one, not the sender's hint) with GSO; num_buffers 0. The frame that
 * goes with it is o->frame_len bytes long (a GSO frame's Ethernet padding dropped).
 */
void pkt_hdr_for(const struct pkt_offload *o, struct virtio_net_hdr_v1 *h)
{
	bool gso = o->gso != VIRTIO_NET_HDR_GSO_NONE;

	memset(h, 0, sizeof(*h));
	if (o->csum) {
		h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		h->csum_start = htole16(o->csum_start);
		h->csum_offset = htole16(o->csum_offset);
	}
	if (gso) {
		h->gso_type = (uint8_t)(o->gso | (o->ecn ? VIRTIO_NET_HDR_GSO_ECN : 0));
		h->gso_size = htole16(o->gso_size);
		h->hdr_len = htole16(o->hdr_len);
	}
}

/* The receive offload a GSO type needs (ECN apart); 0 for none. */
static uint64_t gso_needs(const struct pkt_offload *o)
{
	switch (o->gso) {
	case VIRTIO_NET_HDR_GSO_TCPV4:
		return BIT_ULL(VIRTIO_NET_F_GUEST_TSO4);
	case VIRTIO_NET_HDR_GSO_TCPV6:
		return BIT_ULL(VIRTIO_NET_F_GUEST_TSO6);
	case VIRTIO_NET_HDR_GSO_UDP_L4:
		return o->ipv6 ? BIT_ULL(VIRTIO_NET_F_GUEST_USO6) : BIT_ULL(VIRTIO_NET_F_GUEST_USO4);
	default:
		return 0;
	}
}

/**
 * pkt_rx_takes() - whether a driver with these receive offloads takes a frame's offload as it is.
 * @guest_offloads: the driver's GUEST_* features now (negotiated, CTRL_GUEST_OFFLOADS)
 * @o: what the frame asks (a pkt_offload_parse() result)
 *
 * GUEST_CSUM for NEEDS_CSUM; for a GSO type its GUEST_TSO4 / TSO6 / USO4 / USO6 too, and
 * GUEST_ECN with the ECN bit: as the spec has it, a driver gets only the offloads it accepted.
 *
 * Return: true: give it the frame with pkt_hdr_for()'s header; false: pkt_soft()'s frames.
 */
bool pkt_rx_takes(uint64_t guest_offloads, const struct pkt_offload *o)
{
	uint64_t need = BIT_ULL(VIRTIO_NET_F_GUEST_CSUM);

	if (o->gso != VIRTIO_NET_HDR_GSO_NONE)
		need |= gso_needs(o);
	if (o->ecn)
		need |= BIT_ULL(VIRTIO_NET_F_GUEST_ECN);
	return (guest_offloads & need) == need;
}

/**
 * pkt_soft_buf_reserve() - a buffer for pkt_soft()'s frames of at least size bytes
 * @b: the caller's buffer (NULL at first: allocated here, at first use)
 * @size: what the frame needs (pkt_soft_size())
 *
 * Grows *b as the frames it meets need (at most a 64 KB frame and PKT_GSO_MAX_SEGS headers):
 * an owner that never meets an offload holds none.
 *
 * Return: *b, or NULL when out of memory (the caller drops the frame; *b stays as it was).
 */
struct pkt_soft_buf *pkt_soft_buf_reserve(struct pkt_soft_buf **b, size_t size)
{
	struct pkt_soft_buf *s = *b;

	if (!s && !(s = *b = calloc(1, sizeof(*s))))
		return NULL;
	if (s->cap < size) {
		uint8_t *n = realloc(s->buf, size);

		if (!n)
			return NULL;
		s->buf = n;
		s->cap = size;
	}
	return s;
}

/**
 * pkt_soft_buf_free() - free a buffer of pkt_soft_buf_reserve() (NULL is fine)
 * @b: the caller's buffer, NULL afterwards
 */
void pkt_soft_buf_free(struct pkt_soft_buf **b)
{
	if (!*b)
		return;
	free((*b)->buf);
	free(*b);
	*b = NULL;
}
