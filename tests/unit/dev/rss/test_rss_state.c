/* SPDX-License-Identifier: MIT */
/* test_rss_state.c - RSS settings across migration (DEVICE_STATE) and restart (--state-dir). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "port/port_state.h"
#include "dev/rss/rss_cmd.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

#define F(bit) BIT_ULL(VIRTIO_NET_F_##bit)
#define RSS_FEATURES (F(MQ) | F(RSS) | F(HASH_REPORT) | F(MRG_RXBUF))
#define TYPES 0x3fu
/* Where the RSS section starts in a stream of a 2-pair device with empty MAC tables. */
#define RSS_AT (22u + 4 * 10 + 5 * 10)

static const struct rss_limits lim2 = {2, RSS_TABLE_MAX, RSS_KEY_MAX, TYPES};

static struct test_dev *dev_of(uint16_t pairs, bool rss, uint64_t features)
{
	struct vnet_dev_params prm;
	struct test_dev *td;

	td_default_params(&prm, pairs);
	prm.rss = rss;
	td = td_create(&prm, TD_BASE_FEATURES | features);
	assert_non_null(td);
	return td;
}

/* RSS_CONFIG: a table of n entries, entry i -> queue (i % 4 == 0 ? 0 : 1) (weights 1 3). */
static uint8_t rss_config(struct test_dev *td, uint32_t types, unsigned n, unsigned key_len)
{
	uint8_t in[2 + 8 + 2 * RSS_TABLE_MAX + 3 + RSS_KEY_MAX];
	size_t o = 2 + 8;

	in[0] = VIRTIO_NET_CTRL_MQ;
	in[1] = VIRTIO_NET_CTRL_MQ_RSS_CONFIG;
	put_le32(in + 2, types);
	put_le16(in + 6, (uint16_t)(n - 1));
	put_le16(in + 8, 1); /* unclassified: queue 1 */
	for (unsigned i = 0; i < n; i++, o += 2)
		put_le16(in + o, i % 4 ? 1 : 0);
	put_le16(in + o, 2);
	in[o + 2] = (uint8_t)key_len;
	for (unsigned i = 0; i < key_len; i++)
		in[o + 3 + i] = (uint8_t)(0xa0 + i);
	return td_exec(td, in, o + 3 + key_len);
}

/* A valid RSS_CONFIG-like setting of n entries. */
static struct rss_config good_cfg(unsigned n)
{
	struct rss_config c;

	memset(&c, 0, sizeof(c));
	c.hash_types = TYPES;
	c.table_len = (uint16_t)n;
	c.max_tx_vq = 2;
	c.key_len = 40;
	for (unsigned i = 0; i < 40; i++)
		c.key[i] = (uint8_t)(i + 1);
	for (unsigned i = 0; i < n; i++)
		c.table[i] = (uint16_t)(i & 1);
	return c;
}

