/* SPDX-License-Identifier: MIT */
/* test_switch_offload.c - switch backend: checksum and TSO offloads passed from guest to guest, or done in software. */
#include "switch_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/guest_race.h"
#include "lib/iov.h"
#include "dev/vnet_dev_core.h"

/*
 * A guest sends TCP frames of up to 64 KB with their checksum left to the receiver (TSO4/6, ECN)
 * or a UDP frame whose checksum is left to it (NEEDS_CSUM), as Linux's virtio-net driver hands
 * them over: the TCP/UDP checksum field holds the pseudo-header's sum (CHECKSUM_PARTIAL). Each
 * receiver gets what its guest takes: the frame with its header (GUEST_TSO4/6, GUEST_CSUM), or
 * segments / the frame with every checksum computed by the switch, DATA_VALID where its guest
 * takes checksum flags. Every checksum a receiver gets is checked here by the book (RFC 1071
 * over big-endian words), independently of src/pkt/; every segment's headers field by field.
 *
 * Ports: A the sender (CSUM, HOST_TSO4/6, HOST_ECN and every GUEST_ offload), B (GUEST_CSUM,
 * GUEST_TSO4/6), C (no offloads), D (GUEST_CSUM only), E (B's and GUEST_ECN); the ones with
 * TSO have mergeable RX buffers of 4 KB, C and D buffers of 1530 bytes (a tagged 1500-byte frame).
 */

#define MSS 1448u  /* gso_size over IPv4: a 1500-byte MTU less IPv4, TCP and its timestamps */
#define MSS6 1428u /* over IPv6 */
#define PAYLOAD 20000u
#define TCP_HL 32u /* with the timestamp option, as Linux sends */
#define UDP_HL 8u
#define HINT 128u  /* the sender's hdr_len: only a hint, never what receivers get */
#define BUFSZ 4096u
#define SMALL 1530u /* Linux's small buffers: a tagged 1500-byte frame and the header */
#define TCP_FIN 0x01
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define TCP_CWR 0x80

#define A_FEATURES                                                                                 \
	(F(CSUM) | F(HOST_TSO4) | F(HOST_TSO6) | F(HOST_ECN) | F(GUEST_CSUM) | F(GUEST_TSO4) |     \
	 F(GUEST_TSO6) | F(GUEST_ECN) | F(MRG_RXBUF))
#define TSO_FEATURES                                                                               \
	(F(GUEST_CSUM) | F(GUEST_TSO4) | F(GUEST_TSO6) | F(MRG_RXBUF) | F(CTRL_GUEST_OFFLOADS))
#define ECN_FEATURES (TSO_FEATURES | F(GUEST_ECN))

static struct port *pa, *pb, *pc, *pd, *pe;

/* ---- Frames as Linux's stack hands them to virtio-net ---- */

static void wbe16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void wbe32(uint8_t *p, uint32_t v)
{
	wbe16(p, v >> 16);
	wbe16(p + 2, v);
}

static uint16_t rbe16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rbe32(const uint8_t *p)
{
	return (uint32_t)rbe16(p) << 16 | rbe16(p + 2);
}

/* RFC 1071: the sum of big-endian 16-bit words (an odd last byte padded with zero). */
static uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t fold16(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* The TCP/UDP pseudo-header's sum: the IP addresses, the protocol and the L4 length. */
static uint32_t pseudo(const uint8_t *f, size_t l3, bool v6, uint8_t proto, size_t l4_len)
{
	uint32_t s = v6 ? sum16(0, f + l3 + 8, 32) : sum16(0, f + l3 + 12, 8);

	return s + proto + (uint32_t)(l4_len >> 16) + (uint32_t)(l4_len & 0xffff);
}

/* Whether the L4 checksum of the len bytes at f + l4 is right (IP header at l3). */
static bool l4_csum_ok(const uint8_t *f, size_t l3, size_t l4, bool v6, uint8_t proto, size_t len)
{
	return fold16(sum16(pseudo(f, l3, v6, proto, len), f + l4, len)) == 0xffff;
}

/* A TCP frame: its addresses' family, an 802.1Q tag, ECN's CWR, its payload, its contents. */
struct tcp_spec {
	bool v6;
	bool vlan;
	bool ecn;
	size_t payload;
	unsigned seed;
	size_t ext; /* IPv6: a destination options header of this many bytes (8 * k) before TCP */
};

static size_t l3_of(const struct tcp_spec *s)
{
	return s->vlan ? 18 : 14;
}

static size_t l4_of(const struct tcp_spec *s)
{
	return l3_of(s) + (s->v6 ? 40 + s->ext : 20);
}

static size_t hl_of(const struct tcp_spec *s)
{
	return l4_of(s) + TCP_HL;
}

static size_t mss_of(const struct tcp_spec *s)
{
	return s->v6 ? MSS6 - s->ext : MSS;
}

static unsigned nsegs(const struct tcp_spec *s)
{
	return (unsigned)((s->payload + mss_of(s) - 1) / mss_of(s));
}

static uint8_t gso_type_of(const struct tcp_spec *s)
{
	return (uint8_t)((s->v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4) |
			 (s->ecn ? VIRTIO_NET_HDR_GSO_ECN : 0));
}

/* Ethernet from src to dst (a VLAN 10 tag if asked), EtherType et; the L3 offset. */
static size_t eth_build(uint8_t *f, const uint8_t *dst, const uint8_t *src, bool vlan,
			uint16_t et)
{
	size_t l3 = vlan ? 18 : 14;

	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	if (vlan) {
		wbe16(f + 12, 0x8100);
		wbe16(f + 14, 10);
	}
	wbe16(f + l3 - 2, et);
	return l3;
}

/* An IPv4 header's checksum computed again. */
static void ip4_resum(uint8_t *ip)
{
	wbe16(ip + 10, 0);
	wbe16(ip + 10, (uint16_t)~fold16(sum16(0, ip, 20)));
}

/* IPv4 (DF, id 0x1000 + seed) or IPv6 from 10.0.0.1 / fd00::1 to .2, carrying l4_len of proto. */
static void ip_build(uint8_t *f, size_t l3, bool v6, uint8_t proto, size_t l4_len, unsigned seed)
{
	uint8_t *ip = f + l3;

	if (v6) {
		memset(ip, 0, 40);
		ip[0] = 0x60;
		wbe16(ip + 4, (uint32_t)l4_len);
		ip[6] = proto;
		ip[7] = 64;
		ip[8] = 0xfd, ip[23] = 1;
		ip[24] = 0xfd, ip[39] = 2;
		return;
	}
	memset(ip, 0, 20);
	ip[0] = 0x45;
	wbe16(ip + 2, (uint32_t)(20 + l4_len));
	wbe16(ip + 4, 0x1000 + seed);
	wbe16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = proto;
	ip[12] = 10, ip[15] = 1;
	ip[16] = 10, ip[19] = 2;
	ip4_resum(ip);
}

/* A seeded payload of n bytes at p. */
static void payload_fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 7 + i * 13 + i / 251 + 5);
}

