/* SPDX-License-Identifier: MIT */
/* test_pkt.c - offloads in software: checksums, the header checked against the frame, segmentation, checksum completion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pkt/pkt.h"
#include "pkt_check.h"
#include "pkt/pkt_internal.h"

#define FRAME_MAX 70000
#define SEQ0 0xffffd000u /* wraps within a 64 KB frame */
#define ID0 0xfff0	 /* so does the IPv4 id */
#define CSUM VIRTIO_NET_HDR_F_NEEDS_CSUM
#define TCP_FLAGS_ALL (0x80 | 0x10 | 0x08 | 0x01) /* CWR ACK PSH FIN */

static uint8_t frame[FRAME_MAX];
static struct pkt_seg segs[PKT_GSO_MAX_SEGS];

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* What a test frame holds: the layers and their options. */
struct spec {
	int ipv6, udp, vlans; /* vlans: 0 to 2 tags (3: one too many) */
	int ext;	      /* IPv6 ext. headers: 1 dst opts; 2 hop-by-hop, routing; 3 all */
	int tcp_opt;	      /* TCP option bytes (multiple of 4) */
	size_t payload, pad;  /* pad: Ethernet padding after the IP packet */
	uint8_t tcp_flags;
};

static size_t build_l2(const struct spec *sp, uint8_t *f)
{
	static const uint8_t macs[12] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};
	size_t off = 12;

	memcpy(f, macs, 12);
	for (int i = 0; i < sp->vlans; i++, off += 4) {
		pkt_put16(f + off, i == 0 && sp->vlans >= 2 ? 0x88a8 : 0x8100);
		pkt_put16(f + off + 2, (uint16_t)(100 + i));
	}
	pkt_put16(f + off, sp->ipv6 ? 0x86dd : 0x0800);
	return off + 2;
}

/* IPv6 extension headers at p, the last naming proto; returns their length. */
static size_t build_ext(int ext, uint8_t *p, uint8_t proto, uint8_t *first)
{
	static const uint8_t chain[3][3] = {{60}, {0, 43}, {0, 43, 60}};
	size_t off = 0;

	*first = ext ? chain[ext - 1][0] : proto;
	for (int i = 0; i < ext; i++) {
		uint8_t type = chain[ext - 1][i], len = type == 60 && ext == 3 ? 1 : 0;

		memset(p + off, 0, (len + 1u) * 8);
		p[off] = i + 1 < ext ? chain[ext - 1][i + 1] : proto;
		p[off + 1] = len;
		if (type == 43)
			p[off + 2] = 4; /* a segment routing header with no segments left */
		else
			p[off + 2] = 1; /* PadN */
		off += (len + 1u) * 8;
	}
	return off;
}

static size_t build_l3(const struct spec *sp, uint8_t *ip, size_t l4_len)
{
	uint8_t proto = sp->udp ? 17 : 6, nh;
	size_t ext;

	if (!sp->ipv6) {
		static const uint8_t v4[20] = {0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 0, 0, 0,
					       10, 0, 0, 1, 10, 0, 0, 2};

		memcpy(ip, v4, 20);
		pkt_put16(ip + 2, (uint16_t)(20 + l4_len));
		pkt_put16(ip + 4, ID0);
		ip[9] = proto;
		return 20;
	}
	memset(ip, 0, 40);
	ip[0] = 0x60;
	ip[7] = 64;
	ip[8] = 0x20, ip[9] = 0x01, ip[10] = 0x0d, ip[11] = 0xb8, ip[23] = 1;
	ip[24] = 0x20, ip[25] = 0x01, ip[26] = 0x0d, ip[27] = 0xb8, ip[39] = 2;
	ext = build_ext(sp->ext, ip + 40, proto, &nh);
	ip[6] = nh;
	pkt_put16(ip + 4, (uint16_t)(ext + l4_len));
	return 40 + ext;
}

