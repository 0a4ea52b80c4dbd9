/* SPDX-License-Identifier: MIT */
/* test_rss.c - RSS and hash reporting: Toeplitz vectors, the command parser, control, data path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "dev/rss/rss_cmd.h"
#include "dev/rss/toeplitz.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"
#include "dev/rss/rss_cmd_internal.h"

#define F(bit) BIT_ULL(VIRTIO_NET_F_##bit)

/* The Microsoft default key ("Verifying the RSS Hash Calculation"; DPDK test_thash.c). */
static const uint8_t ms_key[40] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
    0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
    0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

struct v4_vec {
	uint8_t src[4], dst[4];
	uint16_t sport, dport;
	uint32_t ip, tcp;
};

/* The published IPv4 verification suite: source -> destination, IP only, IP + TCP. */
static const struct v4_vec v4[] = {
    {{66, 9, 149, 187}, {161, 142, 100, 80}, 2794, 1766, 0x323e8fc2, 0x51ccc178},
    {{199, 92, 111, 2}, {65, 69, 140, 83}, 14230, 4739, 0xd718262a, 0xc626b0ea},
    {{24, 19, 198, 95}, {12, 22, 207, 184}, 12898, 38024, 0xd2d0a5de, 0x5c2b394a},
    {{38, 27, 205, 30}, {209, 142, 163, 6}, 48228, 2217, 0x82989176, 0xafc7327f},
    {{153, 39, 163, 191}, {202, 188, 127, 2}, 44251, 1303, 0x5d1809c5, 0x10e828a2},
};

struct v6_vec {
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint32_t ip, tcp;
};

/* The IPv6 suite: 3ffe:2501:200:1fff::7 -> 3ffe:2501:200:3::1 and the two others. */
static const struct v6_vec v6[] = {
    {{0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x1f, 0xff, 0, 0, 0, 0, 0, 0, 0, 7},
     {0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 1},
     2794, 1766, 0x2cc18cd5, 0x40207d3d},
    {{0x3f, 0xfe, 0x05, 0x01, 0x00, 0x08, 0, 0, 0x02, 0x60, 0x97, 0xff, 0xfe, 0x40, 0xef, 0xab},
     {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
     14230, 4739, 0x0f0c461c, 0xdde51bbf},
    {{0x3f, 0xfe, 0x19, 0x00, 0x45, 0x45, 0x00, 0x03, 0x02, 0x00, 0xf8, 0xff, 0xfe, 0x21, 0x67, 0xcf},
     {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0xf8, 0xff, 0xfe, 0x21, 0x67, 0xcf},
     44251, 38024, 0x4b61e985, 0x02d1feef},
};

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* ---- Toeplitz ---- */

static void test_toeplitz_ipv4_vectors(void **state)
{
	struct toeplitz_key k;
	uint8_t in[12];

	(void)state;
	toeplitz_key_init(&k, ms_key, sizeof(ms_key));
	for (size_t i = 0; i < sizeof(v4) / sizeof(v4[0]); i++) {
		memcpy(in, v4[i].src, 4);
		memcpy(in + 4, v4[i].dst, 4);
		put_be16(in + 8, v4[i].sport);
		put_be16(in + 10, v4[i].dport);
		assert_int_equal(toeplitz_hash(ms_key, 40, in, 8), v4[i].ip);
		assert_int_equal(toeplitz_hash(ms_key, 40, in, 12), v4[i].tcp);
		assert_int_equal(toeplitz_hash_fast(&k, in, 8), v4[i].ip);
		assert_int_equal(toeplitz_hash_fast(&k, in, 12), v4[i].tcp);
	}
}

static void test_toeplitz_ipv6_vectors(void **state)
{
	struct toeplitz_key k;
	uint8_t in[36];

	(void)state;
	toeplitz_key_init(&k, ms_key, sizeof(ms_key));
	for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
		memcpy(in, v6[i].src, 16);
		memcpy(in + 16, v6[i].dst, 16);
		put_be16(in + 32, v6[i].sport);
		put_be16(in + 34, v6[i].dport);
		assert_int_equal(toeplitz_hash(ms_key, 40, in, 32), v6[i].ip);
		assert_int_equal(toeplitz_hash(ms_key, 40, in, 36), v6[i].tcp);
		assert_int_equal(toeplitz_hash_fast(&k, in, 32), v6[i].ip);
		assert_int_equal(toeplitz_hash_fast(&k, in, 36), v6[i].tcp);
	}
}