/*
 * A TCP frame from src to dst into f, with the header h Linux gives it: NEEDS_CSUM at the TCP
 * checksum, which holds the pseudo-header's sum; a GSO type and gso_size mss_of(); hdr_len a hint
 * that is not the headers' length. ACK and PSH (and CWR with ECN) set. Its length.
 */
static size_t tcp_build(uint8_t *f, const uint8_t *dst, const uint8_t *src,
			const struct tcp_spec *s, struct virtio_net_hdr_v1 *h)
{
	size_t l3 = eth_build(f, dst, src, s->vlan, s->v6 ? 0x86dd : 0x0800), l4 = l4_of(s);
	size_t tcp_len = TCP_HL + s->payload;
	uint8_t *th = f + l4;

	ip_build(f, l3, s->v6, s->ext ? 60 : 6, s->ext + tcp_len, s->seed);
	if (s->ext) { /* next header TCP, its length, one PadN option filling it */
		memset(f + l3 + 40, 0, s->ext);
		f[l3 + 40] = 6;
		f[l3 + 41] = (uint8_t)(s->ext / 8 - 1);
		f[l3 + 42] = 1;
		f[l3 + 43] = (uint8_t)(s->ext - 4);
	}
	memset(th, 0, TCP_HL);
	wbe16(th, 40000 + s->seed);
	wbe16(th + 2, 5201);
	wbe32(th + 4, 0xfffff000u + s->seed); /* the segments' sequence numbers wrap */
	wbe32(th + 8, 0x01020304);
	th[12] = (TCP_HL / 4) << 4;
	th[13] = TCP_ACK | TCP_PSH | (s->ecn ? TCP_CWR : 0);
	wbe16(th + 14, 502);
	th[20] = 1, th[21] = 1, th[22] = 8, th[23] = 10; /* NOP NOP timestamps */
	wbe32(th + 24, 0xa0b0c0d0 + s->seed);
	wbe32(th + 28, 0x11223344);
	payload_fill(f + l4 + TCP_HL, s->payload, s->seed);
	wbe16(th + 16, fold16(pseudo(f, l3, s->v6, 6, tcp_len)));
	*h = (struct virtio_net_hdr_v1){
	    .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
	    .gso_type = gso_type_of(s),
	    .hdr_len = htole16(HINT),
	    .gso_size = htole16((uint16_t)mss_of(s)),
	    .csum_start = htole16((uint16_t)l4),
	    .csum_offset = htole16(16),
	};
	return l4 + tcp_len;
}

/* A UDP/IPv4 frame of `payload` bytes whose checksum is left to the receiver (NEEDS_CSUM). */
static size_t udp_build(uint8_t *f, const uint8_t *dst, const uint8_t *src, size_t payload,
			unsigned seed, struct virtio_net_hdr_v1 *h)
{
	size_t l3 = eth_build(f, dst, src, false, 0x0800), l4 = l3 + 20, udp_len = UDP_HL + payload;

	ip_build(f, l3, false, 17, udp_len, seed);
	wbe16(f + l4, 5353);
	wbe16(f + l4 + 2, 9000 + seed);
	wbe16(f + l4 + 4, (uint32_t)udp_len);
	payload_fill(f + l4 + UDP_HL, payload, seed);
	wbe16(f + l4 + 6, fold16(pseudo(f, l3, false, 17, udp_len)));
	*h = (struct virtio_net_hdr_v1){
	    .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
	    .csum_start = htole16((uint16_t)l4),
	    .csum_offset = htole16(6),
	};
	return l4 + udp_len;
}

/* ---- What a receiving guest got ---- */

/* The header of the packet in rx_out: these flags and nothing else but num_buffers (nbufs). */
static void expect_plain_hdr(uint8_t flags, unsigned nbufs)
{
	static const uint8_t zero[HDR - 3];

	assert_int_equal(rx_out[0], flags);
	assert_memory_equal(rx_out + 1, zero, sizeof(zero));
	assert_int_equal(get_le16(rx_out + 10), nbufs);
}

/* The header a frame's receiver gets with its offload: the one the switch computed from it. */
static void expect_offload_hdr(const uint8_t *h, uint8_t gso_type, uint16_t hdr_len,
			       uint16_t gso_size, uint16_t csum_start, uint16_t csum_offset)
{
	assert_int_equal(h[0], VIRTIO_NET_HDR_F_NEEDS_CSUM);
	assert_int_equal(h[1], gso_type);
	assert_int_equal(get_le16(h + 2), hdr_len);
	assert_int_equal(get_le16(h + 4), gso_size);
	assert_int_equal(get_le16(h + 6), csum_start);
	assert_int_equal(get_le16(h + 8), csum_offset);
}

