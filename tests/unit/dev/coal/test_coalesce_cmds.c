/* SPDX-License-Identifier: MIT */
/* test_coalesce_cmds.c - NOTF_COAL commands: TX_SET/RX_SET/VQ_SET/VQ_GET rules and errors. */
#include "coal_helpers.h"
#include "dev/queue_view_internal.h"

static void test_tx_set_applies_to_every_tx_queue(void **state)
{
	struct test_dev *td = td_mq();

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 7, 70), VIRTIO_NET_OK);
	assert_params(td, 1, 7, 70);
	assert_params(td, 3, 7, 70);
	assert_int_equal(coal(td, 1)->setter, COAL_SET_GUEST);
	assert_int_equal(coal(td, 3)->setter, COAL_SET_GUEST);
	assert_params(td, 0, 0, 0);
	assert_params(td, 2, 0, 0);
	assert_int_equal(coal(td, 0)->setter, COAL_SET_NONE);
	td_free(td);
}

static void test_rx_set_applies_to_every_rx_queue(void **state)
{
	struct test_dev *td = td_mq();

	(void)state;
	assert_int_equal(td_coal_cmd(td, RX_SET, 9, 90), VIRTIO_NET_OK);
	assert_params(td, 0, 9, 90);
	assert_params(td, 2, 9, 90);
	assert_int_equal(coal(td, 2)->setter, COAL_SET_GUEST);
	assert_params(td, 1, 0, 0);
	assert_params(td, 3, 0, 0);
	td_free(td);
}

static void test_vq_set_applies_to_one_queue(void **state)
{
	struct test_dev *td = td_mq();

	(void)state;
	assert_int_equal(td_vq_set(td, 3, 5, 55), VIRTIO_NET_OK);
	assert_params(td, 3, 5, 55);
	assert_params(td, 1, 0, 0);
	assert_int_equal(td_vq_set(td, 2, 6, 66), VIRTIO_NET_OK);
	assert_params(td, 2, 6, 66);
	assert_params(td, 0, 0, 0);
	td_free(td);
}

static void test_packets_field_comes_first(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint8_t in[10] = {VIRTIO_NET_CTRL_NOTF_COAL, TX_SET, 3, 0, 0, 0, 0xe8, 0x03, 0, 0};
	uint8_t out[8];
	size_t written = 0;

	(void)state;
	assert_int_equal(td_exec(td, in, sizeof(in)), VIRTIO_NET_OK);
	assert_params(td, TXQ, 3, 1000);
	/* VQ_SET: le16 index, le16 reserved, then packets, then usecs. */
	assert_int_equal(td_vq_set(td, RXQ, 0x01020304, 0x0a0b0c0d), VIRTIO_NET_OK);
	assert_params(td, RXQ, 0x01020304, 0x0a0b0c0d);
	assert_int_equal(vq_get(td, RXQ, out, &written), VIRTIO_NET_OK);
	assert_int_equal(written, 8);
	assert_int_equal(get_le32(out), 0x01020304);
	assert_int_equal(get_le32(out + 4), 0x0a0b0c0d);
	td_free(td);
}

static void test_vq_set_on_control_queue_is_err(void **state)
{
	struct test_dev *td = td_mq();
	uint8_t out[8];
	size_t written = 0;

	(void)state;
	assert_int_equal(td_vq_set(td, 4, 5, 5), VIRTIO_NET_ERR);
	assert_int_equal(vq_get(td, 4, out, &written), VIRTIO_NET_ERR);
	assert_int_equal(written, 0);
	td_free(td);
	/* Without MQ the control queue is queue 2. */
	td = td_new(1, TD_BASE_FEATURES);
	assert_int_equal(td->ctrl_q, 2);
	assert_int_equal(td_vq_set(td, 2, 5, 5), VIRTIO_NET_ERR);
	assert_int_equal(vq_get(td, 2, out, &written), VIRTIO_NET_ERR);
	td_free(td);
}

static void test_vq_set_out_of_range_is_err(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint8_t out[8];
	size_t written = 0;

	(void)state;
	assert_int_equal(td_vq_set(td, 3, 5, 5), VIRTIO_NET_ERR);
	assert_int_equal(td_vq_set(td, VNET_MAX_QUEUES, 5, 5), VIRTIO_NET_ERR);
	assert_int_equal(td_vq_set(td, 0xffff, 5, 5), VIRTIO_NET_ERR);
	assert_int_equal(vq_get(td, 0xffff, out, &written), VIRTIO_NET_ERR);
	assert_int_equal(written, 0);
	td_free(td);
}