/* The pseudo-header's folded sum, not complemented: the seed Linux leaves in the check field. */
static uint16_t fold16(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static uint16_t seed_of(const uint8_t *ip, int ipv6, uint8_t proto, size_t l4_len)
{
	return fold16(ref_pseudo(ip, ipv6, proto, l4_len));
}

static void build_l4(const struct spec *sp, uint8_t *l4, const uint8_t *ip)
{
	size_t hl = sp->udp ? 8 : 20 + (size_t)sp->tcp_opt, l4_len = hl + sp->payload;

	memset(l4, 0, hl);
	pkt_put16(l4, 40000);
	pkt_put16(l4 + 2, 80);
	if (sp->udp) {
		pkt_put16(l4 + 4, (uint16_t)l4_len);
		pkt_put16(l4 + 6, seed_of(ip, sp->ipv6, 17, l4_len));
	} else {
		pkt_put32(l4 + 4, SEQ0);
		pkt_put32(l4 + 8, 12345);
		l4[12] = (uint8_t)((hl / 4) << 4);
		l4[13] = sp->tcp_flags;
		pkt_put16(l4 + 14, 512);
		pkt_put16(l4 + 16, seed_of(ip, sp->ipv6, 6, l4_len));
		for (int i = 0; i < sp->tcp_opt; i++)
			l4[20 + i] = 1; /* NOP */
		if (sp->tcp_opt >= 12) /* NOP NOP timestamp */
			memcpy(l4 + 22, "\x08\x0a\x01\x02\x03\x04\x05\x06\x07\x08", 10);
	}
	for (size_t k = 0; k < sp->payload; k++)
		l4[hl + k] = (uint8_t)(k * 31 + (k >> 9));
}

/*
 * build() - a frame by spec into f, with a header asking for gso (gso_size) and the checksum at
 * the L4 header; the header's hdr_len is nonsense on purpose (a hint to ignore). Returns its
 * length.
 */
static size_t build(const struct spec *sp, uint8_t *f, struct virtio_net_hdr_v1 *h, uint8_t gso,
		    uint16_t gso_size)
{
	size_t l3 = build_l2(sp, f);
	size_t l4_len = (sp->udp ? 8 : 20 + (size_t)sp->tcp_opt) + sp->payload;
	size_t l4 = l3 + build_l3(sp, f + l3, l4_len);

	build_l4(sp, f + l4, f + l3);
	memset(f + l4 + l4_len, 0, sp->pad);
	memset(h, 0, sizeof(*h));
	h->flags = CSUM;
	h->gso_type = gso;
	h->gso_size = htole16(gso_size);
	h->csum_start = htole16((uint16_t)l4);
	h->csum_offset = htole16(sp->udp ? 6 : 16);
	h->hdr_len = htole16(3);
	return l4 + l4_len + sp->pad;
}

/* parse() - pkt_offload_parse() on a head copy of pkt_offload_head_need() bytes. */
static enum pkt_bad parse(const struct virtio_net_hdr_v1 *h, const uint8_t *f, size_t len,
			  struct pkt_offload *o)
{
	uint8_t head[PKT_HEAD_MAX];
	size_t need = pkt_offload_head_need(h, len);

	memcpy(head, f, need);
	return pkt_offload_parse(h, head, need, len, o);
}

/* iovecs over a copy of f: lead bytes before the frame, pieces by sizes (cycled), 5 after. */
struct pieces {
	struct iovec iov[1024];
	unsigned cnt;
};

static void split(const uint8_t *f, size_t len, size_t lead, const size_t *sizes, unsigned nsizes,
		  struct pieces *p)
{
	size_t total = lead + len + 5, at = 0;
	uint8_t *all = malloc(total);

	memset(all, 0xa5, total);
	memcpy(all + lead, f, len);
	p->cnt = 0;
	while (at < total) {
		size_t n = sizes[p->cnt % nsizes];

		if (n > total - at || p->cnt + 1 == 1024)
			n = total - at;
		/* Each piece its own block: ASan sees overruns. */
		p->iov[p->cnt].iov_base = malloc(n ? n : 1);
		memcpy(p->iov[p->cnt].iov_base, all + at, n);
		p->iov[p->cnt++].iov_len = n;
		at += n;
	}
	free(all);
}

static void unsplit(struct pieces *p)
{
	for (unsigned i = 0; i < p->cnt; i++)
		free(p->iov[i].iov_base);
}

/* What one pkt_soft() call made, its input's head copy and output. */
struct run {
	struct pkt_offload o;
	uint8_t head[PKT_HEAD_MAX];
	size_t head_len;
	uint8_t *out;
	unsigned n;
};

/*
 * soft() - parse f (len bytes) under h and run pkt_soft() over it split by sizes after lead
 * bytes; iov_f, if not NULL, is what the iovecs hold instead of f (f stays the head's source).
 */
static void soft(const struct virtio_net_hdr_v1 *h, const uint8_t *f, const uint8_t *iov_f,
		 size_t len, const size_t *sizes, unsigned nsizes, size_t lead, struct run *r)
{
	struct pieces *p = malloc(sizeof(*p));
	size_t size;

	r->head_len = pkt_offload_head_need(h, len);
	memcpy(r->head, f, r->head_len);
	assert_int_equal(pkt_offload_parse(h, r->head, r->head_len, len, &r->o), PKT_OK);
	split(iov_f ? iov_f : f, len, lead, sizes, nsizes, p);
	size = pkt_soft_size(&r->o);
	r->out = malloc(size);
	r->n = pkt_soft(&r->o, r->head, r->head_len, p->iov, p->cnt, lead, r->out, size, segs,
			PKT_GSO_MAX_SEGS);
	unsplit(p);
	free(p);
}

static const size_t awkward[] = {1, 7, 13, 0, 4093, 3, 1500, 9001, 2, 17, 8192};
static const size_t one_piece[] = {FRAME_MAX + 64};

/* soft_gso_ok() - soft() on frame in awkward pieces, then the oracle: want_n good segments. */
static void soft_gso_ok(const struct virtio_net_hdr_v1 *h, size_t len, size_t lead, unsigned want_n,
			struct run *r)
{
	soft(h, frame, NULL, len, awkward, 11, lead, r);
	assert_int_equal(r->n, want_n);
	assert_null(ref_check_gso(&r->o, frame, segs, r->n));
}

/* gso_run() - a frame by spec asking for gso (mss), through soft_gso_ok(); its length. */
static size_t gso_run(const struct spec *sp, uint8_t gso, uint16_t mss, unsigned want_n,
		      struct run *r)
{
	struct virtio_net_hdr_v1 h;
	size_t len = build(sp, frame, &h, gso, mss);

	soft_gso_ok(&h, len, 1, want_n, r);
	return len;
}

/* ---- checksums ---- */

/* The stored bytes equal RFC 1071's result in network order, at any length and alignment. */
static void test_csum_matches_rfc1071(void **state)
{
	static uint8_t buf[4096 + 16];

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	for (int t = 0; t < 3000; t++) {
		size_t len = t < 80 ? (size_t)t : rnd() % 4097, align = rnd() % 16;
		uint16_t got = pkt_csum_fold(pkt_csum_add(0, buf + align, len));
		uint16_t want = (uint16_t)~ref_add(0, buf + align, len);
		uint8_t b[2];

		memcpy(b, &got, 2);
		assert_int_equal(pkt_get16(b), want);
	}
}

/* A sum in pieces (even lengths, the last any) is the sum at once; a start value is added. */
static void test_csum_chains(void **state)
{
	static uint8_t buf[3000];
	uint32_t s = 0;
	size_t at = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	while (at < sizeof(buf)) {
		size_t n = (rnd() % 200) & ~(size_t)1;

		if (n > sizeof(buf) - at)
			n = sizeof(buf) - at;
		s = pkt_csum_add(s, buf + at, n);
		at += n;
	}
	assert_int_equal(pkt_csum_fold(s), pkt_csum_fold(pkt_csum_add(0, buf, sizeof(buf))));
	/* 0xfffffffe is 0xfffe modulo 0xffff: the start value's carries are kept. */
	assert_int_equal(pkt_csum_fold(pkt_csum_add(0xfffffffe, buf, 100)),
			 pkt_csum_fold(pkt_csum_add(0xfffe, buf, 100)));
}

/* RFC 1071's example; all-ones data (every add carries); the empty sum. */
static void test_csum_known_values(void **state)
{
	static const uint8_t rfc[8] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
	static uint8_t ones[65536 + 7];
	uint16_t c;
	uint8_t b[2];

	(void)state;
	c = pkt_csum_fold(pkt_csum_add(0, rfc, 8));
	memcpy(b, &c, 2);
	assert_int_equal(b[0], 0x22); /* sum 0xddf2, complemented */
	assert_int_equal(b[1], 0x0d);
	memset(ones, 0xff, sizeof(ones));
	for (size_t len = 65530; len <= sizeof(ones); len++) {
		c = pkt_csum_fold(pkt_csum_add(0, ones, len));
		memcpy(b, &c, 2);
		assert_int_equal(pkt_get16(b), (uint16_t)~ref_add(0, ones, len));
	}
	assert_int_equal(pkt_csum_fold(pkt_csum_add(0, ones, 0)), 0xffff);
}

/* ---- the header against the frame ---- */

/*
 * No offload needs nothing; csum alone its field and the L2/L3 headers the position check reads
 * (82 bytes); GSO frames csum_start + 60 at most.
 */
static void test_head_need(void **state)
{
	struct virtio_net_hdr_v1 h = {0};

	(void)state;
	assert_int_equal(pkt_offload_head_need(&h, 1500), 0);
	h.flags = CSUM;
	h.csum_start = htole16(34);
	h.csum_offset = htole16(6);
	assert_int_equal(pkt_offload_head_need(&h, 1500), 82);
	assert_int_equal(pkt_offload_head_need(&h, 40), 40);
	h.csum_start = htole16(100);
	assert_int_equal(pkt_offload_head_need(&h, 1500), 108);
	h.csum_start = htole16(34);
	h.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	h.csum_offset = htole16(16);
	assert_int_equal(pkt_offload_head_need(&h, 65000), 94);
	assert_int_equal(pkt_offload_head_need(&h, 60), 60);
	h.csum_offset = htole16(200);
	assert_int_equal(pkt_offload_head_need(&h, 65000), 236);
	h.csum_start = htole16(60000);
	assert_int_equal(pkt_offload_head_need(&h, 65000), PKT_HEAD_MAX);
}

/*
 * Accepted as they are: nothing asked; csum alone (anywhere behind the IP header); TCP with
 * ECN. Refused: csum alone over checked bytes (a MAC, the IP source) or on a non-IP frame.
 */
static void test_parse_accepts(void **state)
{
	struct spec sp = {.payload = 3000, .tcp_opt = 12};
	struct virtio_net_hdr_v1 h = {0};
	struct pkt_offload o;
	size_t len;

	(void)state;
	assert_int_equal(pkt_offload_parse(&h, frame, 0, 60, &o), PKT_OK);
	assert_false(o.csum);
	assert_int_equal(o.gso, VIRTIO_NET_HDR_GSO_NONE);
	assert_int_equal(o.segs, 1);
	assert_int_equal(o.frame_len, 60);
	{
		struct spec su = {.udp = 1, .payload = 40};
		size_t ulen = build(&su, frame, &h, VIRTIO_NET_HDR_GSO_NONE, 0);

		h.csum_start = htole16(50);
		h.csum_offset = htole16(8);
		assert_int_equal(pkt_offload_parse(&h, frame, ulen, ulen, &o), PKT_OK);
		assert_true(o.csum);
		assert_int_equal(o.csum_start, 50);
		h.csum_start = htole16(6); /* over the source MAC */
		assert_int_equal(pkt_offload_parse(&h, frame, ulen, ulen, &o), PKT_BAD_CSUM_POS);
		h.csum_start = htole16(26); /* over the IPv4 source */
		assert_int_equal(pkt_offload_parse(&h, frame, ulen, ulen, &o), PKT_BAD_CSUM_POS);
		h.csum_start = htole16(50);
		pkt_put16(frame + 12, 0x0806); /* ARP */
		assert_int_equal(pkt_offload_parse(&h, frame, ulen, ulen, &o), PKT_BAD_L2);
	}
	len = build(&sp, frame, &h, VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN, 1000);
	assert_int_equal(parse(&h, frame, len, &o), PKT_OK);
	assert_true(o.ecn && o.csum && !o.ipv6);
	assert_int_equal(o.l3_off, 14);
	assert_int_equal(o.l4_off, 34);
	assert_int_equal(o.hdr_len, 34 + 32); /* not the header's hint of 3 */
	assert_int_equal(o.segs, 3);
	assert_int_equal(o.gso_size, 1000);
}

/* Header-only refusals: type, ECN, NEEDS_CSUM, gso_size, the checksum's position, the length. */
static void test_parse_refuses_header(void **state)
{
	static const uint8_t bad_types[] = {VIRTIO_NET_HDR_GSO_UDP, 2, 6, 7, 0x7f,
					    VIRTIO_NET_HDR_GSO_ECN,
					    VIRTIO_NET_HDR_GSO_UDP_L4 | VIRTIO_NET_HDR_GSO_ECN};
	struct spec sp = {.payload = 3000};
	struct virtio_net_hdr_v1 h;
	struct pkt_offload o;
	size_t len = build(&sp, frame, &h, VIRTIO_NET_HDR_GSO_TCPV4, 1000);

	(void)state;
	for (size_t i = 0; i < sizeof(bad_types); i++) {
		h.gso_type = bad_types[i];
		assert_int_equal(parse(&h, frame, len, &o), PKT_BAD_GSO_TYPE);
	}
	h.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	h.flags = 0;
	assert_int_equal(parse(&h, frame, len, &o), PKT_BAD_GSO_CSUM);
	h.flags = CSUM;
	h.gso_size = 0;
	assert_int_equal(parse(&h, frame, len, &o), PKT_BAD_GSO_SIZE);
	h.gso_type = VIRTIO_NET_HDR_GSO_NONE;
	h.csum_start = htole16((uint16_t)(len - 10));
	h.csum_offset = htole16(9); /* the field's last byte one past the frame */
	assert_int_equal(parse(&h, frame, len, &o), PKT_BAD_CSUM_POS);
	h.csum_offset = htole16(8);
	assert_int_equal(parse(&h, frame, len, &o), PKT_OK);
	h.csum_start = htole16(0xffff);
	h.csum_offset = htole16(0xffff);
	assert_int_equal(parse(&h, frame, len, &o), PKT_BAD_CSUM_POS);
	assert_int_equal(pkt_offload_parse(&h, frame, 0, (size_t)UINT32_MAX + 1, &o), PKT_BAD_L2);
}

/*
 * One field of a good frame set to a bad value, and the reason expected. The frames (good_frame()):
 * TCPv4 with IPv4 at 14 and TCP at 34 (8 option bytes); TCPv6 with IPv6 at 14, hop-by-hop at
 * 54, routing at 62, TCP at 70; 3000 payload bytes.
 */
static const struct {
	int ipv6;
	size_t at, bytes;
	uint16_t value;
	enum pkt_bad want;
} bad_fields[] = {
    {0, 12, 2, 0x0806, PKT_BAD_L2},	      /* ARP */
    {0, 14, 1, 0x65, PKT_BAD_L3},	      /* IP version 6 in an IPv4 frame */
    {0, 14, 1, 0x44, PKT_BAD_L3},	      /* ihl 4 */
    {0, 20, 1, 0x60, PKT_BAD_L3},	      /* DF and MF */
    {0, 21, 1, 1, PKT_BAD_L3},		      /* a fragment offset */
    {0, 23, 1, 17, PKT_BAD_L3},		      /* UDP under TCPV4 */
    {0, 16, 2, 20 + 28 + 3001, PKT_BAD_L3},   /* tot_len one past the frame */
    {0, 16, 2, 19, PKT_BAD_L3},		      /* tot_len under the header */
    {1, 18, 2, 0, PKT_BAD_L3},		      /* payload_len 0: a jumbogram */
    {1, 18, 2, 16 + 28 + 3001, PKT_BAD_L3},   /* payload_len one past the frame */
    {1, 62, 1, 44, PKT_BAD_L3},		      /* a fragment header after the routing header */
    {1, 65, 1, 1, PKT_BAD_L3},		      /* routing: segments left */
    {0, 46, 1, 4 << 4, PKT_BAD_L4},	      /* TCP doff 4 */
    {1, 82, 1, 4 << 4, PKT_BAD_L4},
};

/* The header broken instead: the type against the frame, csum_start, csum_offset, gso_size. */
static const struct {
	int ipv6;
	uint8_t gso_type;
	int start_delta;
	uint16_t csum_offset, gso_size;
	enum pkt_bad want;
} bad_hdrs[] = {
    {1, VIRTIO_NET_HDR_GSO_TCPV4, 0, 16, 1000, PKT_BAD_L2},
    {0, VIRTIO_NET_HDR_GSO_TCPV6, 0, 16, 1000, PKT_BAD_L2},
    {0, VIRTIO_NET_HDR_GSO_UDP_L4, 0, 6, 1000, PKT_BAD_L3}, /* TCP under UDP_L4 */
    {0, VIRTIO_NET_HDR_GSO_TCPV4, 4, 16, 1000, PKT_BAD_L4},  /* csum_start not at TCP */
    {1, VIRTIO_NET_HDR_GSO_TCPV6, -8, 16, 1000, PKT_BAD_L4},
    {0, VIRTIO_NET_HDR_GSO_TCPV4, 0, 6, 1000, PKT_BAD_L4},
    {0, VIRTIO_NET_HDR_GSO_TCPV4, 0, 16, 2, PKT_BAD_SEGS}, /* 1500 segments */
};

static size_t good_frame(int ipv6, struct virtio_net_hdr_v1 *h)
{
	struct spec sp = {.ipv6 = ipv6, .payload = 3000, .tcp_opt = 8, .ext = ipv6 ? 2 : 0};

	return build(&sp, frame, h, ipv6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4,
		     1000);
}

static void test_parse_refuses_frame(void **state)
{
	struct spec sp = {.payload = 100};
	struct virtio_net_hdr_v1 h;
	struct pkt_offload o;
	size_t len;

	(void)state;
	for (sp.vlans = 0; sp.vlans <= 3; sp.vlans++) { /* two VLAN tags at most */
		len = build(&sp, frame, &h, VIRTIO_NET_HDR_GSO_TCPV4, 1000);
		assert_int_equal(parse(&h, frame, len, &o), sp.vlans < 3 ? PKT_OK : PKT_BAD_L2);
	}
	for (size_t i = 0; i < sizeof(bad_fields) / sizeof(bad_fields[0]); i++) {
		len = good_frame(bad_fields[i].ipv6, &h);
		assert_int_equal(parse(&h, frame, len, &o), PKT_OK);
		if (bad_fields[i].bytes == 2)
			pkt_put16(frame + bad_fields[i].at, bad_fields[i].value);
		else
			frame[bad_fields[i].at] = (uint8_t)bad_fields[i].value;
		assert_int_equal(parse(&h, frame, len, &o), bad_fields[i].want);
	}
	for (size_t i = 0; i < sizeof(bad_hdrs) / sizeof(bad_hdrs[0]); i++) {
		len = good_frame(bad_hdrs[i].ipv6, &h);
		h.gso_type = bad_hdrs[i].gso_type;
		h.csum_start = htole16((uint16_t)(le16toh(h.csum_start) + bad_hdrs[i].start_delta));
		h.csum_offset = htole16(bad_hdrs[i].csum_offset);
		h.gso_size = htole16(bad_hdrs[i].gso_size);
		assert_int_equal(parse(&h, frame, len, &o), bad_hdrs[i].want);
	}
}

/* Lengths: a head cut short, a TCP header past the frame, a frame over the most GSO may have. */
static void test_parse_refuses_lengths(void **state)
{
	struct spec sp = {.payload = 0, .tcp_opt = 40};
	struct virtio_net_hdr_v1 h;
	struct pkt_offload o;
	size_t len = build(&sp, frame, &h, VIRTIO_NET_HDR_GSO_TCPV4, 1000);

	(void)state;
	assert_int_equal(parse(&h, frame, len, &o), PKT_OK);
	assert_int_equal(pkt_offload_parse(&h, frame, len - 1, len, &o), PKT_BAD_L4); /* head */
	assert_int_equal(pkt_offload_parse(&h, frame, 30, len, &o), PKT_BAD_L3);
	assert_int_equal(pkt_offload_parse(&h, frame, 13, len, &o), PKT_BAD_L2);
	pkt_put16(frame + 16, (uint16_t)(pkt_get16(frame + 16) - 4)); /* options past tot_len */
	assert_int_equal(parse(&h, frame, len, &o), PKT_BAD_L4);
	len = build(&sp, frame, &h, VIRTIO_NET_HDR_GSO_TCPV4, 1000);
	assert_int_equal(pkt_offload_parse(&h, frame, len, PKT_GSO_FRAME_MAX + 1, &o), PKT_BAD_L3);
	/* 1024 segments are allowed, 1025 not. */
	sp.payload = 1024;
	sp.tcp_opt = 0;
	len = build(&sp, frame, &h, VIRTIO_NET_HDR_GSO_TCPV4, 1);
	assert_int_equal(parse(&h, frame, len, &o), PKT_OK);
	assert_int_equal(o.segs, 1024);
	sp.payload = 1025;
	len = build(&sp, frame, &h, VIRTIO_NET_HDR_GSO_TCPV4, 1);
	assert_int_equal(parse(&h, frame, len, &o), PKT_BAD_SEGS);
}

/* Every reason has its own text. */
static void test_bad_names(void **state)
{
	(void)state;
	for (int i = 0; i < PKT_BAD_COUNT; i++) {
		assert_non_null(pkt_bad_name(i));
		assert_string_not_equal(pkt_bad_name(i), "?");
		for (int j = 0; j < i; j++)
			assert_string_not_equal(pkt_bad_name(i), pkt_bad_name(j));
	}
	assert_string_equal(pkt_bad_name(PKT_BAD_CSUM_POS),
			    "checksum position outside the frame or before its L4 header");
	assert_string_equal(pkt_bad_name(PKT_BAD_COUNT), "?");
}

/* ---- segmentation ---- */

/* A 64 KB TCP frame by spec, FIN PSH CWR set, cut at awkward places: every segment checks out. */
static void segment_tcp(struct spec sp, uint16_t mss, const size_t *sizes, unsigned nsizes,
			size_t lead)
{
	struct virtio_net_hdr_v1 h;
	struct run r;
	uint8_t gso = sp.ipv6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
	size_t hl, len;
	const uint8_t *th;

	sp.tcp_flags = TCP_FLAGS_ALL;
	hl = 14 + 4 * (size_t)sp.vlans;
	hl += sp.ipv6 ? 40 + 8 * (size_t)(sp.ext == 3 ? 4 : sp.ext) : 20;
	sp.payload = 65535 - (hl - 14 - 4 * (size_t)sp.vlans - (sp.ipv6 ? 40 : 0)) - 20 -
		     (size_t)sp.tcp_opt; /* the IP length field full */
	len = build(&sp, frame, &h, gso, mss);
	soft(&h, frame, NULL, len, sizes, nsizes, lead, &r);
	assert_int_equal(r.n, (sp.payload + mss - 1) / mss);
	assert_int_equal(r.o.hdr_len, hl + 20 + (size_t)sp.tcp_opt);
	assert_null(ref_check_gso(&r.o, frame, segs, r.n));
	th = segs[0].data + r.o.l4_off;
	assert_int_equal(th[13], 0x80 | 0x10); /* CWR ACK */
	assert_int_equal(pkt_get32(th + 4), SEQ0);
	th = segs[r.n - 1].data + r.o.l4_off;
	assert_int_equal(th[13], 0x10 | 0x08 | 0x01); /* ACK PSH FIN */
	assert_int_equal(pkt_get32(th + 4), SEQ0 + (r.n - 1) * (uint32_t)mss);
	assert_int_equal(segs[1].data, segs[0].data + segs[0].len); /* packed in buf */
	free(r.out);
}

static void test_tcp4_segments(void **state)
{
	(void)state;
	segment_tcp((struct spec){.tcp_opt = 12}, 1448, awkward, 11, 5);
	segment_tcp((struct spec){.tcp_opt = 0}, 1460, one_piece, 1, 0);
	segment_tcp((struct spec){.tcp_opt = 40}, 536, awkward + 1, 10, 4095);
}

static void test_tcp4_vlan_segments(void **state)
{
	(void)state;
	segment_tcp((struct spec){.vlans = 1, .tcp_opt = 12}, 1448, awkward, 11, 1);
	segment_tcp((struct spec){.vlans = 2, .tcp_opt = 4}, 9000, awkward + 2, 9, 0);
}

static void test_tcp6_segments(void **state)
{
	(void)state;
	segment_tcp((struct spec){.ipv6 = 1, .tcp_opt = 12}, 1428, awkward, 11, 3);
	segment_tcp((struct spec){.ipv6 = 1, .vlans = 1, .tcp_opt = 12}, 1428, awkward + 3, 8, 0);
}

static void test_tcp6_ext_segments(void **state)
{
	(void)state;
	segment_tcp((struct spec){.ipv6 = 1, .ext = 1, .tcp_opt = 12}, 1420, awkward, 11, 7);
	segment_tcp((struct spec){.ipv6 = 1, .ext = 2, .vlans = 2, .tcp_opt = 20}, 1400,
		    awkward + 4, 7, 1);
	segment_tcp((struct spec){.ipv6 = 1, .ext = 3, .tcp_opt = 40}, 1000, one_piece, 1, 9);
}

/* One segment: payload under gso_size, and none at all; FIN, PSH and CWR all stay. */
static void test_one_segment_gso(void **state)
{
	struct spec sp = {.tcp_opt = 12, .tcp_flags = TCP_FLAGS_ALL};
	struct run r;

	(void)state;
	for (sp.payload = 0; sp.payload <= 1448; sp.payload += 1448) {
		size_t len = gso_run(&sp, VIRTIO_NET_HDR_GSO_TCPV4, 1448, 1, &r);

		assert_int_equal(segs[0].len, len);
		assert_int_equal(segs[0].data[r.o.l4_off + 13], TCP_FLAGS_ALL);
		free(r.out);
	}
}

/* USO over IPv4 and IPv6: UDP length and checksum per segment; IPv4 ids count up. */
static void test_udp_l4_segments(void **state)
{
	struct spec sp = {.udp = 1, .payload = 60000};
	struct run r;

	(void)state;
	for (sp.ipv6 = 0; sp.ipv6 <= 1; sp.ipv6++) {
		sp.ext = sp.ipv6;
		gso_run(&sp, VIRTIO_NET_HDR_GSO_UDP_L4, 1472, (60000 + 1471) / 1472, &r);
		assert_int_equal(r.o.hdr_len, r.o.l4_off + 8);
		assert_int_equal(pkt_get16(segs[1].data + r.o.l4_off + 4), 1480);
		free(r.out);
	}
}

/* A UDP checksum that comes out 0 is sent as 0xffff (0 would say "none"). */
static void test_udp_l4_checksum_zero(void **state)
{
	struct spec sp = {.udp = 1, .payload = 100};
	struct virtio_net_hdr_v1 h;
	struct run r;
	size_t len = build(&sp, frame, &h, VIRTIO_NET_HDR_GSO_UDP_L4, 1472);
	uint8_t *udp = frame + 34;
	uint32_t sum;

	(void)state;
	/* The payload's first word takes the complement of the rest's sum: the total is -0. */
	pkt_put16(udp + 6, 0);
	pkt_put16(udp + 8, 0);
	sum = ref_add(ref_pseudo(frame + 14, 0, 17, 108), udp, 108);
	pkt_put16(udp + 8, (uint16_t)~fold16(sum));
	soft_gso_ok(&h, len, 0, 1, &r);
	assert_int_equal(pkt_get16(segs[0].data + 34 + 6), 0xffff);
	free(r.out);
}

/* Ethernet padding after the IP packet: not part of any segment. */
static void test_gso_drops_padding(void **state)
{
	struct spec sp = {.payload = 3000, .pad = 10};
	struct run r;
	size_t len;

	(void)state;
	len = gso_run(&sp, VIRTIO_NET_HDR_GSO_TCPV4, 1000, 3, &r);
	assert_int_equal(r.o.frame_len, len - 10);
	free(r.out);
}

/* ---- checksum completion ---- */

/* UDP/IPv4 and TCP/IPv6 frames whose field holds Linux's pseudo-header seed: completed, valid. */
static void test_csum_completion(void **state)
{
	struct spec sps[] = {{.udp = 1, .payload = 1001},
			     {.ipv6 = 1, .tcp_opt = 12, .payload = 1400},
			     {.udp = 1, .ipv6 = 1, .ext = 3, .payload = 0}};
	struct virtio_net_hdr_v1 h;
	struct run r;

	(void)state;
	for (size_t i = 0; i < sizeof(sps) / sizeof(sps[0]); i++) {
		size_t len = build(&sps[i], frame, &h, VIRTIO_NET_HDR_GSO_NONE, 0);
		const uint8_t *l3;

		soft(&h, frame, NULL, len, awkward, 11, i, &r);
		assert_int_equal(r.n, 1);
		assert_null(ref_check_one(&r.o, frame, segs, r.n));
		l3 = segs[0].data + 14;
		assert_true(ref_zero(ref_add(ref_pseudo(l3, sps[i].ipv6, sps[i].udp ? 17 : 6,
							len - r.o.csum_start),
					     segs[0].data + r.o.csum_start, len - r.o.csum_start)));
		free(r.out);
	}
}

/*
 * A head shorter than the checksum field (it holds the IP header, which the position check
 * reads): the field and the rest come from the iovecs.
 */
static void test_csum_completion_short_head(void **state)
{
	struct spec sp = {.udp = 1, .payload = 77};
	struct virtio_net_hdr_v1 h;
	struct pkt_offload o;
	struct pieces p;
	uint8_t out[200];
	size_t len = build(&sp, frame, &h, VIRTIO_NET_HDR_GSO_NONE, 0);

	(void)state;
	assert_int_equal(pkt_offload_parse(&h, frame, 36, len, &o), PKT_OK);
	split(frame, len, 3, awkward, 11, &p);
	assert_int_equal(pkt_soft(&o, frame, 36, p.iov, p.cnt, 3, out, sizeof(out), segs, 1), 1);
	unsplit(&p);
	assert_null(ref_check_one(&o, frame, segs, 1));
}

/* An odd csum_offset (no protocol's): the formula all the same, as Linux computes it. */
static void test_csum_completion_odd_offset(void **state)
{
	struct spec su = {.udp = 1, .payload = 65};
	struct virtio_net_hdr_v1 h;
	struct run r;
	size_t len = build(&su, frame, &h, VIRTIO_NET_HDR_GSO_NONE, 0);
	uint16_t want;

	(void)state;
	for (size_t i = 42; i < len; i++)
		frame[i] = (uint8_t)(i * 7 + 1);
	h.csum_start = htole16(34);
	h.csum_offset = htole16(35);
	want = (uint16_t)~ref_add(0, frame + 34, len - 34);
	soft(&h, frame, NULL, len, awkward, 11, 0, &r);
	assert_int_equal(pkt_get16(segs[0].data + 69), want ? want : 0xffff);
	assert_null(ref_check_one(&r.o, frame, segs, r.n));
	free(r.out);
}

/* No offload at all: the frame as it is. */
static void test_soft_copies_plain(void **state)
{
	struct virtio_net_hdr_v1 h = {0};
	struct run r;

	(void)state;
	for (size_t i = 0; i < 100; i++)
		frame[i] = (uint8_t)i;
	soft(&h, frame, NULL, 100, awkward, 11, 1, &r);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.head_len, 0);
	assert_memory_equal(segs[0].data, frame, 100);
	free(r.out);
}