/* r's guest got the TCP frame f (len bytes, spec s) whole, with its offload's header. */
static void expect_passed(struct port *r, const uint8_t *f, size_t len, const struct tcp_spec *s)
{
	assert_int_equal(rx_take(r, NULL), HDR + len);
	expect_offload_hdr(rx_out, gso_type_of(s), (uint16_t)hl_of(s), (uint16_t)mss_of(s),
			   (uint16_t)l4_of(s), 16);
	assert_memory_equal(rx_out + HDR, f, len);
}

/* Segment g (i of the frame f of spec s, n payload bytes): its IPv4 or IPv6 header. */
static void expect_seg_ip(const uint8_t *g, const uint8_t *f, const struct tcp_spec *s,
			  unsigned i, size_t n)
{
	size_t l3 = l3_of(s);

	if (s->v6) {
		assert_memory_equal(g + l3, f + l3, 4);
		assert_int_equal(rbe16(g + l3 + 4), s->ext + TCP_HL + n);
		assert_memory_equal(g + l3 + 6, f + l3 + 6, 34 + s->ext);
		return;
	}
	assert_memory_equal(g + l3, f + l3, 2);
	assert_int_equal(rbe16(g + l3 + 2), 20 + TCP_HL + n);
	assert_int_equal(rbe16(g + l3 + 4), (uint16_t)(rbe16(f + l3 + 4) + i));
	assert_memory_equal(g + l3 + 6, f + l3 + 6, 4);	  /* DF, TTL, protocol */
	assert_memory_equal(g + l3 + 12, f + l3 + 12, 8); /* addresses */
	assert_int_equal(fold16(sum16(0, g + l3, 20)), 0xffff);
}

/*
 * r's guest got segments [from, to) of the TCP frame f (spec s), each behind a header with just
 * `flags` (0, or DATA_VALID): headers as Linux's GSO makes them (IPv4 length, id + i and header
 * checksum, IPv6 payload length, seq + i * gso_size, FIN/PSH on the last only, CWR on the
 * first only), the TCP checksum right, and the payload's next gso_size bytes.
 */
static void expect_segs(struct port *r, const uint8_t *f, const struct tcp_spec *s, unsigned from,
			unsigned to, uint8_t flags)
{
	size_t l3 = l3_of(s), l4 = l4_of(s), hl = hl_of(s), mss = mss_of(s);

	for (unsigned i = from; i < to; i++) {
		size_t n = s->payload - i * mss < mss ? s->payload - i * mss : mss;
		const uint8_t *g = rx_out + HDR;
		uint8_t fl = f[l4 + 13];
		unsigned nbufs;

		assert_int_equal(rx_take(r, &nbufs), HDR + hl + n);
		expect_plain_hdr(flags, nbufs);
		assert_memory_equal(g, f, l3);
		expect_seg_ip(g, f, s, i, n);
		if (i + 1 != nsegs(s))
			fl &= (uint8_t)~(TCP_FIN | TCP_PSH);
		if (i)
			fl &= (uint8_t)~TCP_CWR;
		assert_memory_equal(g + l4, f + l4, 4);
		assert_int_equal(rbe32(g + l4 + 4), (uint32_t)(rbe32(f + l4 + 4) + i * mss));
		assert_memory_equal(g + l4 + 8, f + l4 + 8, 5);
		assert_int_equal(g[l4 + 13], fl);
		assert_memory_equal(g + l4 + 14, f + l4 + 14, 2);
		assert_memory_equal(g + l4 + 18, f + l4 + 18, TCP_HL - 18);
		assert_true(l4_csum_ok(g, l3, l4, s->v6, 6, TCP_HL + n));
		assert_memory_equal(g + hl, f + hl + i * mss, n);
	}
}

/* All of expect_segs(): the frame's every segment, then nothing more. */
static void expect_all_segs(struct port *r, const uint8_t *f, const struct tcp_spec *s,
			    uint8_t flags)
{
	expect_segs(r, f, s, 0, nsegs(s), flags);
	expect_nothing(r);
}

/* ---- The switch and its ports ---- */

/* Every port's MAC learnt: each sends a broadcast; then every guest takes what it got. */
static void learn_all(void)
{
	for (unsigned i = 0; i < nports; i++) {
		send_from(&ports[i], mac_bcast, ports[i].mac, 60, 900 + i);
		drain_workers();
	}
	for (struct port *p = ports; p < ports + nports; p++)
		while (rx_pending(p))
			rx_take(p, NULL);
}

/* Post RX buffers as the port's guest does: 4 KB mergeable ones with TSO, else 1526 bytes. */
static void rx_fill(struct port *p, unsigned n)
{
	rx_post(p, n, (p->td->features & F(MRG_RXBUF)) ? BUFSZ : SMALL);
}

/* A switch of A..E (the file's top comment) on one worker, each with 96 RX buffers, all learnt. */
static void five_ports(void)
{
	td_mem_size = 16u << 20;
	sw_new();
	pa = port_add_offloads(A_FEATURES, 0);
	pb = port_add_offloads(TSO_FEATURES, 0);
	pc = port_add_offloads(0, 0);
	pd = port_add_offloads(F(GUEST_CSUM), 0);
	pe = port_add_offloads(ECN_FEATURES, 0);
	for (unsigned i = 0; i < nports; i++)
		rx_fill(&ports[i], 96);
	learn_all();
}

static uint8_t frame[BIG]; /* the frame sent */

/* A sends the TCP frame of spec s to dst, built into f; its length. */
static size_t send_tcp(struct port *from, const uint8_t *dst, const struct tcp_spec *s,
		       uint8_t *f)
{
	struct virtio_net_hdr_v1 h;
	size_t len = tcp_build(f, dst, from->mac, s, &h);

	tx_send_hdr(from, &h, f, len);
	drain_workers();
	return len;
}

/* The TSO4 frame of every case: 20000 bytes of payload, 14 segments of MSS. */
static const struct tcp_spec tso4 = {.payload = PAYLOAD, .seed = 1};