static void test_config_check(void **state)
{
	struct rss_config c, off;
	const char *why;

	(void)state;
	memset(&off, 0, sizeof(off));
	assert_int_equal(rss_config_check(&off, false, &lim2, &why), 0);
	c = good_cfg(128);
	assert_int_equal(rss_config_check(&c, true, &lim2, &why), 0);
	c.hash_types = 0; /* an RSS_CONFIG without hash types: kept, does not steer */
	assert_int_equal(rss_config_check(&c, false, &lim2, &why), 0);
	assert_int_equal(rss_config_check(&c, true, &lim2, &why), -1);
	/* What HASH_CONFIG leaves: one entry naming queue 0, max_tx_vq 0. */
	c = good_cfg(1);
	c.table[0] = 0;
	c.max_tx_vq = 0;
	assert_int_equal(rss_config_check(&c, false, &lim2, &why), 0);
	assert_int_equal(rss_config_check(&c, true, &lim2, &why), -1);

	/* Hostile: each refused with its reason. */
	static const struct {
		int what;
		const char *why;
	} bad[] = {
	    {0, "indirection table length not a power of two"},
	    {1, "indirection table longer than the maximum"},
	    {2, "key longer than rss_max_key_size"},
	    {3, "indirection table names a queue out of range"},
	    {4, "unclassified queue out of range"},
	    {5, "unsupported hash types"},
	    {6, "hash types without a key"},
	    {7, "max_tx_vq out of range"},
	    {8, "indirection table entries past its length"},
	    {9, "key bytes past its length"},
	    {10, "RSS settings without an indirection table"},
	    {11, "HASH_CONFIG settings with a table"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = good_cfg(8);
		switch (bad[i].what) {
		case 0: c.table_len = 6; break;
		case 1: c.table_len = 256; break;
		case 2: c.key_len = 41; break;
		case 3: c.table[5] = 2; break;
		case 4: c.unclassified = 2; break;
		case 5: c.hash_types |= 1u << 6; break; /* IP_EX: not supported */
		case 6: c.key_len = 0; memset(c.key, 0, sizeof(c.key)); break;
		case 7: c.max_tx_vq = 3; break;
		case 8: c.table[8] = 1; break;
		case 9: c.key_len = 20; break;
		case 10: memset(&c, 0, sizeof(c)); c.hash_types = 1; break;
		case 11: c.max_tx_vq = 0; break;
		}
		why = NULL;
		assert_int_equal(rss_config_check(&c, false, &lim2, &why), -1);
		assert_string_equal(why, bad[i].why);
	}
}

static void assert_same_rss(struct vnet_dev *a, struct vnet_dev *b)
{
	bool sa, ra, sb, rb;
	const struct rss_config *ca = vnet_dev_rss(a, &sa, &ra), *cb = vnet_dev_rss(b, &sb, &rb);

	assert_memory_equal(ca, cb, sizeof(*ca));
	assert_int_equal(sa, sb);
	assert_int_equal(ra, rb);
}

static void test_dev_state_round_trip(void **state)
{
	struct test_dev *a = dev_of(2, true, RSS_FEATURES), *b = dev_of(2, true, RSS_FEATURES);
	static uint8_t buf[VNET_STATE_MAX], buf2[VNET_STATE_MAX];
	const struct rss_config *c;
	bool steer, report;
	const char *why;
	size_t n;

	(void)state;
	assert_int_equal(rss_config(a, TYPES, 128, 40), VIRTIO_NET_OK);
	n = vnet_dev_state_save(a->dev, buf, sizeof(buf));
	assert_int_equal(n, RSS_AT + 12 + 40 + 256);
	assert_int_equal(buf[4], 2); /* version 2 */
	assert_int_equal(vnet_dev_state_load(b->dev, buf, n, &why), 0);
	assert_same_rss(a->dev, b->dev);
	c = vnet_dev_rss(b->dev, &steer, &report);
	assert_true(steer && report);
	assert_int_equal(c->table_len, 128);
	assert_int_equal(c->table[0], 0);
	assert_int_equal(c->table[1], 1);
	assert_int_equal(c->unclassified, 1);
	assert_int_equal(c->key[39], 0xa0 + 39);
	assert_int_equal(vnet_dev_active_pairs(b->dev), 2);
	assert_int_equal(vnet_dev_state_save(b->dev, buf2, sizeof(buf2)), n);
	assert_memory_equal(buf, buf2, n);

	/* HASH_CONFIG's settings (no steering) travel too. */
	uint8_t hc[2 + 13 + 40] = {VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_HASH_CONFIG};
	put_le32(hc + 2, 1);
	hc[2 + 12] = 40;
	assert_int_equal(td_exec(a, hc, sizeof(hc)), VIRTIO_NET_OK);
	n = vnet_dev_state_save(a->dev, buf, sizeof(buf));
	assert_int_equal(vnet_dev_state_load(b->dev, buf, n, &why), 0);
	assert_same_rss(a->dev, b->dev);
	c = vnet_dev_rss(b->dev, &steer, &report);
	assert_false(steer);
	assert_true(report);

	/* RSS off: the empty section, and the destination's settings switched off. */
	put_le16(hc, 0);
	uint8_t pairs[4] = {VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, 2, 0};
	assert_int_equal(td_exec(a, pairs, sizeof(pairs)), VIRTIO_NET_OK); /* ends RSS */
	n = vnet_dev_state_save(a->dev, buf, sizeof(buf));
	assert_int_equal(n, RSS_AT + 12);
	assert_int_equal(vnet_dev_state_load(b->dev, buf, n, &why), 0);
	c = vnet_dev_rss(b->dev, &steer, &report);
	assert_int_equal(c->table_len, 0);
	assert_false(steer || report);
	td_free(a);
	td_free(b);
}

/* Settings loaded before SET_FEATURES report the hash once HASH_REPORT is negotiated. */
static void test_dev_state_before_features(void **state)
{
	struct test_dev *a = dev_of(2, true, RSS_FEATURES), *b = dev_of(2, true, 0);
	static uint8_t buf[VNET_STATE_MAX];
	bool steer, report;
	const char *why;
	size_t n;

	(void)state;
	assert_int_equal(rss_config(a, TYPES, 8, 40), VIRTIO_NET_OK);
	n = vnet_dev_state_save(a->dev, buf, sizeof(buf));
	assert_int_equal(vnet_dev_state_load(b->dev, buf, n, &why), 0);
	vnet_dev_rss(b->dev, &steer, &report);
	assert_true(steer);
	assert_false(report); /* not negotiated yet */
	assert_int_equal(vnet_dev_set_features(b->dev, vnet_dev_features(b->dev) | RSS_FEATURES), 0);
	vnet_dev_rss(b->dev, &steer, &report);
	assert_true(steer && report);
	td_free(a);
	td_free(b);
}

/* A version 1 stream (no RSS section) still loads, with RSS off. */
static void test_dev_state_version1(void **state)
{
	struct test_dev *a = dev_of(2, true, RSS_FEATURES), *b = dev_of(2, true, RSS_FEATURES);
	static uint8_t buf[VNET_STATE_MAX];
	bool steer, report;
	const char *why;
	size_t n;

	(void)state;
	assert_int_equal(rss_config(b, TYPES, 8, 40), VIRTIO_NET_OK);
	n = vnet_dev_state_save(a->dev, buf, sizeof(buf));
	assert_int_equal(n, RSS_AT + 12);
	buf[4] = 1;
	assert_int_equal(vnet_dev_state_load(b->dev, buf, RSS_AT + 12, &why), -1);
	assert_string_equal(why, "device state length does not match its contents");
	assert_int_equal(vnet_dev_state_load(b->dev, buf, RSS_AT, &why), 0);
	assert_int_equal(vnet_dev_rss(b->dev, &steer, &report)->table_len, 0);
	assert_false(steer || report);
	td_free(a);
	td_free(b);
}

static void test_dev_state_hostile(void **state)
{
	struct test_dev *a = dev_of(2, true, RSS_FEATURES), *b = dev_of(2, true, RSS_FEATURES);
	struct test_dev *plain = dev_of(2, false, F(MQ) | F(MRG_RXBUF));
	static uint8_t buf[VNET_STATE_MAX], bad[VNET_STATE_MAX], before[VNET_STATE_MAX];
	static uint8_t after[VNET_STATE_MAX];
	const char *why;
	size_t n, nb;
	static const struct {
		size_t off;   /* in the RSS section */
		uint16_t val; /* a u8 below 256 at off, else le16 of val - 256 */
		bool le16;
		const char *why;
	} flips[] = {
	    {0, 2, false, "bad RSS flags"},
	    {5, 3, true, "device state length does not match its contents"},
	    {5, 129, true, "indirection table longer than the maximum"},
	    {11, 41, false, "key longer than rss_max_key_size"},
	    {12 + 40 + 2 * 5, 2, true, "indirection table names a queue out of range"},
	    {7, 2, true, "unclassified queue out of range"},
	    {1, 0x7f, false, "unsupported hash types"},
	    {9, 3, true, "max_tx_vq out of range"},
	};

	(void)state;
	assert_int_equal(rss_config(a, TYPES, 8, 40), VIRTIO_NET_OK);
	assert_int_equal(rss_config(b, TYPES, 4, 40), VIRTIO_NET_OK);
	n = vnet_dev_state_save(a->dev, buf, sizeof(buf));
	nb = vnet_dev_state_save(b->dev, before, sizeof(before));
	for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
		memcpy(bad, buf, n);
		if (flips[i].le16)
			put_le16(bad + RSS_AT + flips[i].off, flips[i].val);
		else
			bad[RSS_AT + flips[i].off] = (uint8_t)flips[i].val;
		why = NULL;
		assert_int_equal(vnet_dev_state_load(b->dev, bad, n, &why), -1);
		assert_string_equal(why, flips[i].why);
	}
	/* Not a power of two, with a length to match. */
	memcpy(bad, buf, n);
	put_le16(bad + RSS_AT + 5, 6);
	assert_int_equal(vnet_dev_state_load(b->dev, bad, n - 4, &why), -1);
	assert_string_equal(why, "indirection table length not a power of two");
	/* Every truncation and extension. */
	for (size_t len = 0; len < n + 8; len++)
		if (len != n && len != RSS_AT)
			assert_int_equal(vnet_dev_state_load(b->dev, buf, len, &why), -1);
	/* Nothing of it was applied. */
	assert_int_equal(vnet_dev_state_save(b->dev, after, sizeof(after)), nb);
	assert_memory_equal(after, before, nb);
	/* A device without rss=on refuses settings, not an empty section. */
	assert_int_equal(vnet_dev_state_load(plain->dev, buf, n, &why), -1);
	assert_string_equal(why, "RSS settings for a device without rss=on");
	n = vnet_dev_state_save(plain->dev, buf, sizeof(buf));
	assert_int_equal(vnet_dev_state_load(plain->dev, buf, n, &why), 0);
	td_free(plain);
	td_free(a);
	td_free(b);
}