static void test_vq_set_on_disabled_queue_is_err(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint8_t out[8];
	size_t written = 0;

	(void)state;
	vnet_dev_queue_enable(td->dev, TXQ, false);
	assert_int_equal(td_vq_set(td, TXQ, 5, 5), VIRTIO_NET_ERR);
	assert_int_equal(vq_get(td, TXQ, out, &written), VIRTIO_NET_ERR);
	assert_params(td, TXQ, 0, 0);
	assert_int_equal(td_vq_set(td, RXQ, 5, 5), VIRTIO_NET_OK);
	td_free(td);
}

static void test_vq_get_returns_values_in_device_writable_part(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint8_t in[6] = {VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET};
	uint8_t out[8];
	uint32_t used_len = 0;

	(void)state;
	assert_int_equal(td_vq_set(td, TXQ, 11, 222), VIRTIO_NET_OK);
	put_le16(in + 2, TXQ);
	/* Through the control queue: readable {class, cmd, vq_index, reserved}, writable ack +
	 * coal (the Linux layout); used len counts both. */
	assert_int_equal(td_ctrl(td, in, sizeof(in), out, sizeof(out), &used_len), VIRTIO_NET_OK);
	assert_int_equal(get_le32(out), 11);
	assert_int_equal(get_le32(out + 4), 222);
	assert_int_equal(used_len, 9);
	/* An unset queue reads zero. */
	put_le16(in + 2, RXQ);
	assert_int_equal(td_ctrl(td, in, sizeof(in), out, sizeof(out), &used_len), VIRTIO_NET_OK);
	assert_int_equal(get_le32(out), 0);
	assert_int_equal(get_le32(out + 4), 0);
	td_free(td);
}

static void test_last_setter_wins_between_tx_set_and_vq_set(void **state)
{
	struct test_dev *td = td_mq();

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 5, 50), VIRTIO_NET_OK);
	assert_int_equal(td_vq_set(td, 1, 9, 90), VIRTIO_NET_OK);
	assert_params(td, 1, 9, 90);
	assert_params(td, 3, 5, 50);
	assert_int_equal(td_coal_cmd(td, TX_SET, 6, 60), VIRTIO_NET_OK);
	assert_params(td, 1, 6, 60);
	assert_params(td, 3, 6, 60);
	/* Host settings are one more setter: the latest wins there too. */
	assert_int_equal(
	    vnet_dev_host_coalesce(td->dev, 3, VNET_QUEUE_TX, &(struct coal_params){8, 80}), 0);
	assert_params(td, 3, 8, 80);
	assert_int_equal(coal(td, 3)->setter, COAL_SET_HOST);
	assert_int_equal(td_vq_set(td, 3, 1, 10), VIRTIO_NET_OK);
	assert_params(td, 3, 1, 10);
	assert_int_equal(coal(td, 3)->setter, COAL_SET_GUEST);
	td_free(td);
}

/* The driver tears the queue down and sets it up again: rings set up while disabled. */
static void virtio_reenable(struct test_dev *td, unsigned q)
{
	vnet_dev_queue_enable(td->dev, q, false);
	vnet_dev_queue_stop(td->dev, q);
	assert_int_equal(vnet_dev_queue_start(td->dev, q, &td->mem.gm), 0);
	vnet_dev_queue_enable(td->dev, q, true);
}

static void test_reenabled_queue_gets_last_tx_set_rx_set(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 5, 50), VIRTIO_NET_OK);
	assert_int_equal(td_vq_set(td, TXQ, 9, 90), VIRTIO_NET_OK);
	assert_int_equal(td_vq_set(td, RXQ, 3, 30), VIRTIO_NET_OK); /* no RX_SET so far */
	virtio_reenable(td, TXQ);
	virtio_reenable(td, RXQ);
	assert_params(td, TXQ, 5, 50);
	assert_params(td, RXQ, 0, 0);
	assert_int_equal(td_coal_cmd(td, RX_SET, 4, 40), VIRTIO_NET_OK);
	assert_int_equal(td_vq_set(td, RXQ, 1, 1), VIRTIO_NET_OK);
	virtio_reenable(td, RXQ);
	assert_params(td, RXQ, 4, 40);
	td_free(td);
}