/* A sends the TCP frame of spec s to r, whose guest gets it whole with its header, and no more. */
static void a_to_passed(struct port *r, const struct tcp_spec *s)
{
	size_t len = send_tcp(pa, r->mac, s, frame);

	expect_passed(r, frame, len, s);
	expect_nothing(r);
}

/* A sends the TCP frame of spec s to r, whose guest gets its segments (with flags), no more. */
static void a_to_segs(struct port *r, const struct tcp_spec *s, uint8_t flags)
{
	send_tcp(pa, r->mac, s, frame);
	expect_all_segs(r, frame, s, flags);
}

/* ---- Passed, segmented, checksummed ---- */

/*
 * (1) A's TSO4 frame to B, which takes TSO4: one frame, byte-exact, behind the header the switch
 * computed (NEEDS_CSUM at the TCP checksum, TCPV4, gso_size, hdr_len from the headers, not the
 * sender's hint); counted as passed.
 */
static void test_tso4_passed_to_tso_receiver(void **state)
{
	(void)state;
	five_ports();
	a_to_passed(pb, &tso4);
	expect_nothing(pc);
	assert_int_equal(counters(pb).offload_passed, 1);
	assert_int_equal(counters(pb).soft_segments, 0);
	assert_int_equal(counters(pa).bad_offload_hdr, 0);
	assert_int_equal(forwarded(pa), 1);
	assert_int_equal(dropped(pa) + dropped(pb), 0);
}

/*
 * (1') The TSO frame in many descriptors: 4 (the rest forwarded in place behind the checked
 * head), 12 through an indirect table and 40 (more than the switch forwards in place: copied
 * whole first), the first of them cutting the TCP header: B gets it byte-exact with its header,
 * C its segments.
 */
static void test_tso4_in_many_descriptors(void **state)
{
	static const unsigned counts[] = {4, 12, 40};
	struct virtio_net_hdr_v1 h;
	uint32_t cuts[40];
	size_t len;

	(void)state;
	five_ports();
	for (unsigned k = 0; k < 3; k++)
		for (unsigned r = 0; r < 2; r++) {
			struct port *to = r ? pc : pb;
			unsigned n = counts[k];
			size_t left;

			len = tcp_build(frame, to->mac, pa->mac, &tso4, &h);
			left = HDR + len;
			for (unsigned i = 0; i < n; i++) {
				cuts[i] = i + 1 == n ? (uint32_t)left : i ? 7u : HDR + 40u;
				left -= cuts[i];
			}
			tx_queue_hdr_cut(pa, &h, frame, len, cuts, n, n == 12);
			tx_kick(pa);
			if (r) {
				expect_all_segs(pc, frame, &tso4, 0);
			} else {
				expect_passed(pb, frame, len, &tso4);
				expect_nothing(pb);
			}
		}
	assert_int_equal(counters(pb).offload_passed, 3);
	assert_int_equal(counters(pc).soft_segments, 3 * 14);
}

/*
 * (2) The same frame to C, whose guest takes no offload: ceil(20000 / 1448) = 14 segments, each
 * with its IPv4 header checksum and TCP checksum right, flags 0, seq stepping by the MSS, the
 * payload in order; counted as segments made in software.
 */
static void test_tso4_segmented_for_plain_receiver(void **state)
{
	(void)state;
	five_ports();
	assert_int_equal(nsegs(&tso4), 14);
	a_to_segs(pc, &tso4, 0);
	assert_int_equal(counters(pc).soft_segments, 14);
	assert_int_equal(counters(pc).offload_passed, 0);
	expect_nothing(pb);
}

/* (3) To D, which takes checksum flags but not TSO: the segments, marked DATA_VALID. */
static void test_tso4_segmented_data_valid(void **state)
{
	(void)state;
	five_ports();
	a_to_segs(pd, &tso4, VIRTIO_NET_HDR_F_DATA_VALID);
	assert_int_equal(counters(pd).soft_segments, 14);
	assert_int_equal(counters(pd).soft_csums, 0);
}

/*
 * (4) TSO6 behind an 802.1Q tag: passed to B (csum_start and hdr_len past the tag), segmented
 * for C (IPv6 payload lengths, checksums over the IPv6 pseudo-header). ECN (gso_type | 0x80,
 * CWR set): segmented for B, which has TSO4 but not GUEST_ECN (DATA_VALID; CWR on the first
 * segment only), passed to E, which has GUEST_ECN.
 */
static void test_tso6_vlan_and_ecn(void **state)
{
	const struct tcp_spec v6 = {.v6 = true, .vlan = true, .payload = 9000, .seed = 2};
	const struct tcp_spec ecn = {.ecn = true, .payload = 5000, .seed = 3};

	(void)state;
	five_ports();
	assert_int_equal(hl_of(&v6), 18 + 40 + 32);
	a_to_passed(pb, &v6);
	a_to_segs(pc, &v6, 0);
	a_to_segs(pb, &ecn, VIRTIO_NET_HDR_F_DATA_VALID);
	a_to_passed(pe, &ecn);
	assert_int_equal(counters(pb).offload_passed, 1);
	assert_int_equal(counters(pb).soft_segments, nsegs(&ecn));
	assert_int_equal(counters(pc).soft_segments, nsegs(&v6));
	assert_int_equal(counters(pe).offload_passed, 1);
}

/* What a flood of the frame f (spec s) from A gives B..E: each what its guest takes. */
static void expect_flood(const uint8_t *f, size_t len, const struct tcp_spec *s)
{
	expect_passed(pb, f, len, s);
	expect_nothing(pb);
	expect_all_segs(pc, f, s, 0);
	expect_all_segs(pd, f, s, VIRTIO_NET_HDR_F_DATA_VALID);
	expect_passed(pe, f, len, s);
	expect_nothing(pe);
	expect_nothing(pa);
}

/*
 * (5) A TSO frame to an unknown MAC floods to B, C, D and E at once: B and E get it whole with
 * its header, C plain segments, D segments with DATA_VALID, all correct; twice (the second
 * frame's segments are its own, not the first's).
 */