/* A short key: the fast path treats missing key bits as 0, as the reference does. */
static void test_toeplitz_short_key_matches_reference(void **state)
{
	struct toeplitz_key k;
	uint8_t in[36];

	(void)state;
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 37 + 11);
	for (size_t kl = 0; kl <= 40; kl += 5) {
		toeplitz_key_init(&k, ms_key, kl);
		for (size_t n = 0; n <= 36; n += 4)
			assert_int_equal(toeplitz_hash_fast(&k, in, n), toeplitz_hash(ms_key, kl, in, n));
	}
}

/* ---- Frames ---- */

/* An Ethernet + IPv4 frame of vector i with protocol proto (TCP/UDP ports follow). */
static size_t frame_v4(uint8_t *f, size_t i, uint8_t proto, uint16_t frag)
{
	memset(f, 0, 64);
	f[0] = 0x02;
	f[12] = 0x08;
	f[14] = 0x45;
	put_be16(f + 14 + 6, frag);
	f[14 + 9] = proto;
	memcpy(f + 14 + 12, v4[i].src, 4);
	memcpy(f + 14 + 16, v4[i].dst, 4);
	put_be16(f + 34, v4[i].sport);
	put_be16(f + 36, v4[i].dport);
	return 14 + 20 + 20;
}

/* An Ethernet + IPv6 frame of vector i, optionally with a destination options header. */
static size_t frame_v6(uint8_t *f, size_t i, uint8_t proto, bool ext)
{
	size_t l4 = 14 + 40;

	memset(f, 0, 128);
	f[0] = 0x02;
	f[12] = 0x86;
	f[13] = 0xdd;
	f[14] = 0x60;
	f[14 + 6] = ext ? 60 : proto;
	memcpy(f + 14 + 8, v6[i].src, 16);
	memcpy(f + 14 + 24, v6[i].dst, 16);
	if (ext) {
		f[l4] = proto;
		f[l4 + 1] = 0; /* 8 bytes */
		l4 += 8;
	}
	put_be16(f + l4, v6[i].sport);
	put_be16(f + l4 + 2, v6[i].dport);
	return l4 + 20;
}

#define ALL_TYPES RSS_HASH_TYPES_SUPPORTED

static void test_frame_types_pick_fields(void **state)
{
	struct toeplitz_key k;
	uint8_t f[128];
	uint32_t h = 0;
	size_t n;

	(void)state;
	toeplitz_key_init(&k, ms_key, sizeof(ms_key));
	for (size_t i = 0; i < sizeof(v4) / sizeof(v4[0]); i++) {
		n = frame_v4(f, i, 6, 0);
		assert_int_equal(toeplitz_frame(&k, ALL_TYPES, f, n, &h), VIRTIO_NET_HASH_REPORT_TCPv4);
		assert_int_equal(h, v4[i].tcp);
		/* TCP not enabled: the addresses only. */
		assert_int_equal(toeplitz_frame(&k, VIRTIO_NET_RSS_HASH_TYPE_IPv4 |
						     VIRTIO_NET_RSS_HASH_TYPE_UDPv4, f, n, &h),
				 VIRTIO_NET_HASH_REPORT_IPv4);
		assert_int_equal(h, v4[i].ip);
		/* A fragment: addresses only, even with TCP enabled. */
		n = frame_v4(f, i, 6, 0x2000);
		assert_int_equal(toeplitz_frame(&k, ALL_TYPES, f, n, &h), VIRTIO_NET_HASH_REPORT_IPv4);
		assert_int_equal(h, v4[i].ip);
		/* UDP with the same ports hashes like TCP. */
		n = frame_v4(f, i, 17, 0);
		assert_int_equal(toeplitz_frame(&k, ALL_TYPES, f, n, &h), VIRTIO_NET_HASH_REPORT_UDPv4);
		assert_int_equal(h, v4[i].tcp);
		/* Nothing enabled for it: no hash. */
		assert_int_equal(toeplitz_frame(&k, VIRTIO_NET_RSS_HASH_TYPE_TCPv4, f, n, &h),
				 VIRTIO_NET_HASH_REPORT_NONE);
	}
	for (size_t i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
		for (int ext = 0; ext < 2; ext++) {
			n = frame_v6(f, i, 6, ext);
			assert_int_equal(toeplitz_frame(&k, ALL_TYPES, f, n, &h),
					 VIRTIO_NET_HASH_REPORT_TCPv6);
			assert_int_equal(h, v6[i].tcp);
			assert_int_equal(toeplitz_frame(&k, VIRTIO_NET_RSS_HASH_TYPE_IPv6, f, n, &h),
					 VIRTIO_NET_HASH_REPORT_IPv6);
			assert_int_equal(h, v6[i].ip);
			n = frame_v6(f, i, 17, ext);
			assert_int_equal(toeplitz_frame(&k, ALL_TYPES, f, n, &h),
					 VIRTIO_NET_HASH_REPORT_UDPv6);
			assert_int_equal(h, v6[i].tcp);
		}
		/* IPv4 types do not hash IPv6. */
		assert_int_equal(toeplitz_frame(&k, 0x7, f, n, &h), VIRTIO_NET_HASH_REPORT_NONE);
	}
}