/* ---- the one-read rule ---- */

/*
 * The iovecs' first head_len bytes differ from head (the sender rewrote them after the copy):
 * the output is built from head alone, payload bytes inside head included.
 */
static void test_head_is_authoritative(void **state)
{
	struct spec sps[] = {{.tcp_opt = 4, .payload = 5000}, {.udp = 1, .payload = 300}};
	uint8_t gsos[] = {VIRTIO_NET_HDR_GSO_TCPV4, VIRTIO_NET_HDR_GSO_NONE};
	static uint8_t rewritten[FRAME_MAX];
	struct virtio_net_hdr_v1 h;
	struct run good, bad;

	(void)state;
	for (int i = 0; i < 2; i++) {
		size_t len = build(&sps[i], frame, &h, gsos[i], 1000);

		memcpy(rewritten, frame, len);
		soft(&h, frame, NULL, len, awkward, 11, 3, &good);
		memset(rewritten, 0xee, good.head_len);
		soft(&h, frame, rewritten, len, awkward, 11, 3, &bad);
		assert_true(i || good.head_len > good.o.hdr_len); /* payload in head too */
		assert_int_equal(bad.n, good.n);
		assert_memory_equal(bad.out, good.out, pkt_soft_size(&good.o));
		free(good.out);
		free(bad.out);
	}
}