/* --state-dir: restored into a running device, an RSS_CONFIG's pairs with it. */
static void test_restore_rss(void **state)
{
	struct test_dev *a = dev_of(2, true, RSS_FEATURES), *plain = dev_of(2, false, F(MQ));
	struct rss_config c = good_cfg(16);
	bool steer, report;
	const char *why;

	(void)state;
	td_start_queues(a, 64);
	assert_int_equal(vnet_dev_active_pairs(a->dev), 1);
	assert_int_equal(vnet_dev_restore_rss(a->dev, &c, true, &why), 0);
	assert_memory_equal(vnet_dev_rss(a->dev, &steer, &report), &c, sizeof(c));
	assert_true(steer && report);
	assert_int_equal(vnet_dev_active_pairs(a->dev), 2);
	c.table[3] = 7;
	assert_int_equal(vnet_dev_restore_rss(a->dev, &c, true, &why), -1);
	c.table[3] = 1;
	assert_int_equal(vnet_dev_rss(a->dev, &steer, &report)->table[3], 1);
	assert_int_equal(vnet_dev_restore_rss(plain->dev, &c, true, &why), -1);
	assert_string_equal(why, "neither RSS nor HASH_REPORT negotiated");
	td_free(plain);
	td_free(a);
}

/* ---- the state file's "rss" ---- */