static void test_frame_hostile_never_reads_past(void **state)
{
	struct toeplitz_key k;
	uint8_t f[128];
	uint32_t h = 0;
	size_t n;

	(void)state;
	toeplitz_key_init(&k, ms_key, sizeof(ms_key));
	/* Every truncation of a TCP/IPv4 and an IPv6 frame with an extension header. */
	n = frame_v4(f, 0, 6, 0);
	for (size_t len = 0; len < n; len++) {
		unsigned r = toeplitz_frame(&k, ALL_TYPES, f, len, &h);

		if (len < 34)
			assert_int_equal(r, VIRTIO_NET_HASH_REPORT_NONE);
		else if (len < 38)
			assert_int_equal(r, VIRTIO_NET_HASH_REPORT_IPv4);
	}
	/* An IHL larger than the packet, below 5. */
	n = frame_v4(f, 0, 6, 0);
	f[14] = 0x4f;
	assert_int_equal(toeplitz_frame(&k, ALL_TYPES, f, n, &h), VIRTIO_NET_HASH_REPORT_NONE);
	f[14] = 0x44;
	assert_int_equal(toeplitz_frame(&k, ALL_TYPES, f, n, &h), VIRTIO_NET_HASH_REPORT_NONE);
	/* An extension header whose length points past the end: addresses only. */
	n = frame_v6(f, 0, 6, true);
	f[14 + 40 + 1] = 255;
	assert_int_equal(toeplitz_frame(&k, ALL_TYPES, f, n, &h), VIRTIO_NET_HASH_REPORT_IPv6);
	assert_int_equal(h, v6[0].ip);
	/* A chain of hop-by-hop headers longer than we look. */
	memset(f + 14 + 40, 0, 128 - 54);
	f[14 + 6] = 0;
	assert_int_equal(toeplitz_frame(&k, ALL_TYPES, f, 128, &h), VIRTIO_NET_HASH_REPORT_IPv6);
}

/* ---- The command parser ---- */

static const struct rss_limits lim4 = {4, RSS_TABLE_MAX, RSS_KEY_MAX, ALL_TYPES};

/* An RSS_CONFIG payload: n table entries (queue i % pairs), max_tx_vq, a key of key_len. */
static size_t rss_payload(uint8_t *p, uint32_t types, unsigned n, unsigned pairs,
			  uint16_t max_tx_vq, unsigned key_len)
{
	size_t o = 8;

	put_le32(p, types);
	put_le16(p + 4, (uint16_t)(n - 1));
	put_le16(p + 6, 0);
	for (unsigned i = 0; i < n; i++, o += 2)
		put_le16(p + o, (uint16_t)(i % pairs));
	put_le16(p + o, max_tx_vq);
	p[o + 2] = (uint8_t)key_len;
	for (unsigned i = 0; i < key_len; i++)
		p[o + 3 + i] = i < 40 ? ms_key[i] : 0x55;
	return o + 3 + key_len;
}