static void test_reset_zeroes_parameters(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 5, 50), VIRTIO_NET_OK);
	assert_int_equal(td_coal_cmd(td, RX_SET, 6, 60), VIRTIO_NET_OK);
	assert_int_equal(td_vq_set(td, TXQ, 7, 70), VIRTIO_NET_OK);
	td_tx(td, TXQ, 2, 64);
	assert_int_equal(coal(td, TXQ)->pending, 2);
	assert_int_equal(td->notifies[TXQ], 0);
	vnet_dev_reset(td->dev);
	assert_int_equal(td->notifies[TXQ], 1); /* the 2 held completions, before the queues go */
	for (unsigned q = 0; q < 2; q++) {
		assert_params(td, q, 0, 0);
		assert_int_equal(coal(td, q)->pending, 0);
		assert_int_equal(coal(td, q)->setter, COAL_SET_NONE);
	}
	/* The driver starts again: no TX_SET/RX_SET survives the reset. */
	assert_int_equal(vnet_dev_set_features(td->dev, td->features), 0);
	td_start_queues(td, 64);
	assert_params(td, TXQ, 0, 0);
	assert_params(td, RXQ, 0, 0);
	td_advance(td, 1000 * MS);
	assert_int_equal(td->notifies[TXQ], 1);
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->notifies[TXQ], 2);
	td_free(td);
}

static void test_reserved_field_ignored(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint8_t out[8];
	size_t written = 0;

	(void)state;
	assert_int_equal(vq_cmd(td, VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET, TXQ, 0xabcd, 12, 34, 14, NULL,
				0, &written),
			 VIRTIO_NET_OK);
	assert_params(td, TXQ, 12, 34);
	assert_int_equal(
	    vq_cmd(td, VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET, TXQ, 0xffff, 0, 0, 6, out, 8, &written),
	    VIRTIO_NET_OK);
	assert_int_equal(get_le32(out), 12);
	assert_int_equal(get_le32(out + 4), 34);
	td_free(td);
}

static void test_truncated_payload_is_err(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint8_t in[10] = {VIRTIO_NET_CTRL_NOTF_COAL, TX_SET, 1, 0, 0, 0, 1, 0, 0, 0};
	uint8_t out[8];
	size_t written = 0;

	(void)state;
	for (size_t len = 2; len < sizeof(in); len++) {
		assert_int_equal(td_exec(td, in, len), VIRTIO_NET_ERR);
		in[1] = RX_SET;
		assert_int_equal(td_exec(td, in, len), VIRTIO_NET_ERR);
		in[1] = TX_SET;
	}
	assert_params(td, TXQ, 0, 0);
	assert_params(td, RXQ, 0, 0);
	for (size_t len = 2; len < 14; len++)
		assert_int_equal(vq_cmd(td, VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET, TXQ, 0, 1, 1, len,
					NULL, 0, &written),
				 VIRTIO_NET_ERR);
	assert_params(td, TXQ, 0, 0);
	for (size_t len = 2; len < 6; len++)
		assert_int_equal(vq_cmd(td, VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET, TXQ, 0, 0, 0, len,
					out, 8, &written),
				 VIRTIO_NET_ERR);
	/* VQ_GET with no room for the answer. */
	assert_int_equal(
	    vq_cmd(td, VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET, TXQ, 0, 0, 0, 6, out, 7, &written),
	    VIRTIO_NET_ERR);
	td_free(td);
}

static void test_unknown_class_or_command_is_err(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint8_t in[14] = {VIRTIO_NET_CTRL_NOTF_COAL, 4};

	(void)state;
	assert_int_equal(td_exec(td, in, sizeof(in)), VIRTIO_NET_ERR);
	in[1] = 0xff;
	assert_int_equal(td_exec(td, in, sizeof(in)), VIRTIO_NET_ERR);
	in[0] = 200;
	in[1] = 0;
	assert_int_equal(td_exec(td, in, sizeof(in)), VIRTIO_NET_ERR);
	in[0] = VIRTIO_NET_CTRL_NOTF_COAL;
	assert_int_equal(td_exec(td, in, 1), VIRTIO_NET_ERR); /* no command byte */
	assert_int_equal(td_exec(td, in, 0), VIRTIO_NET_ERR);
	td_free(td);
}