static void test_flood_mixed_receivers(void **state)
{
	const struct tcp_spec second = {.payload = 7000, .seed = 9};
	size_t len;

	(void)state;
	five_ports();
	len = send_tcp(pa, mac_unknown, &tso4, frame);
	expect_flood(frame, len, &tso4);
	len = send_tcp(pa, mac_unknown, &second, frame);
	expect_flood(frame, len, &second);
	assert_int_equal(flooded(pa), 3); /* and five_ports()'s broadcast */
	assert_int_equal(counters(pc).soft_segments, nsegs(&tso4) + nsegs(&second));
	assert_int_equal(counters(pd).soft_segments, nsegs(&tso4) + nsegs(&second));
	assert_int_equal(counters(pb).offload_passed + counters(pe).offload_passed, 4);
}

/*
 * (6') One kick of A: plain frames around a TSO frame (the plain ones take the burst path, the
 * TSO frame transmit()'s): B and C get them in the order they were sent.
 */
static void test_order_around_burst(void **state)
{
	struct virtio_net_hdr_v1 h;
	size_t len;

	(void)state;
	five_ports();
	for (unsigned r = 0; r < 2; r++) {
		struct port *to = r ? pc : pb;

		for (unsigned i = 0; i < 3; i++)
			tx_queue_cut(pa, make_frame(to->mac, pa->mac, 60, 10 * r + i), 60, NULL, 0, false);
		len = tcp_build(frame, to->mac, pa->mac, &tso4, &h);
		tx_queue_hdr_cut(pa, &h, frame, len, NULL, 0, false);
		for (unsigned i = 3; i < 6; i++)
			tx_queue_cut(pa, make_frame(to->mac, pa->mac, 60, 10 * r + i), 60, NULL, 0, false);
		tx_kick(pa);
		for (unsigned i = 0; i < 3; i++)
			expect_from(to, pa, to->mac, 60, 10 * r + i);
		if (r)
			expect_segs(pc, frame, &tso4, 0, 14, 0);
		else
			expect_passed(pb, frame, len, &tso4);
		for (unsigned i = 3; i < 6; i++)
			expect_from(to, pa, to->mac, 60, 10 * r + i);
		expect_nothing(to);
	}
}

/* p's guest sets its receive offloads through its control queue (CTRL_GUEST_OFFLOADS_SET). */
static void set_guest_offloads(struct port *p, uint64_t offloads)
{
	uint8_t in[10] = {VIRTIO_NET_CTRL_GUEST_OFFLOADS, VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET};

	put_le64(in + 2, offloads);
	assert_int_equal(td_ctrl(p->td, in, sizeof(in), NULL, 0, NULL), VIRTIO_NET_OK);
}

/*
 * (5') A TSO6 frame whose TCP header lies beyond the switch's 256-byte copy of a frame's head
 * (a 200-byte destination options header): the checks read the whole frame into the worker's
 * copy, and every receiver of its flood gets what its guest takes, from that copy.
 */
static void test_flood_long_ipv6_headers(void **state)
{
	const struct tcp_spec s = {.v6 = true, .ext = 200, .payload = 12000, .seed = 11};
	size_t len;

	(void)state;
	five_ports();
	assert_true(hl_of(&s) > 256);
	len = send_tcp(pa, mac_unknown, &s, frame);
	expect_flood(frame, len, &s);
	a_to_segs(pc, &s, 0);
	assert_int_equal(counters(pa).bad_offload_hdr, 0);
}

/*
 * (6) B has no RX buffers: a plain frame, a TSO frame and another plain frame wait in its queue,
 * the TSO frame with its header, and come in order once it posts buffers. C has buffers for 5
 * of the 14 segments: it gets those, the rest waits (with a plain frame behind it) and comes
 * as C posts more, in order, none twice, none lost. B's guest turns TSO on between the
 * segments it got and the rest: the rest come as segments, not the frame again.
 */
static void test_queued_with_header(void **state)
{
	size_t len;

	(void)state;
	td_mem_size = 16u << 20;
	sw_new();
	pa = port_add_offloads(A_FEATURES, 0);
	pb = port_add_offloads(TSO_FEATURES, 0);
	pc = port_add_offloads(0, 0);
	rx_fill(pa, 32);
	rx_fill(pb, 2); /* for the other two ports' broadcasts */
	rx_fill(pc, 2);
	learn_all();
	send_from(pa, pb->mac, pa->mac, 60, 1);
	len = send_tcp(pa, pb->mac, &tso4, frame);
	send_from(pa, pb->mac, pa->mac, 60, 2);
	assert_int_equal(switch_port_queued(pb->be), 3);
	expect_nothing(pb);
	rx_fill(pb, 16);
	expect_from(pb, pa, pb->mac, 60, 1);
	expect_passed(pb, frame, len, &tso4);
	expect_from(pb, pa, pb->mac, 60, 2);
	expect_nothing(pb);
	assert_int_equal(switch_port_queued(pb->be), 0);
	assert_int_equal(counters(pb).offload_passed, 1);

	rx_fill(pc, 5);
	send_tcp(pa, pc->mac, &tso4, frame);
	send_from(pa, pc->mac, pa->mac, 60, 3);
	assert_int_equal(switch_port_queued(pc->be), 2);
	expect_segs(pc, frame, &tso4, 0, 5, 0);
	expect_nothing(pc);
	rx_fill(pc, 4);
	expect_segs(pc, frame, &tso4, 5, 9, 0);
	expect_nothing(pc);
	assert_int_equal(switch_port_queued(pc->be), 2);
	rx_fill(pc, 32);
	expect_segs(pc, frame, &tso4, 9, 14, 0);
	expect_from(pc, pa, pc->mac, 60, 3);
	expect_nothing(pc);
	assert_int_equal(switch_port_queued(pc->be), 0);
	assert_int_equal(counters(pc).soft_segments, 14);

	/* B, TSO off, has buffers for 9 segments; TSO back on, the other 5 still come as segments. */
	set_guest_offloads(pb, F(GUEST_CSUM));
	send_tcp(pa, pb->mac, &tso4, frame);
	expect_segs(pb, frame, &tso4, 0, 9, VIRTIO_NET_HDR_F_DATA_VALID);
	expect_nothing(pb);
	set_guest_offloads(pb, F(GUEST_CSUM) | F(GUEST_TSO4) | F(GUEST_TSO6));
	rx_fill(pb, 16);
	expect_segs(pb, frame, &tso4, 9, 14, VIRTIO_NET_HDR_F_DATA_VALID);
	expect_nothing(pb);
	assert_int_equal(counters(pb).soft_segments, 14);
	a_to_passed(pb, &tso4);
	assert_int_equal(counters(pb).offload_passed, 2);
	assert_int_equal(dropped(pb) + dropped(pc), 0);
}