static void test_parse_rss_config_good(void **state)
{
	uint8_t p[512];
	struct rss_config c;
	const char *why = NULL;
	size_t n = rss_payload(p, ALL_TYPES, 128, 4, 4, 40);

	(void)state;
	assert_int_equal(rss_cmd_parse(p, n, false, &lim4, &c, &why), 0);
	assert_int_equal(rss_cmd_parse(p, n + 1, false, &lim4, &c, &why), 0); /* as Linux 7.2 */
	assert_int_equal(c.hash_types, ALL_TYPES);
	assert_int_equal(c.table_len, 128);
	assert_int_equal(c.table[5], 1);
	assert_int_equal(c.max_tx_vq, 4);
	assert_int_equal(c.key_len, 40);
	assert_memory_equal(c.key, ms_key, 40);
	/* Hash types 0 and no key: RSS off, accepted. */
	n = rss_payload(p, 0, 1, 1, 1, 0);
	assert_int_equal(rss_cmd_parse(p, n, false, &lim4, &c, &why), 0);
}

/* Each bad payload: -1, a reason, and *out untouched. */
static void expect_bad(const uint8_t *p, size_t n, bool hash_config)
{
	struct rss_config c, before;
	const char *why = NULL;

	memset(&c, 0xa5, sizeof(c));
	before = c;
	assert_int_equal(rss_cmd_parse(p, n, hash_config, &lim4, &c, &why), -1);
	assert_non_null(why);
	assert_memory_equal(&c, &before, sizeof(c));
}

static void test_parse_rss_config_hostile(void **state)
{
	uint8_t p[1024];
	size_t n;

	(void)state;
	n = rss_payload(p, ALL_TYPES, 3, 2, 2, 40); /* not a power of two */
	expect_bad(p, n, false);
	n = rss_payload(p, ALL_TYPES, 6, 2, 2, 40);
	expect_bad(p, n, false);
	n = rss_payload(p, ALL_TYPES, 256, 2, 2, 40); /* over the maximum */
	expect_bad(p, n, false);
	n = rss_payload(p, ALL_TYPES, 8, 2, 2, 41); /* key over 40 */
	expect_bad(p, n, false);
	n = rss_payload(p, ALL_TYPES, 8, 5, 2, 40); /* queue 4 of 4 pairs */
	expect_bad(p, n, false);
	n = rss_payload(p, ALL_TYPES, 8, 2, 0, 40); /* max_tx_vq 0 */
	expect_bad(p, n, false);
	n = rss_payload(p, ALL_TYPES, 8, 2, 5, 40); /* max_tx_vq over the pairs */
	expect_bad(p, n, false);
	n = rss_payload(p, ALL_TYPES | VIRTIO_NET_RSS_HASH_TYPE_TCP_EX, 8, 2, 2, 40);
	expect_bad(p, n, false); /* unsupported hash type */
	n = rss_payload(p, 1u << 9, 8, 2, 2, 40);
	expect_bad(p, n, false);
	n = rss_payload(p, ALL_TYPES, 8, 2, 2, 0); /* hash types without a key */
	expect_bad(p, n, false);
	n = rss_payload(p, ALL_TYPES, 8, 2, 2, 40);
	put_le16(p + 6, 4); /* unclassified queue out of range */
	expect_bad(p, n, false);
	put_le16(p + 6, 0);
	for (size_t len = 0; len < n; len++)
		expect_bad(p, len, false); /* every truncation */
	put_le16(p + 4, 0xffff); /* mask 0xffff: 65536 entries */
	expect_bad(p, n, false);
}

static size_t hash_payload(uint8_t *p, uint32_t types, unsigned key_len)
{
	memset(p, 0, 13);
	put_le32(p, types);
	p[12] = (uint8_t)key_len;
	memcpy(p + 13, ms_key, key_len > 40 ? 40 : key_len);
	return 13 + key_len;
}

static void test_parse_hash_config(void **state)
{
	uint8_t p[128] = {0};
	struct rss_config c;
	const char *why;
	size_t n = hash_payload(p, ALL_TYPES, 40);

	(void)state;
	assert_int_equal(rss_cmd_parse(p, n, true, &lim4, &c, &why), 0);
	assert_int_equal(c.table_len, 1);
	assert_int_equal(c.table[0], 0);
	assert_int_equal(c.max_tx_vq, 0);
	p[7] = 1; /* reserved not zero */
	expect_bad(p, n, true);
	p[7] = 0;
	for (size_t len = 0; len < n; len++)
		expect_bad(p, len, true);
	n = hash_payload(p, ALL_TYPES, 41);
	expect_bad(p, n, true);
	n = hash_payload(p, 1u << 6, 40); /* IP_EX: not supported */
	expect_bad(p, n, true);
}