/* Too small a buffer, too few segment slots, an iovec short of the frame: nothing written. */
static void test_soft_refuses_small_room(void **state)
{
	struct spec sp = {.payload = 3000};
	struct virtio_net_hdr_v1 h;
	struct pkt_offload o;
	struct pieces p;
	uint8_t *buf;
	size_t len = build(&sp, frame, &h, VIRTIO_NET_HDR_GSO_TCPV4, 1000), size;

	(void)state;
	assert_int_equal(pkt_offload_parse(&h, frame, 100, len, &o), PKT_OK);
	size = pkt_soft_size(&o);
	assert_int_equal(size, 3 * 54 + 3000);
	buf = malloc(size);
	split(frame, len, 0, one_piece, 1, &p);
	assert_int_equal(pkt_soft(&o, frame, 100, p.iov, p.cnt, 0, buf, size - 1, segs, 3), 0);
	assert_int_equal(pkt_soft(&o, frame, 100, p.iov, p.cnt, 0, buf, size, segs, 2), 0);
	assert_int_equal(pkt_soft(&o, frame, 100, p.iov, p.cnt, 6, buf, size, segs, 3), 0);
	p.iov[0].iov_len = len - 1;
	assert_int_equal(pkt_soft(&o, frame, 100, p.iov, p.cnt, 0, buf, size, segs, 3), 0);
	p.iov[0].iov_len = len;
	assert_int_equal(pkt_soft(&o, frame, 100, p.iov, p.cnt, 0, buf, size, segs, 3), 3);
	/* A head shorter than the headers. */
	assert_int_equal(pkt_soft(&o, frame, 40, p.iov, p.cnt, 0, buf, size, segs, 3), 0);
	unsplit(&p);
	free(buf);
}