/*
 * (7) B's guest turns its offloads off and on at run time (ethtool -K, which sends
 * CTRL_GUEST_OFFLOADS_SET): TSO off, checksum on: segments with DATA_VALID; all off: plain
 * segments; all on again: the frame with its header.
 */
static void test_offloads_changed_at_run_time(void **state)
{
	(void)state;
	five_ports();
	a_to_passed(pb, &tso4);
	set_guest_offloads(pb, F(GUEST_CSUM));
	a_to_segs(pb, &tso4, VIRTIO_NET_HDR_F_DATA_VALID);
	set_guest_offloads(pb, 0);
	a_to_segs(pb, &tso4, 0);
	set_guest_offloads(pb, F(GUEST_CSUM) | F(GUEST_TSO4) | F(GUEST_TSO6));
	a_to_passed(pb, &tso4);
	assert_int_equal(counters(pb).offload_passed, 2);
	assert_int_equal(counters(pb).soft_segments, 28);
}

/* ---- Hostile headers ---- */

/* Packets p's device dropped on its TX queue (before any backend saw them). */
static uint64_t tx_dropped(const struct port *p)
{
	return vnet_dev_queue(p->td->dev, TXQ)->stats.dropped;
}

/* The TCP frame of spec s from `from` to an unknown MAC (a flood) into frame, its header in h. */
static size_t bad_tcp(struct port *from, const struct tcp_spec *s, struct virtio_net_hdr_v1 *h)
{
	return tcp_build(frame, mac_unknown, from->mac, s, h);
}

/* p sends frame (len, header h): nothing reaches any guest. */
static void send_refused(struct port *p, const struct virtio_net_hdr_v1 *h, size_t len)
{
	tx_send_hdr(p, h, frame, len);
	for (unsigned i = 0; i < nports; i++)
		expect_nothing(&ports[i]);
}

/*
 * (8) Headers the frame contradicts, from A (flooded to an unknown MAC): GSO TCPV4 on an IPv6
 * frame, csum_offset 6 on TCP, a TCP header that runs past the frame, an IPv4 fragment, an IPv6
 * one: dropped before forwarding (no guest gets anything, A's MAC is not learnt), counted in
 * A's bad_offload_hdr. What the device refuses first (net_tx.c), not counted there but in its
 * TX queue's drops: csum_start + csum_offset past the frame, gso_size 0, GSO types A did not
 * negotiate (UFO, USO; TSO from C, which negotiated no offload).
 */
static void test_bad_headers_dropped(void **state)
{
	const struct tcp_spec s4 = {.payload = 3000, .seed = 4}, s6 = {.v6 = true, .payload = 3000};
	struct virtio_net_hdr_v1 h;
	size_t len, l4 = l4_of(&s4);

	(void)state;
	five_ports();
	/* A's frames from a MAC the switch has not learnt (five_ports() taught it A's own). */
	memcpy(pa->mac, (const uint8_t[6]){0x02, 0, 0, 0, 0, 0x5a}, 6);
	len = bad_tcp(pa, &s6, &h);
	h.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	send_refused(pa, &h, len);
	len = bad_tcp(pa, &s4, &h);
	h.csum_offset = htole16(6);
	send_refused(pa, &h, len);
	len = bad_tcp(pa, &s4, &h); /* the TCP header's 32 bytes, 24 of them in the frame */
	wbe16(frame + 16, 20 + 24);
	ip4_resum(frame + 14);
	send_refused(pa, &h, l4 + 24);
	len = bad_tcp(pa, &s4, &h); /* more fragments */
	frame[20] |= 0x20;
	ip4_resum(frame + 14);
	send_refused(pa, &h, len);
	len = bad_tcp(pa, &s6, &h); /* IPv6 with a fragment header: next header 44 */
	frame[14 + 6] = 44;
	send_refused(pa, &h, len);
	assert_int_equal(counters(pa).bad_offload_hdr, 5);
	assert_int_equal(tx_dropped(pa), 0);
	len = bad_tcp(pa, &s4, &h); /* the checksum field past the frame's end */
	h.csum_offset = htole16((uint16_t)(len - l4 - 1));
	send_refused(pa, &h, len);
	len = bad_tcp(pa, &s4, &h);
	h.gso_size = 0;
	send_refused(pa, &h, len);
	len = bad_tcp(pa, &s4, &h);
	h.gso_type = VIRTIO_NET_HDR_GSO_UDP; /* UFO: never offered */
	send_refused(pa, &h, len);
	len = bad_tcp(pa, &s4, &h);
	h.gso_type = VIRTIO_NET_HDR_GSO_UDP_L4; /* USO: not offered either */
	send_refused(pa, &h, len);
	len = bad_tcp(pc, &s4, &h); /* C negotiated neither CSUM nor HOST_TSO4 */
	send_refused(pc, &h, len);
	assert_int_equal(tx_dropped(pa), 4);
	assert_int_equal(tx_dropped(pc), 1);
	assert_int_equal(counters(pa).bad_offload_hdr, 5);
	assert_int_equal(counters(pc).bad_offload_hdr, 0);
	/* Nothing was learnt behind A: a frame to the MAC it sent from floods. */
	assert_int_equal(counters(pa).macs, 1); /* its own, learnt by five_ports() */
	send_from(pb, pa->mac, pb->mac, 60, 77);
	assert_int_equal(flooded(pb), 2);
	expect_from(pc, pb, pa->mac, 60, 77);
}