/* ---- Control commands on the device ---- */

#define RSS_FEATURES (F(MQ) | F(RSS) | F(HASH_REPORT) | F(MRG_RXBUF))

static struct test_dev *rss_dev(uint16_t pairs, uint64_t features)
{
	struct vnet_dev_params prm;
	struct test_dev *td;

	td_default_params(&prm, pairs);
	prm.rss = true;
	td = td_create(&prm, TD_BASE_FEATURES | features);
	td_start_queues(td, 256);
	assert_int_equal(td->features & features, features);
	return td;
}

static uint8_t mq_cmd(struct test_dev *td, uint8_t cmd, const uint8_t *p, size_t len)
{
	uint8_t in[1100];

	assert_true(len + 2 <= sizeof(in));
	in[0] = VIRTIO_NET_CTRL_MQ;
	in[1] = cmd;
	memcpy(in + 2, p, len);
	return td_exec(td, in, len + 2);
}

static void test_config_space_advertises_rss(void **state)
{
	struct vnet_dev_params prm;
	struct test_dev *td = rss_dev(4, RSS_FEATURES);
	uint8_t cfg[32];

	(void)state;
	assert_int_equal(vnet_dev_config_read(td->dev, 0, cfg, sizeof(cfg)), 24);
	assert_int_equal(cfg[17], 40);                   /* rss_max_key_size */
	assert_int_equal(get_le16(cfg + 18), 128);       /* rss_max_indirection_table_length */
	assert_int_equal(get_le32(cfg + 20), ALL_TYPES); /* supported_hash_types */
	assert_int_equal(get_le16(cfg + 8), 4);          /* max_virtqueue_pairs */
	td_free(td);
	/* Without rss=on: neither feature, and the 12-byte config space of before. */
	td_default_params(&prm, 4);
	td = td_create(&prm, ~0ull);
	assert_false(vnet_dev_offered_features(td->dev) & (F(RSS) | F(HASH_REPORT)));
	assert_int_equal(vnet_dev_config_read(td->dev, 0, cfg, sizeof(cfg)), 12);
	td_free(td);
}

static void test_ctrl_rss_config_applies_and_refuses(void **state)
{
	struct test_dev *td = rss_dev(4, RSS_FEATURES);
	uint8_t p[1024];
	struct rss_config before;
	bool steer, report;
	size_t n;

	(void)state;
	n = rss_payload(p, ALL_TYPES, 8, 2, 2, 40);
	assert_int_equal(mq_cmd(td, VIRTIO_NET_CTRL_MQ_RSS_CONFIG, p, n), VIRTIO_NET_OK);
	const struct rss_config *c = vnet_dev_rss(td->dev, &steer, &report);
	assert_true(steer);
	assert_true(report);
	assert_int_equal(c->table_len, 8);
	assert_int_equal(vnet_dev_active_pairs(td->dev), 2);
	before = *c;
	/* Hostile: ERR and nothing changed, each time. */
	const struct {
		uint32_t types;
		unsigned n, pairs;
		uint16_t max_tx;
		unsigned key;
	} bad[] = {
	    {ALL_TYPES, 6, 2, 2, 40},   {ALL_TYPES, 256, 2, 2, 40}, {ALL_TYPES, 8, 2, 2, 41},
	    {ALL_TYPES, 8, 5, 2, 40},   {ALL_TYPES, 8, 2, 0, 40},   {ALL_TYPES, 8, 2, 5, 40},
	    {0x1ff, 8, 2, 2, 40},       {ALL_TYPES, 8, 2, 2, 0},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = rss_payload(p, bad[i].types, bad[i].n, bad[i].pairs, bad[i].max_tx, bad[i].key);
		assert_int_equal(mq_cmd(td, VIRTIO_NET_CTRL_MQ_RSS_CONFIG, p, n), VIRTIO_NET_ERR);
		c = vnet_dev_rss(td->dev, &steer, &report);
		assert_memory_equal(c, &before, sizeof(before));
		assert_true(steer);
		assert_int_equal(vnet_dev_active_pairs(td->dev), 2);
	}
	/* HASH_CONFIG: hash types and key, no steering. */
	n = hash_payload(p, VIRTIO_NET_RSS_HASH_TYPE_IPv4, 40);
	assert_int_equal(mq_cmd(td, VIRTIO_NET_CTRL_MQ_HASH_CONFIG, p, n), VIRTIO_NET_OK);
	c = vnet_dev_rss(td->dev, &steer, &report);
	assert_false(steer);
	assert_true(report);
	assert_int_equal(c->hash_types, VIRTIO_NET_RSS_HASH_TYPE_IPv4);
	/* VQ_PAIRS_SET ends it (as QEMU). */
	put_le16(p, 3);
	assert_int_equal(mq_cmd(td, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, p, 2), VIRTIO_NET_OK);
	c = vnet_dev_rss(td->dev, &steer, &report);
	assert_false(steer || report);
	assert_int_equal(c->hash_types, 0);
	/* Reset: off. */
	n = rss_payload(p, ALL_TYPES, 8, 2, 2, 40);
	assert_int_equal(mq_cmd(td, VIRTIO_NET_CTRL_MQ_RSS_CONFIG, p, n), VIRTIO_NET_OK);
	vnet_dev_reset(td->dev);
	vnet_dev_rss(td->dev, &steer, &report);
	assert_false(steer || report);
	td_free(td);
}

