/* SPDX-License-Identifier: MIT */
/* test_rss_view.c - the RSS state published for readers on other threads (vnet_dev_rss_read()). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "dev/rss/rss_cmd.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

#define F(bit) BIT_ULL(VIRTIO_NET_F_##bit)
#define TYPES 0x3fu

static struct test_dev *rss_dev(uint64_t features)
{
	struct vnet_dev_params prm;
	struct test_dev *td;

	td_default_params(&prm, 2);
	prm.rss = true;
	td = td_create(&prm, TD_BASE_FEATURES | F(MQ) | features);
	td_start_queues(td, 256);
	return td;
}

/* RSS_CONFIG: table of 128 entries (1 where i % 4 == 3, else 0), max_tx_vq 2, key 0..39. */
static uint8_t rss_config(struct test_dev *td, uint32_t types)
{
	uint8_t in[2 + 8 + 256 + 3 + 40] = {VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_RSS_CONFIG};
	uint8_t *p = in + 2;
	size_t o = 8;

	put_le32(p, types);
	put_le16(p + 4, 127);
	put_le16(p + 6, 1);
	for (unsigned i = 0; i < 128; i++, o += 2)
		put_le16(p + o, i % 4 == 3);
	put_le16(p + o, 2);
	p[o + 2] = 40;
	for (unsigned i = 0; i < 40; i++)
		p[o + 3 + i] = (uint8_t)i;
	return td_exec(td, in, sizeof(in));
}

static void test_view_follows_rss_config_and_reset(void **state)
{
	struct test_dev *td = rss_dev(F(RSS) | F(HASH_REPORT));
	struct rss_view v;

	(void)state;
	vnet_dev_rss_read(td->dev, &v);
	assert_true(v.rss && v.hash_report);
	assert_false(v.steering || v.reporting);
	assert_int_equal(rss_config(td, TYPES), VIRTIO_NET_OK);
	vnet_dev_rss_read(td->dev, &v);
	assert_true(v.steering && v.reporting);
	assert_int_equal(v.cfg.hash_types, TYPES);
	assert_int_equal(v.cfg.table_len, 128);
	assert_int_equal(v.cfg.table[3], 1);
	assert_int_equal(v.cfg.table[4], 0);
	assert_int_equal(v.cfg.unclassified, 1);
	assert_int_equal(v.cfg.key_len, 40);
	assert_int_equal(v.cfg.key[39], 39);
	/* A refused command (unsupported hash type) publishes nothing new. */
	assert_int_equal(rss_config(td, 1u << 12), VIRTIO_NET_ERR);
	vnet_dev_rss_read(td->dev, &v);
	assert_true(v.steering);
	assert_int_equal(v.cfg.hash_types, TYPES);
	/* Reset: features and settings gone. */
	vnet_dev_reset(td->dev);
	vnet_dev_rss_read(td->dev, &v);
	assert_false(v.rss || v.hash_report || v.steering || v.reporting);
	assert_int_equal(v.cfg.table_len, 0);
	td_free(td);
}

static void test_view_without_rss_features(void **state)
{
	struct test_dev *td = td_new(2, TD_BASE_FEATURES | F(MQ));
	struct rss_view v;

	(void)state;
	vnet_dev_rss_read(td->dev, &v);
	assert_false(v.rss || v.hash_report || v.steering || v.reporting);
	td_free(td);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_view_follows_rss_config_and_reset, td_cleanup),
	    cmocka_unit_test_teardown(test_view_without_rss_features, td_cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