/* ---- Other paths ---- */

/*
 * (9) Two workers: A on worker 0, B (TSO) and C (no offloads) on worker 1. A's TSO frame to B,
 * to C and flooded reaches them through the cross-worker ring, header in front, as soon as the
 * workers drain it: B the frame with its header, C the segments.
 */
static void test_cross_worker(void **state)
{
	size_t len;

	(void)state;
	td_mem_size = 16u << 20;
	sw_new_workers(2);
	pa = port_add_offloads(A_FEATURES, 0);
	pb = port_add_offloads(TSO_FEATURES, 1);
	pc = port_add_offloads(0, 1);
	for (unsigned i = 0; i < nports; i++)
		rx_fill(&ports[i], 96);
	learn_all();
	a_to_passed(pb, &tso4);
	expect_nothing(pc);
	a_to_segs(pc, &tso4, 0);
	expect_nothing(pb);
	len = send_tcp(pa, mac_unknown, &tso4, frame);
	expect_passed(pb, frame, len, &tso4);
	expect_nothing(pb);
	expect_all_segs(pc, frame, &tso4, 0);
	expect_nothing(pa);
	assert_true(switch_port_crossed(pa->be) >= 3);
	assert_int_equal(counters(pb).offload_passed, 2);
	assert_int_equal(counters(pc).soft_segments, 28);
	assert_int_equal(dropped(pa), 0);
}

/* (11) A's UDP frame with its checksum left to the receiver (no GSO). */
static void test_csum_only_udp(void **state)
{
	struct virtio_net_hdr_v1 h;
	uint8_t want[HDR] = {VIRTIO_NET_HDR_F_NEEDS_CSUM};
	size_t len;

	(void)state;
	five_ports();
	len = udp_build(frame, pc->mac, pa->mac, 1000, 5, &h);
	tx_send_hdr(pa, &h, frame, len);
	/* C lacks GUEST_CSUM: one frame, its checksum completed and right, flags 0. */
	assert_int_equal(rx_take(pc, NULL), HDR + len);
	expect_plain_hdr(0, 1);
	assert_memory_equal(rx_out + HDR, frame, 34 + 6);
	assert_memory_equal(rx_out + HDR + 34 + 8, frame + 34 + 8, len - 34 - 8);
	assert_true(l4_csum_ok(rx_out + HDR, 14, 34, false, 17, len - 34));
	assert_int_not_equal(rbe16(rx_out + HDR + 34 + 6), 0);
	expect_nothing(pc);
	assert_int_equal(counters(pc).soft_csums, 1);
	/* D takes checksum flags: the frame as it is, NEEDS_CSUM at the UDP checksum. */
	len = udp_build(frame, pd->mac, pa->mac, 1000, 6, &h);
	tx_send_hdr(pa, &h, frame, len);
	assert_int_equal(rx_take(pd, NULL), HDR + len);
	put_le16(want + 6, 34);
	put_le16(want + 8, 6);
	put_le16(want + 10, 1);
	assert_memory_equal(rx_out, want, HDR);
	assert_memory_equal(rx_out + HDR, frame, len);
	assert_int_equal(counters(pd).offload_passed, 1);
	assert_int_equal(counters(pd).soft_csums, 0);
}

/* ---- An uplink (a tap trunk's side of a VLAN) ---- */

/* What the test uplink got last, and how many frames, with a header how many. */
static uint8_t up_frame[BIG];
static struct virtio_net_hdr_v1 up_hdr;
static size_t up_len;
static unsigned up_n, up_with_hdr;

static void up_deliver(void *ctx, const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
		       unsigned iovcnt, size_t off, size_t len)
{
	(void)ctx;
	assert_true(len <= sizeof(up_frame));
	up_len = iov_copy_from(iov, iovcnt, off, up_frame, len);
	memset(&up_hdr, 0, sizeof(up_hdr));
	if (hdr) {
		up_hdr = *hdr;
		up_with_hdr++;
	}
	up_n++;
}

static const struct switch_uplink_ops up_ops = {.deliver = up_deliver};

/* The counters of a switch port's handle (the uplink's: no struct port). */
static struct switch_port_counters be_counters(const struct vnet_backend *be)
{
	struct switch_port_counters c;

	switch_port_counters(be, &c);
	return c;
}

/* The uplink got frame f (len bytes) last, as the n-th frame; with a header or not. */
static void expect_uplink(const uint8_t *f, size_t len, unsigned n, unsigned with_hdr)
{
	assert_int_equal(up_n, n);
	assert_int_equal(up_with_hdr, with_hdr);
	assert_int_equal(up_len, len);
	assert_memory_equal(up_frame, f, len);
}

/*
 * (12) An uplink in a VLAN of access ports A and C: A's TSO frame to a MAC behind it comes with
 * its header (the uplink takes every offload), a plain frame with none (NULL). A TSO frame from
 * the uplink reaches A with its header, C as segments; one whose checksum lies past its end is
 * dropped and counted at the uplink.
 */