static void test_ctrl_rss_needs_its_feature(void **state)
{
	struct test_dev *td = rss_dev(4, F(MQ));
	uint8_t p[512];
	size_t n;

	(void)state;
	n = rss_payload(p, ALL_TYPES, 8, 2, 2, 40);
	assert_int_equal(mq_cmd(td, VIRTIO_NET_CTRL_MQ_RSS_CONFIG, p, n), VIRTIO_NET_ERR);
	n = hash_payload(p, ALL_TYPES, 40);
	assert_int_equal(mq_cmd(td, VIRTIO_NET_CTRL_MQ_HASH_CONFIG, p, n), VIRTIO_NET_ERR);
	td_free(td);
	/* RSS without HASH_REPORT: RSS_CONFIG yes, HASH_CONFIG no. */
	td = rss_dev(4, F(MQ) | F(RSS));
	n = rss_payload(p, ALL_TYPES, 8, 2, 2, 40);
	assert_int_equal(mq_cmd(td, VIRTIO_NET_CTRL_MQ_RSS_CONFIG, p, n), VIRTIO_NET_OK);
	n = hash_payload(p, ALL_TYPES, 40);
	assert_int_equal(mq_cmd(td, VIRTIO_NET_CTRL_MQ_HASH_CONFIG, p, n), VIRTIO_NET_ERR);
	td_free(td);
}

/* Through the control queue itself, as Linux lays it out: 4 readable pieces, then the ack. */
static void test_ctrl_rss_through_the_queue(void **state)
{
	struct test_dev *td = rss_dev(2, RSS_FEATURES);
	uint8_t in[600];
	uint32_t used = 0;
	size_t n;

	(void)state;
	in[0] = VIRTIO_NET_CTRL_MQ;
	in[1] = VIRTIO_NET_CTRL_MQ_RSS_CONFIG;
	n = rss_payload(in + 2, ALL_TYPES, 128, 2, 2, 40);
	assert_int_equal(td_ctrl(td, in, n + 2, NULL, 0, &used), VIRTIO_NET_OK);
	assert_int_equal(used, 1);
	in[2 + 4] = 2; /* mask 2: 3 entries */
	assert_int_equal(td_ctrl(td, in, n + 2, NULL, 0, &used), VIRTIO_NET_ERR);
	td_free(td);
}

/* ---- Data path ---- */

#define RXBUF 2048

/* Deliver frame f of n bytes; returns the RX queue pair it landed on (the ring's used entry)
 * and copies the 20-byte header it got into hdr. */
static int deliver(struct test_dev *td, const uint8_t *f, size_t n, uint64_t *gpa,
		   struct virtio_net_hdr_v1_hash *hdr)
{
	struct iovec iov = {(void *)(uintptr_t)f, n};
	uint32_t id, len;
	int got = -1;