static const char *const SOCK = "/run/vm.sock";

static void test_state_file_round_trip(void **state)
{
	struct port_state st, back;
	char err[256], *text;

	(void)state;
	memset(&st, 0, sizeof(st));
	st.nqueues = 5;
	st.rx.present = true;
	st.rx.mode = PORT_RX_PROMISC;
	port_state_rss_from(&st.rss, &(struct rss_config){0}, false);
	text = port_state_format(&st, SOCK);
	assert_non_null(strstr(text, "\"version\":3"));
	assert_non_null(strstr(text, "\"rss\":null"));
	assert_int_equal(port_state_parse(text, strlen(text), SOCK, 5, &back, err, sizeof(err)), 0);
	assert_memory_equal(&st, &back, sizeof(st));
	free(text);

	struct rss_config c = good_cfg(128);
	port_state_rss_from(&st.rss, &c, true);
	text = port_state_format(&st, SOCK);
	assert_non_null(strstr(text, "\"steering\":true"));
	assert_int_equal(port_state_parse(text, strlen(text), SOCK, 5, &back, err, sizeof(err)), 0);
	assert_memory_equal(&st, &back, sizeof(st));
	assert_true(back.rss.present && back.rss.steer);
	free(text);
	/* The same settings for a port with one queue pair: queue 1 is out of range. */
	st.nqueues = 3;
	text = port_state_format(&st, SOCK);
	assert_int_equal(port_state_parse(text, strlen(text), SOCK, 3, &back, err, sizeof(err)), -1);
	assert_string_equal(err, "rss: indirection table names a queue out of range");
	free(text);
}