static void test_notf_coal_commands_err_when_feature_not_negotiated(void **state)
{
	const uint64_t base = TD_BASE_FEATURES & ~(BIT_ULL(VIRTIO_NET_F_NOTF_COAL) |
						   BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL));
	struct test_dev *td = td_new(1, base);
	uint8_t out[8];
	size_t written = 0;

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 1, 1), VIRTIO_NET_ERR);
	assert_int_equal(td_coal_cmd(td, RX_SET, 1, 1), VIRTIO_NET_ERR);
	assert_int_equal(td_vq_set(td, TXQ, 1, 1), VIRTIO_NET_ERR);
	assert_int_equal(vq_get(td, TXQ, out, &written), VIRTIO_NET_ERR);
	assert_params(td, TXQ, 0, 0);
	td_free(td);

	td = td_new(1, base | BIT_ULL(VIRTIO_NET_F_NOTF_COAL));
	assert_int_equal(td_coal_cmd(td, TX_SET, 1, 1), VIRTIO_NET_OK);
	assert_int_equal(td_coal_cmd(td, RX_SET, 1, 1), VIRTIO_NET_OK);
	assert_int_equal(td_vq_set(td, TXQ, 2, 2), VIRTIO_NET_ERR);
	assert_int_equal(vq_get(td, TXQ, out, &written), VIRTIO_NET_ERR);
	assert_params(td, TXQ, 1, 1);
	td_free(td);

	td = td_new(1, base | BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL));
	assert_int_equal(td_coal_cmd(td, TX_SET, 1, 1), VIRTIO_NET_ERR);
	assert_int_equal(td_coal_cmd(td, RX_SET, 1, 1), VIRTIO_NET_ERR);
	assert_int_equal(td_vq_set(td, TXQ, 2, 2), VIRTIO_NET_OK);
	assert_int_equal(vq_get(td, TXQ, out, &written), VIRTIO_NET_OK);
	assert_params(td, TXQ, 2, 2);
	td_free(td);
}

static void test_host_defaults_apply_until_guest_sets(void **state)
{
	struct vnet_dev_params p;
	struct test_dev *td;

	(void)state;
	td_default_params(&p, 1);
	p.host_coal_tx_set = true;
	p.host_coal_tx = (struct coal_params){32, 100};
	p.host_coal_rx_set = true;
	p.host_coal_rx = (struct coal_params){16, 50};
	p.coal_persist = true; /* host defaults from the command line need the opt-in */
	td = td_create(&p, TD_BASE_FEATURES);
	td_start_queues(td, 64);
	assert_params(td, TXQ, 32, 100);
	assert_int_equal(coal(td, TXQ)->setter, COAL_SET_HOST);
	assert_params(td, RXQ, 16, 50);
	assert_int_equal(coal(td, RXQ)->setter, COAL_SET_HOST);
	/* Host coalescing works without any guest command. */
	td_tx(td, TXQ, 31, 64);
	assert_int_equal(td->notifies[TXQ], 0);
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(td_coal_cmd(td, TX_SET, 4, 10), VIRTIO_NET_OK);
	assert_params(td, TXQ, 4, 10);
	assert_int_equal(coal(td, TXQ)->setter, COAL_SET_GUEST);
	assert_int_equal(
	    vnet_dev_host_coalesce(td->dev, -1, VNET_QUEUE_RX, &(struct coal_params){2, 3}), 0);
	assert_params(td, RXQ, 2, 3);
	assert_params(td, TXQ, 4, 10);
	assert_int_equal(
	    vnet_dev_host_coalesce(td->dev, 99, VNET_QUEUE_RX, &(struct coal_params){2, 3}), -1);
	td_free(td);
}

static void test_notf_coal_offered_only_with_ctrl_vq(void **state)
{
	const uint64_t coal = BIT_ULL(VIRTIO_NET_F_NOTF_COAL) | BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL);
	struct vnet_dev_params p;
	struct test_dev *td;

	(void)state;
	td_default_params(&p, 1);
	td = td_create(&p, 0);
	assert_int_equal(vnet_dev_offered_features(td->dev) & coal, coal);
	assert_true(vnet_dev_offered_features(td->dev) & BIT_ULL(VIRTIO_NET_F_CTRL_VQ));
	td_free(td);
	/* Linux refuses a device offering either bit without the control queue. */
	p.features_mask = ~BIT_ULL(VIRTIO_NET_F_CTRL_VQ);
	td = td_create(&p, 0);
	assert_int_equal(
	    vnet_dev_offered_features(td->dev) & (coal | BIT_ULL(VIRTIO_NET_F_CTRL_VQ)), 0);
	td_free(td);
}