/* The header a receiver taking the offload gets. */
static void test_hdr_for(void **state)
{
	struct spec sp = {.ipv6 = 1, .tcp_opt = 12, .payload = 3000, .pad = 4};
	struct virtio_net_hdr_v1 h, out;
	struct pkt_offload o;
	size_t len = build(&sp, frame, &h, VIRTIO_NET_HDR_GSO_TCPV6 | VIRTIO_NET_HDR_GSO_ECN, 1428);

	(void)state;
	h.num_buffers = htole16(7);
	assert_int_equal(parse(&h, frame, len, &o), PKT_OK);
	pkt_hdr_for(&o, &out);
	assert_int_equal(out.flags, CSUM);
	assert_int_equal(out.gso_type, VIRTIO_NET_HDR_GSO_TCPV6 | VIRTIO_NET_HDR_GSO_ECN);
	assert_int_equal(le16toh(out.gso_size), 1428);
	assert_int_equal(le16toh(out.hdr_len), 14 + 40 + 32);
	assert_int_equal(le16toh(out.csum_start), 54);
	assert_int_equal(le16toh(out.csum_offset), 16);
	assert_int_equal(out.num_buffers, 0);
	memset(&h, 0, sizeof(h));
	assert_int_equal(pkt_offload_parse(&h, frame, 0, 60, &o), PKT_OK);
	pkt_hdr_for(&o, &out);
	assert_memory_equal(&out, &h, sizeof(h));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_csum_matches_rfc1071),
	    cmocka_unit_test(test_csum_chains),
	    cmocka_unit_test(test_csum_known_values),
	    cmocka_unit_test(test_head_need),
	    cmocka_unit_test(test_parse_accepts),
	    cmocka_unit_test(test_parse_refuses_header),
	    cmocka_unit_test(test_parse_refuses_frame),
	    cmocka_unit_test(test_parse_refuses_lengths),
	    cmocka_unit_test(test_bad_names),
	    cmocka_unit_test(test_tcp4_segments),
	    cmocka_unit_test(test_tcp4_vlan_segments),
	    cmocka_unit_test(test_tcp6_segments),
	    cmocka_unit_test(test_tcp6_ext_segments),
	    cmocka_unit_test(test_one_segment_gso),
	    cmocka_unit_test(test_udp_l4_segments),
	    cmocka_unit_test(test_udp_l4_checksum_zero),
	    cmocka_unit_test(test_gso_drops_padding),
	    cmocka_unit_test(test_csum_completion),
	    cmocka_unit_test(test_csum_completion_short_head),
	    cmocka_unit_test(test_csum_completion_odd_offset),
	    cmocka_unit_test(test_soft_copies_plain),
	    cmocka_unit_test(test_head_is_authoritative),
	    cmocka_unit_test(test_soft_refuses_small_room),
	    cmocka_unit_test(test_hdr_for),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