	assert_int_equal(vnet_dev_receive_frame(td->dev, NULL, &iov, 1, 0, n), 1);
	vnet_dev_rx_flush(td->dev);
	for (unsigned pair = 0; pair < td->nqueues / 2; pair++) {
		struct fake_vq *q = &td->vq[2 * pair];

		if (fake_vq_get_used(q, &id, &len)) {
			assert_int_equal(got, -1);
			got = (int)pair;
			assert_int_equal(len, td->features & F(HASH_REPORT) ? 20 + n : 12 + n);
			memcpy(hdr, fake_mem_host(&td->mem, gpa[pair]), sizeof(*hdr));
			assert_memory_equal((uint8_t *)fake_mem_host(&td->mem, gpa[pair]) + len - n,
					    f, n);
			gpa[pair] = td_post_rx(td, 2 * pair, 1, RXBUF);
		}
	}
	return got;
}

/* Mixed for the key: every byte depends on the flow number. */
static void set_key(uint8_t *p, size_t n)
{
	size_t o = n - 40;

	for (unsigned i = 0; i < 40; i++)
		p[o + i] = ms_key[i];
}

static void test_rx_queue_from_table_and_hash_in_header(void **state)
{
	struct test_dev *td = rss_dev(4, RSS_FEATURES);
	struct virtio_net_hdr_v1_hash hdr;
	struct toeplitz_key k;
	uint64_t gpa[4];
	uint8_t p[600], f[128];
	unsigned hits[4] = {0};
	size_t n;

	(void)state;
	for (unsigned i = 0; i < 4; i++)
		gpa[i] = td_post_rx(td, 2 * i, 1, RXBUF);
	/* Table: queue 1 once, queue 3 three times (ethtool -X weight 0 1 0 3). */
	n = rss_payload(p, ALL_TYPES, 128, 4, 4, 40);
	for (unsigned i = 0; i < 128; i++)
		put_le16(p + 8 + 2 * i, i % 4 == 0 ? 1 : 3);
	set_key(p, n);
	assert_int_equal(mq_cmd(td, VIRTIO_NET_CTRL_MQ_RSS_CONFIG, p, n), VIRTIO_NET_OK);
	toeplitz_key_init(&k, ms_key, 40);
	for (unsigned flow = 0; flow < 64; flow++) {
		uint32_t want;
		size_t fl = frame_v4(f, flow % 5, 6, 0);
		int pair;

		put_be16(f + 34, (uint16_t)(1000 + flow * 7));
		assert_int_equal(toeplitz_frame(&k, ALL_TYPES, f, fl, &want), VIRTIO_NET_HASH_REPORT_TCPv4);
		pair = deliver(td, f, fl, gpa, &hdr);
		assert_int_equal(pair, (want & 127) % 4 == 0 ? 1 : 3);
		assert_int_equal(le32toh(hdr.hash_value), want);
		assert_int_equal(le16toh(hdr.hash_report), VIRTIO_NET_HASH_REPORT_TCPv4);
		assert_int_equal(hdr.padding_reserved, 0);
		assert_int_equal(le16toh(hdr.hdr.num_buffers), 1);
		hits[pair]++;
	}
	assert_int_equal(hits[0] + hits[2], 0);
	assert_true(hits[1] > 0 && hits[3] > hits[1]);
	/* A published vector lands where its hash says and reports that hash. */
	n = frame_v4(f, 0, 6, 0);
	deliver(td, f, n, gpa, &hdr);
	assert_int_equal(le32toh(hdr.hash_value), v4[0].tcp);
	n = frame_v6(f, 2, 6, false);
	deliver(td, f, n, gpa, &hdr);
	assert_int_equal(le32toh(hdr.hash_value), v6[2].tcp);
	assert_int_equal(le16toh(hdr.hash_report), VIRTIO_NET_HASH_REPORT_TCPv6);
	/* ARP: no hash, the unclassified queue (0), report NONE, value 0. */
	memset(f, 0, 60);
	f[0] = 0xff;
	f[12] = 0x08;
	f[13] = 0x06;
	assert_int_equal(deliver(td, f, 60, gpa, &hdr), 0);
	assert_int_equal(hdr.hash_report, 0);
	assert_int_equal(hdr.hash_value, 0);
	/* RSS off again (VQ_PAIRS_SET): header fields zero, the old spreading. */
	put_le16(p, 4);
	assert_int_equal(mq_cmd(td, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, p, 2), VIRTIO_NET_OK);
	n = frame_v4(f, 1, 6, 0);
	assert_true(deliver(td, f, n, gpa, &hdr) >= 0);
	assert_int_equal(hdr.hash_report, 0);
	assert_int_equal(hdr.hash_value, 0);
	td_free(td);
}