static void test_no_value_is_invalid(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 0xffffffffu, 0xffffffffu), VIRTIO_NET_OK);
	assert_params(td, TXQ, 0xffffffffu, 0xffffffffu);
	assert_int_equal(td_coal_cmd(td, RX_SET, 1, 0xffffffffu), VIRTIO_NET_OK);
	assert_params(td, RXQ, 1, 0xffffffffu);
	assert_int_equal(td_vq_set(td, TXQ, 0, 0xffffffffu), VIRTIO_NET_OK);
	assert_params(td, TXQ, 0, 0xffffffffu);
	td_free(td);
}

/* What another thread reads (vnet_queue_view_read()) follows every change of the settings. */
static void test_published_view_follows_settings(void **state)
{
	struct vnet_dev_params p;
	struct vnet_queue_view v;
	struct test_dev *td;

	(void)state;
	td_default_params(&p, 1);
	td = td_create(&p, TD_BASE_FEATURES);
	td_start_queues(td, 64);
	vnet_queue_view_read(vnet_dev_queue(td->dev, TXQ), &v);
	assert_true(v.enabled && v.started && !v.broken);
	assert_int_equal(v.kind, VNET_QUEUE_TX);
	assert_int_equal(v.set_by, COAL_SET_NONE);
	assert_int_equal(td_coal_cmd(td, TX_SET, 4, 10), VIRTIO_NET_OK);
	vnet_queue_view_read(vnet_dev_queue(td->dev, TXQ), &v);
	assert_int_equal(v.coal.max_packets, 4);
	assert_int_equal(v.coal.max_usecs, 10);
	assert_int_equal(v.set_by, COAL_SET_GUEST);
	assert_int_equal(
	    vnet_dev_host_coalesce(td->dev, RXQ, VNET_QUEUE_RX, &(struct coal_params){7, 70}), 0);
	vnet_queue_view_read(vnet_dev_queue(td->dev, RXQ), &v);
	assert_int_equal(v.coal.max_packets, 7);
	assert_int_equal(v.set_by, COAL_SET_HOST);
	assert_int_equal(vnet_dev_host_adaptive(td->dev, RXQ, VNET_QUEUE_RX, true), 0);
	vnet_queue_view_read(vnet_dev_queue(td->dev, RXQ), &v);
	assert_true(v.adaptive);
	assert_int_equal(v.set_by, COAL_SET_ADAPTIVE);
	vnet_dev_queue_enable(td->dev, TXQ, false);
	vnet_queue_view_read(vnet_dev_queue(td->dev, TXQ), &v);
	assert_false(v.enabled);
	vnet_dev_reset(td->dev);
	vnet_queue_view_read(vnet_dev_queue(td->dev, TXQ), &v);
	assert_false(v.started);
	assert_int_equal(v.coal.max_packets, 0);
	assert_int_equal(v.set_by, COAL_SET_NONE);
	vnet_queue_view_read(vnet_dev_queue(td->dev, RXQ), &v);
	assert_false(v.adaptive);
	td_free(td);
}

#define T(fn) cmocka_unit_test_teardown(fn, td_cleanup)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_tx_set_applies_to_every_tx_queue),
	    T(test_rx_set_applies_to_every_rx_queue),
	    T(test_vq_set_applies_to_one_queue),
	    T(test_packets_field_comes_first),
	    T(test_vq_set_on_control_queue_is_err),
	    T(test_vq_set_out_of_range_is_err),
	    T(test_vq_set_on_disabled_queue_is_err),
	    T(test_vq_get_returns_values_in_device_writable_part),
	    T(test_last_setter_wins_between_tx_set_and_vq_set),
	    T(test_reenabled_queue_gets_last_tx_set_rx_set),
	    T(test_reset_zeroes_parameters),
	    T(test_reserved_field_ignored),
	    T(test_truncated_payload_is_err),
	    T(test_unknown_class_or_command_is_err),
	    T(test_notf_coal_commands_err_when_feature_not_negotiated),
	    T(test_host_defaults_apply_until_guest_sets),
	    T(test_notf_coal_offered_only_with_ctrl_vq),
	    T(test_no_value_is_invalid),
	    T(test_published_view_follows_settings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