/* Version 1 and 2 files still read: no RSS settings. */
static void test_state_file_old_versions(void **state)
{
	static const char v1[] = "{\"version\":1,\"socket\":\"/run/vm.sock\",\"queues\":[[8,50,\"guest\"]]}";
	static const char v2[] = "{\"version\":2,\"socket\":\"/run/vm.sock\",\"queues\":[],\"rx\":"
				 "{\"mode\":[],\"mac\":null,\"unicast\":[],\"multicast\":[],"
				 "\"unicast_overflow\":false,\"multicast_overflow\":false}}";
	struct port_state st;
	char err[256];

	(void)state;
	assert_int_equal(port_state_parse(v1, strlen(v1), SOCK, 5, &st, err, sizeof(err)), 0);
	assert_false(st.rss.present);
	assert_int_equal(st.q[0].params.max_usecs, 50);
	assert_int_equal(port_state_parse(v2, strlen(v2), SOCK, 5, &st, err, sizeof(err)), 0);
	assert_true(st.rx.present);
	assert_false(st.rss.present);
	assert_int_equal(st.rss.cfg.table_len, 0);
}

static void test_state_file_hostile(void **state)
{
	static const char head[] = "{\"version\":3,\"socket\":\"/run/vm.sock\",\"queues\":[],\"rx\":"
				   "{\"mode\":[],\"mac\":null,\"unicast\":[],\"multicast\":[],"
				   "\"unicast_overflow\":false,\"multicast_overflow\":false},\"rss\":";
	static const char key40[] = "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
				    "202122232425262728";
	static const char *const bad[] = {
	    "{}",
	    "[]",
	    "1",
	    "{\"steering\":true,\"hash_types\":63,\"key\":\"%s\",\"table\":[0,1,0],\"unclassified\":0,"
	    "\"max_tx_vq\":2}",
	    "{\"steering\":true,\"hash_types\":63,\"key\":\"%s\",\"table\":[],\"unclassified\":0,"
	    "\"max_tx_vq\":2}",
	    "{\"steering\":true,\"hash_types\":63,\"key\":\"%s00\",\"table\":[0,1],\"unclassified\":0,"
	    "\"max_tx_vq\":2}",
	    "{\"steering\":true,\"hash_types\":63,\"key\":\"%s0\",\"table\":[0,1],\"unclassified\":0,"
	    "\"max_tx_vq\":2}",
	    "{\"steering\":true,\"hash_types\":63,\"key\":\"%s\",\"table\":[0,2],\"unclassified\":0,"
	    "\"max_tx_vq\":2}",
	    "{\"steering\":true,\"hash_types\":63,\"key\":\"%s\",\"table\":[0,1],\"unclassified\":2,"
	    "\"max_tx_vq\":2}",
	    "{\"steering\":true,\"hash_types\":127,\"key\":\"%s\",\"table\":[0,1],\"unclassified\":0,"
	    "\"max_tx_vq\":2}",
	    "{\"steering\":true,\"hash_types\":63,\"key\":\"%s\",\"table\":[0,1],\"unclassified\":0,"
	    "\"max_tx_vq\":3}",
	    "{\"steering\":true,\"hash_types\":63,\"key\":\"%s\",\"table\":[0,-1],\"unclassified\":0,"
	    "\"max_tx_vq\":2}",
	    "{\"steering\":1,\"hash_types\":63,\"key\":\"%s\",\"table\":[0,1],\"unclassified\":0,"
	    "\"max_tx_vq\":2}",
	    "{\"steering\":true,\"hash_types\":63,\"key\":\"%s\",\"table\":[0,1],\"unclassified\":0,"
	    "\"max_tx_vq\":2,\"x\":1}",
	    "{\"steering\":true,\"hash_types\":63,\"key\":\"%s\",\"table\":[0,1],\"unclassified\":0}",
	    "{\"steering\":true,\"hash_types\":0,\"key\":\"%s\",\"table\":[0,1],\"unclassified\":0,"
	    "\"max_tx_vq\":2}",
	    "{\"steering\":true,\"hash_types\":63,\"key\":\"zz%s\",\"table\":[0,1],\"unclassified\":0,"
	    "\"max_tx_vq\":2}",
	};
	static char val[4096], text[8192];
	struct port_state st;
	char err[256];

	(void)state;
	snprintf(val, sizeof(val), "{\"steering\":true,\"hash_types\":63,\"key\":\"%s\",\"table\":"
		 "[0,1,1,1],\"unclassified\":1,\"max_tx_vq\":2}", key40);
	snprintf(text, sizeof(text), "%s%s}", head, val);
	assert_int_equal(port_state_parse(text, strlen(text), SOCK, 5, &st, err, sizeof(err)), 0);
	assert_int_equal(st.rss.cfg.table_len, 4);
	assert_int_equal(st.rss.cfg.key_len, 40);
	assert_int_equal(st.rss.cfg.key[39], 0x28);
	/* 129 entries. */
	strcpy(val, "{\"steering\":false,\"hash_types\":0,\"key\":\"\",\"table\":[0");
	for (int i = 1; i < 129; i++)
		strcat(val, ",0");
	strcat(val, "],\"unclassified\":0,\"max_tx_vq\":1}");
	snprintf(text, sizeof(text), "%s%s}", head, val);
	assert_int_equal(port_state_parse(text, strlen(text), SOCK, 5, &st, err, sizeof(err)), -1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(val, sizeof(val), bad[i], key40);
		snprintf(text, sizeof(text), "%s%s}", head, val);
		assert_int_equal(port_state_parse(text, strlen(text), SOCK, 5, &st, err, sizeof(err)),
				 -1);
		assert_false(st.rss.present);
		assert_int_equal(st.rss.cfg.table_len, 0);
	}
	/* Version 3 without "rss", version 2 with it. */
	snprintf(text, sizeof(text), "%snull}", head);
	memcpy(strstr(text, "\"rss\""), "\"rsx\"", 5);
	assert_int_equal(port_state_parse(text, strlen(text), SOCK, 5, &st, err, sizeof(err)), -1);
	snprintf(text, sizeof(text), "%snull}", head);
	text[11] = '2';
	assert_int_equal(port_state_parse(text, strlen(text), SOCK, 5, &st, err, sizeof(err)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_check),
		cmocka_unit_test_teardown(test_dev_state_round_trip, td_cleanup),
		cmocka_unit_test_teardown(test_dev_state_before_features, td_cleanup),
		cmocka_unit_test_teardown(test_dev_state_version1, td_cleanup),
		cmocka_unit_test_teardown(test_dev_state_hostile, td_cleanup),
		cmocka_unit_test_teardown(test_restore_rss, td_cleanup),
		cmocka_unit_test(test_state_file_round_trip),
		cmocka_unit_test(test_state_file_old_versions),
		cmocka_unit_test(test_state_file_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