/* A frame split across iovecs is hashed the same (the headers are gathered). */
static void test_rx_hash_of_split_frame(void **state)
{
	struct test_dev *td = rss_dev(2, RSS_FEATURES);
	uint8_t p[600], f[128];
	struct iovec iov[3];
	uint64_t gpa[2];
	uint32_t id, len;
	size_t n;

	(void)state;
	gpa[0] = td_post_rx(td, 0, 1, RXBUF);
	gpa[1] = td_post_rx(td, 2, 1, RXBUF);
	n = hash_payload(p, ALL_TYPES, 40);
	assert_int_equal(mq_cmd(td, VIRTIO_NET_CTRL_MQ_HASH_CONFIG, p, n), VIRTIO_NET_OK);
	n = frame_v6(f, 1, 17, true);
	iov[0] = (struct iovec){f, 10};
	iov[1] = (struct iovec){f + 10, 40};
	iov[2] = (struct iovec){f + 50, n - 50};
	assert_int_equal(vnet_dev_receive_frame(td->dev, NULL, iov, 3, 0, n), 1);
	vnet_dev_rx_flush(td->dev);
	for (unsigned q = 0; q < 2; q++) {
		if (!fake_vq_get_used(&td->vq[2 * q], &id, &len))
			continue;
		struct virtio_net_hdr_v1_hash *h = fake_mem_host(&td->mem, gpa[q]);
		assert_int_equal(le32toh(h->hash_value), v6[1].tcp);
		assert_int_equal(le16toh(h->hash_report), VIRTIO_NET_HASH_REPORT_UDPv6);
	}
	td_free(td);
}

/* With HASH_REPORT the guest's TX header is 20 bytes: the backend gets the frame after it. */
static void test_tx_skips_the_20_byte_header(void **state)
{
	struct test_dev *td = rss_dev(1, F(HASH_REPORT));
	struct fake_buf b[2];
	uint8_t *h, *d;
	uint32_t id, len;

	(void)state;
	b[0] = (struct fake_buf){fake_mem_alloc(&td->mem, 20, 8), 20, false};
	b[1] = (struct fake_buf){fake_mem_alloc(&td->mem, 60, 8), 60, false};
	h = fake_mem_host(&td->mem, b[0].gpa);
	memset(h, 0, 20);
	memset(h + 12, 0x77, 8); /* hash fields: ignored */
	d = fake_mem_host(&td->mem, b[1].gpa);
	for (unsigned i = 0; i < 60; i++)
		d[i] = (uint8_t)i;
	fake_vq_add_chain(&td->vq[1], b, 2);
	fake_vq_publish(&td->vq[1]);
	vnet_dev_kick(td->dev, 1);
	assert_true(fake_vq_get_used(&td->vq[1], &id, &len));
	assert_int_equal(td->npkts, 1);
	assert_int_equal(td->pkts[0].len, 12 + 60);
	assert_memory_equal(td->pkts[0].data + 12, d, 60);
	td_free(td);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_toeplitz_ipv4_vectors),
	    cmocka_unit_test(test_toeplitz_ipv6_vectors),
	    cmocka_unit_test(test_toeplitz_short_key_matches_reference),
	    cmocka_unit_test(test_frame_types_pick_fields),
	    cmocka_unit_test(test_frame_hostile_never_reads_past),
	    cmocka_unit_test(test_parse_rss_config_good),
	    cmocka_unit_test(test_parse_rss_config_hostile),
	    cmocka_unit_test(test_parse_hash_config),
	    cmocka_unit_test_teardown(test_config_space_advertises_rss, td_cleanup),
	    cmocka_unit_test_teardown(test_ctrl_rss_config_applies_and_refuses, td_cleanup),
	    cmocka_unit_test_teardown(test_ctrl_rss_needs_its_feature, td_cleanup),
	    cmocka_unit_test_teardown(test_ctrl_rss_through_the_queue, td_cleanup),
	    cmocka_unit_test_teardown(test_rx_queue_from_table_and_hash_in_header, td_cleanup),
	    cmocka_unit_test_teardown(test_rx_hash_of_split_frame, td_cleanup),
	    cmocka_unit_test_teardown(test_tx_skips_the_20_byte_header, td_cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