static void test_uplink_gets_header(void **state)
{
	static const uint8_t far[6] = {0x02, 0, 0, 0, 0, 0xf0};
	struct virtio_net_hdr_v1 h;
	struct vnet_backend *up;
	size_t len;

	(void)state;
	up_n = up_with_hdr = 0;
	td_mem_size = 16u << 20;
	sw_new();
	pa = port_add_offloads(A_FEATURES, 0);
	pc = port_add_offloads(0, 0);
	for (unsigned i = 0; i < nports; i++) {
		switch_port_set_access(ports[i].be, true);
		vnet_dev_attach_backend(ports[i].td->dev, switch_port_ops(ports[i].be), ports[i].be);
		rx_fill(&ports[i], 96);
	}
	up = switch_attach_uplink(sw, "p9.vlan10", 0, &up_ops, NULL);
	assert_non_null(up);
	learn_all();
	switch_uplink_send(up, NULL, make_frame(mac_bcast, far, 60, 7), 60); /* far learnt */
	pump();
	expect_frame(pa, mac_bcast, far, 60, 7);
	expect_frame(pc, mac_bcast, far, 60, 7);
	up_n = up_with_hdr = 0;

	len = send_tcp(pa, far, &tso4, frame);
	expect_uplink(frame, len, 1, 1);
	expect_offload_hdr((const uint8_t *)&up_hdr, VIRTIO_NET_HDR_GSO_TCPV4,
			   (uint16_t)hl_of(&tso4), MSS, 34, 16);
	tx_send(pa, far, 60, 8);
	expect_uplink(make_frame(far, pa->mac, 60, 8), 60, 2, 1);
	expect_nothing(pc);
	assert_int_equal(be_counters(up).offload_passed, 1);

	len = tcp_build(frame, mac_unknown, far, &tso4, &h);
	switch_uplink_send(up, &h, frame, len);
	pump();
	expect_passed(pa, frame, len, &tso4);
	expect_all_segs(pc, frame, &tso4, 0);
	h.csum_offset = htole16((uint16_t)(len - 34 - 1));
	switch_uplink_send(up, &h, frame, len);
	pump();
	expect_nothing(pa);
	expect_nothing(pc);
	assert_int_equal(be_counters(up).bad_offload_hdr, 1);
	assert_int_equal(up_n, 2);
	switch_detach(up);
}

/* ---- A guest rewriting its frame meanwhile ---- */

#if defined(VNETD_GUEST_RACE) && VNETD_GUEST_RACE
/* The other vCPU: at `at`, 0xee over bytes [off, off + n) of every frame queued since reset. */
struct race {
	enum guest_race_point at;
	size_t off, n;
	unsigned hits;
};

static struct race race;

static void race_hook(void *ctx, enum guest_race_point point)
{
	uint8_t evil[64];

	(void)ctx;
	if (point != race.at)
		return;
	race.hits++;
	memset(evil, 0xee, sizeof(evil));
	for (unsigned k = 0; k < tx_ntracked; k++)
		tx_guest_write(k, race.off, evil, race.n);
}

/*
 * A sends the TSO frame to dst cut into ncuts descriptors (the header with the frame's first 6
 * bytes, the rest split once more), while its other vCPU writes over the IP addresses and the
 * whole TCP header at `at`.
 */
static size_t send_raced(const uint8_t *dst, unsigned ncuts, enum guest_race_point at)
{
	struct virtio_net_hdr_v1 h;
	size_t len = tcp_build(frame, dst, pa->mac, &tso4, &h);
	const uint32_t cuts[2][3] = {{HDR + 6, (uint32_t)len - 6}, {HDR + 6, 1000, (uint32_t)len - 1006}};

	tx_track_reset();
	tx_queue_hdr_cut(pa, &h, frame, len, ncuts == 1 ? NULL : cuts[ncuts - 2], ncuts, false);
	race = (struct race){.at = at, .off = 26, .n = 8 + TCP_HL};
	guest_race_ctx = NULL;
	guest_race_hook = race_hook;
	tx_kick(pa);
	guest_race_hook = NULL;
	drain_workers();
	assert_true(race.hits > 0);
	return len;
}

static int race_teardown(void **state)
{
	guest_race_hook = NULL;
	return sw_teardown(state);
}

/*
 * (10) The headers A's guest rewrites after the switch checked them (admitted, or before each
 * copy) never reach a receiver: B gets the checked bytes with its header, C segments built from
 * them with right checksums; unicast and flood, in one descriptor and in several.
 */
static void test_guest_rewrites_headers(void **state)
{
	static const enum guest_race_point at[] = {GUEST_RACE_TX_ADMITTED, GUEST_RACE_TX_FORWARD};
	size_t len;

	(void)state;
	five_ports();
	for (unsigned pi = 0; pi < 2; pi++)
		for (unsigned ncuts = 1; ncuts <= 3; ncuts++) {
			/* what the round takes: two frames of 5 buffers, 28 segments, 14 and one frame */
			rx_fill(pb, 10);
			rx_fill(pc, 28);
			rx_fill(pd, 14);
			rx_fill(pe, 5);
			len = send_raced(pb->mac, ncuts, at[pi]);
			expect_passed(pb, frame, len, &tso4);
			len = send_raced(pc->mac, ncuts, at[pi]);
			expect_all_segs(pc, frame, &tso4, 0);
			len = send_raced(mac_unknown, ncuts, at[pi]);
			expect_flood(frame, len, &tso4);
		}
	assert_int_equal(counters(pa).bad_offload_hdr, 0);
}
#else
static void test_guest_rewrites_headers(void **state)
{
	(void)state;
	skip(); /* the guest_race hook is built in with -Dguest_race=true only */
}

static int race_teardown(void **state)
{
	return sw_teardown(state);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_tso4_passed_to_tso_receiver),
	    T(test_tso4_in_many_descriptors),
	    T(test_tso4_segmented_for_plain_receiver),
	    T(test_tso4_segmented_data_valid),
	    T(test_tso6_vlan_and_ecn),
	    T(test_flood_mixed_receivers),
	    T(test_flood_long_ipv6_headers),
	    T(test_queued_with_header),
	    T(test_order_around_burst),
	    T(test_offloads_changed_at_run_time),
	    T(test_bad_headers_dropped),
	    T(test_cross_worker),
	    cmocka_unit_test_teardown(test_guest_rewrites_headers, race_teardown),
	    T(test_csum_only_udp),
	    T(test_uplink_gets_header),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
