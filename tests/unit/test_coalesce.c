/* test_coalesce.c - coalesce.h rules, and each NOTF_COAL spec rule through the device (fake clock). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coalesce.h"
#include "fake_driver.h"
#include "virtio_net_defs.h"
#include "vnet_dev.h"

#define US 1000ull
#define MS 1000000ull
#define RXQ 0
#define TXQ 1
#define TX_SET VIRTIO_NET_CTRL_NOTF_COAL_TX_SET
#define RX_SET VIRTIO_NET_CTRL_NOTF_COAL_RX_SET

static struct coal_state *coal(struct test_dev *td, unsigned q)
{
	return &vnet_dev_queue(td->dev, q)->coal;
}

static struct vnet_queue_stats *stats(struct test_dev *td, unsigned q)
{
	return &vnet_dev_queue(td->dev, q)->stats;
}

static void assert_params(struct test_dev *td, unsigned q, uint32_t packets, uint32_t usecs)
{
	assert_int_equal(coal(td, q)->params.max_packets, packets);
	assert_int_equal(coal(td, q)->params.max_usecs, usecs);
}

/* VQ_SET/VQ_GET with an explicit reserved field. */
static uint8_t vq_cmd(struct test_dev *td, uint8_t cmd, uint16_t idx, uint16_t reserved,
		      uint32_t packets, uint32_t usecs, size_t in_len, uint8_t *out, size_t out_len,
		      size_t *written)
{
	uint8_t in[14] = {VIRTIO_NET_CTRL_NOTF_COAL, cmd};

	put_le16(in + 2, idx);
	put_le16(in + 4, reserved);
	put_le32(in + 6, packets);
	put_le32(in + 10, usecs);
	return vnet_dev_ctrl_execute(td->dev, in, in_len, out, out_len, written);
}

static uint8_t vq_get(struct test_dev *td, uint16_t idx, uint8_t out[8], size_t *written)
{
	return vq_cmd(td, VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET, idx, 0, 0, 0, 6, out, 8, written);
}

static void set_pairs(struct test_dev *td, uint16_t pairs)
{
	uint8_t in[4] = {VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET};

	put_le16(in + 2, pairs);
	assert_int_equal(td_exec(td, in, sizeof(in)), VIRTIO_NET_OK);
}

static struct test_dev *td_mq(void)
{
	struct test_dev *td = td_new(2, TD_BASE_FEATURES | BIT_ULL(VIRTIO_NET_F_MQ));

	assert_true(td->features & BIT_ULL(VIRTIO_NET_F_MQ));
	assert_int_equal(td->ctrl_q, 4);
	set_pairs(td, 2);
	return td;
}

/* ---- the pure functions of coalesce.h ---- */

static void test_coal_active_needs_both_fields_nonzero(void **state)
{
	struct coal_params p = {0, 0};

	(void)state;
	assert_false(coal_active(&p));
	p.max_packets = 5;
	assert_false(coal_active(&p));
	p.max_packets = 0;
	p.max_usecs = 5;
	assert_false(coal_active(&p));
	p.max_packets = 1;
	assert_true(coal_active(&p));
}

static void test_window_starts_at_first_packet(void **state)
{
	struct coal_state c;

	(void)state;
	memset(&c, 0, sizeof(c));
	assert_int_equal(coal_evaluate(&c, 100, &(uint64_t){0}), COAL_IDLE);
	coal_add_packets(&c, 2, 100);
	coal_add_packets(&c, 3, 500);
	assert_int_equal(c.pending, 5);
	assert_int_equal(c.first_ns, 100);
	coal_restart(&c);
	assert_int_equal(c.pending, 0);
	assert_int_equal(coal_evaluate(&c, 600, &(uint64_t){0}), COAL_IDLE);
	coal_add_packets(&c, 1, 900);
	assert_int_equal(c.first_ns, 900);
}

static void test_evaluate_due_at_packets_or_usecs_whichever_first(void **state)
{
	struct coal_params p = {4, 50};
	struct coal_state c;
	uint64_t deadline = 0;

	(void)state;
	memset(&c, 0, sizeof(c));
	coal_set_params(&c, &p, COAL_SET_GUEST);
	coal_add_packets(&c, 3, 1000);
	assert_int_equal(coal_evaluate(&c, 1000, &deadline), COAL_HOLD);
	assert_int_equal(deadline, 1000 + 50 * US);
	assert_int_equal(coal_evaluate(&c, 1000 + 50 * US - 1, &deadline), COAL_HOLD);
	assert_int_equal(deadline, 1000 + 50 * US);
	assert_int_equal(coal_evaluate(&c, 1000 + 50 * US, &deadline), COAL_DUE);
	coal_add_packets(&c, 1, 2000);
	assert_int_equal(coal_evaluate(&c, 2000, &deadline), COAL_DUE);
}

static void test_evaluate_zero_field_is_due_at_once(void **state)
{
	struct coal_params p0 = {0, 1000}, p1 = {1000, 0};
	struct coal_state c;
	uint64_t deadline;

	(void)state;
	memset(&c, 0, sizeof(c));
	coal_set_params(&c, &p0, COAL_SET_HOST);
	coal_add_packets(&c, 1, 10);
	assert_int_equal(coal_evaluate(&c, 10, &deadline), COAL_DUE);
	coal_set_params(&c, &p1, COAL_SET_HOST);
	assert_int_equal(coal_evaluate(&c, 10, &deadline), COAL_DUE);
}

static void test_evaluate_large_usecs_does_not_overflow(void **state)
{
	struct coal_params p = {0xffffffffu, 0xffffffffu};
	struct coal_state c;
	uint64_t deadline = 0;

	(void)state;
	memset(&c, 0, sizeof(c));
	coal_set_params(&c, &p, COAL_SET_GUEST);
	coal_add_packets(&c, 1, 5);
	assert_int_equal(coal_evaluate(&c, 5, &deadline), COAL_HOLD);
	assert_true(deadline == 5 + 0xffffffffull * US);
}

static void test_set_params_keeps_pending_spec_example(void **state)
{
	struct coal_params p15 = {15, 1000000}, p8 = {8, 1000000};
	struct coal_state c;
	uint64_t deadline;

	(void)state;
	memset(&c, 0, sizeof(c));
	coal_set_params(&c, &p15, COAL_SET_GUEST);
	coal_add_packets(&c, 10, 100);
	assert_int_equal(coal_evaluate(&c, 100, &deadline), COAL_HOLD);
	coal_set_params(&c, &p8, COAL_SET_HOST);
	assert_int_equal(c.pending, 10);
	assert_int_equal(c.setter, COAL_SET_HOST);
	assert_int_equal(coal_evaluate(&c, 100, &deadline), COAL_DUE);
}

static void test_setter_names(void **state)
{
	(void)state;
	assert_string_equal(coal_setter_name(COAL_SET_NONE), "none");
	assert_string_equal(coal_setter_name(COAL_SET_GUEST), "guest");
	assert_string_equal(coal_setter_name(COAL_SET_HOST), "host");
}

/* ---- the spec rules through the device ---- */

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

static void test_zero_usecs_notifies_every_packet(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 10, 0), VIRTIO_NET_OK);
	for (unsigned i = 1; i <= 3; i++) {
		td_tx(td, TXQ, 1, 64);
		assert_int_equal(td->notifies[TXQ], i);
	}
	assert_int_equal(stats(td, TXQ)->held, 0);
	assert_int_equal(td->deadline[TXQ], 0);
	td_free(td);
}

static void test_zero_packets_notifies_every_packet(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, RX_SET, 0, 1000), VIRTIO_NET_OK);
	td_post_rx(td, RXQ, 4, 2048);
	for (unsigned i = 1; i <= 3; i++) {
		assert_int_equal(td_receive(td, 60, (uint8_t)i), 1);
		assert_int_equal(td->notifies[RXQ], i);
	}
	assert_int_equal(stats(td, RXQ)->held, 0);
	td_free(td);
}

static void test_notify_when_max_packets_reached(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint64_t t0 = td->now;

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 4, 1000), VIRTIO_NET_OK);
	for (unsigned i = 0; i < 3; i++) {
		td_tx(td, TXQ, 1, 64);
		td_advance(td, 10 * US);
	}
	assert_int_equal(td->notifies[TXQ], 0);
	assert_int_equal(coal(td, TXQ)->pending, 3);
	assert_int_equal(stats(td, TXQ)->held, 3);
	assert_int_equal(td->deadline[TXQ], t0 + 1 * MS);
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(stats(td, TXQ)->notifications, 1);
	assert_int_equal(coal(td, TXQ)->pending, 0);
	/* The old deadline brings nothing more. */
	td_advance(td, 2 * MS);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(stats(td, TXQ)->timer_notifications, 0);
	td_free(td);
}

static void test_notify_when_max_usecs_elapsed_since_first_packet(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint64_t t0 = td->now;

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 100, 50), VIRTIO_NET_OK);
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->deadline[TXQ], t0 + 50 * US);
	td_advance(td, 20 * US);
	td_tx(td, TXQ, 2, 64);
	assert_int_equal(td->deadline[TXQ], t0 + 50 * US); /* measured from the FIRST packet */
	td_advance(td, 30 * US - 1);
	assert_int_equal(td->notifies[TXQ], 0);
	td_advance(td, 1);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(stats(td, TXQ)->timer_notifications, 1);
	assert_int_equal(coal(td, TXQ)->pending, 0);
	td_free(td);
}

static void test_counting_starts_at_first_packet_after_notification(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint64_t t1;

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 2, 100), VIRTIO_NET_OK);
	td_tx(td, TXQ, 2, 64);
	assert_int_equal(td->notifies[TXQ], 1);
	/* Long idle: the window does not run while nothing is pending. */
	td_advance(td, 500 * US);
	t1 = td->now;
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(coal(td, TXQ)->pending, 1);
	assert_int_equal(td->deadline[TXQ], t1 + 100 * US);
	td_advance(td, 100 * US);
	assert_int_equal(td->notifies[TXQ], 2);
	td_free(td);
}

static void test_parameter_change_notifies_at_once_when_already_due(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	/* Spec example: 10 pending, max_packets lowered from 15 to 8. */
	assert_int_equal(td_coal_cmd(td, TX_SET, 15, 1000000), VIRTIO_NET_OK);
	td_tx(td, TXQ, 10, 64);
	assert_int_equal(td->notifies[TXQ], 0);
	assert_int_equal(coal(td, TXQ)->pending, 10);
	assert_int_equal(td_coal_cmd(td, TX_SET, 8, 1000000), VIRTIO_NET_OK);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(coal(td, TXQ)->pending, 0);
	/* The same through VQ_SET, with usecs: 600 us elapsed, max_usecs lowered to 500. */
	assert_int_equal(td_vq_set(td, TXQ, 100, 1000), VIRTIO_NET_OK);
	td_tx(td, TXQ, 1, 64);
	td_advance(td, 600 * US);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(td_vq_set(td, TXQ, 100, 500), VIRTIO_NET_OK);
	assert_int_equal(td->notifies[TXQ], 2);
	/* And turning coalescing off releases what was held. */
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->notifies[TXQ], 2);
	assert_int_equal(td_coal_cmd(td, TX_SET, 0, 0), VIRTIO_NET_OK);
	assert_int_equal(td->notifies[TXQ], 3);
	td_free(td);
}

static void test_parameter_change_rearms_deadline(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint64_t t0 = td->now, t1;

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 100, 1000), VIRTIO_NET_OK);
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->deadline[TXQ], t0 + 1 * MS);
	td_advance(td, 100 * US);
	/* Shorter: due earlier than the armed deadline. */
	assert_int_equal(td_coal_cmd(td, TX_SET, 100, 500), VIRTIO_NET_OK);
	assert_int_equal(td->notifies[TXQ], 0);
	assert_int_equal(td->deadline[TXQ], t0 + 500 * US);
	td_advance(td, 399 * US);
	assert_int_equal(td->notifies[TXQ], 0);
	td_advance(td, 1 * US);
	assert_int_equal(td->notifies[TXQ], 1);
	/* Longer: no notification at the old deadline, one at the new. */
	td_advance(td, 1 * MS);
	t1 = td->now;
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td_coal_cmd(td, TX_SET, 100, 2000), VIRTIO_NET_OK);
	td_advance(td, 1 * MS);
	assert_int_equal(td->notifies[TXQ], 1);
	td_advance(td, 1 * MS - 1);
	assert_int_equal(td->notifies[TXQ], 1);
	td_advance(td, 1);
	assert_int_equal(td->now, t1 + 2 * MS);
	assert_int_equal(td->notifies[TXQ], 2);
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
	/* Through the control queue: readable {class, cmd, vq_index, reserved}, writable coal + ack. */
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
	assert_int_equal(vnet_dev_host_coalesce(td->dev, 3, VNET_QUEUE_TX,
						&(struct coal_params){8, 80}),
			 0);
	assert_params(td, 3, 8, 80);
	assert_int_equal(coal(td, 3)->setter, COAL_SET_HOST);
	assert_int_equal(td_vq_set(td, 3, 1, 10), VIRTIO_NET_OK);
	assert_params(td, 3, 1, 10);
	assert_int_equal(coal(td, 3)->setter, COAL_SET_GUEST);
	td_free(td);
}

static void test_reenabled_queue_gets_last_tx_set_rx_set(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 5, 50), VIRTIO_NET_OK);
	assert_int_equal(td_vq_set(td, TXQ, 9, 90), VIRTIO_NET_OK);
	assert_int_equal(td_vq_set(td, RXQ, 3, 30), VIRTIO_NET_OK); /* no RX_SET so far */
	vnet_dev_queue_enable(td->dev, TXQ, false);
	vnet_dev_queue_enable(td->dev, RXQ, false);
	vnet_dev_queue_enable(td->dev, TXQ, true);
	vnet_dev_queue_enable(td->dev, RXQ, true);
	assert_params(td, TXQ, 5, 50);
	assert_params(td, RXQ, 0, 0);
	assert_int_equal(td_coal_cmd(td, RX_SET, 4, 40), VIRTIO_NET_OK);
	assert_int_equal(td_vq_set(td, RXQ, 1, 1), VIRTIO_NET_OK);
	vnet_dev_queue_enable(td->dev, RXQ, false);
	vnet_dev_queue_enable(td->dev, RXQ, true);
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
	vnet_dev_reset(td->dev);
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
	assert_int_equal(td->notifies[TXQ], 0);
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->notifies[TXQ], 1);
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
	assert_int_equal(vq_cmd(td, VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET, TXQ, 0xffff, 0, 0, 6, out, 8,
				&written),
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
		assert_int_equal(vq_cmd(td, VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET, TXQ, 0, 1, 1, len, NULL,
					0, &written),
				 VIRTIO_NET_ERR);
	assert_params(td, TXQ, 0, 0);
	for (size_t len = 2; len < 6; len++)
		assert_int_equal(vq_cmd(td, VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET, TXQ, 0, 0, 0, len, out,
					8, &written),
				 VIRTIO_NET_ERR);
	/* VQ_GET with no room for the answer. */
	assert_int_equal(vq_cmd(td, VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET, TXQ, 0, 0, 0, 6, out, 7,
				&written),
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

static void test_no_notification_while_no_interrupt_flag_set(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	fake_vq_set_no_interrupt(&td->vq[TXQ], true);
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->notifies[TXQ], 0);
	assert_int_equal(stats(td, TXQ)->suppressed, 1);
	/* Coalescing deadline while suppressed: still nothing. */
	assert_int_equal(td_coal_cmd(td, TX_SET, 2, 100), VIRTIO_NET_OK);
	td_tx(td, TXQ, 1, 64);
	td_advance(td, 100 * US);
	assert_int_equal(td->notifies[TXQ], 0);
	assert_int_equal(stats(td, TXQ)->suppressed, 2);
	assert_int_equal(coal(td, TXQ)->pending, 0);
	/* Interrupts back on. */
	fake_vq_set_no_interrupt(&td->vq[TXQ], false);
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->notifies[TXQ], 0);
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->notifies[TXQ], 1);
	td_free(td);
}

static void test_event_idx_used_event_respected_with_coalescing(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | BIT_ULL(VIRTIO_RING_F_EVENT_IDX));
	struct fake_vq *q = &td->vq[TXQ];

	(void)state;
	assert_true(td->features & BIT_ULL(VIRTIO_RING_F_EVENT_IDX));
	fake_vq_set_used_event(q, 0);
	td_tx(td, TXQ, 1, 64); /* used 0 -> 1, crosses 0 */
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(td_coal_cmd(td, TX_SET, 2, 1000000), VIRTIO_NET_OK);
	/* used_event 1: the held packet and the next one together cross it (1 -> 3). */
	fake_vq_set_used_event(q, 1);
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->notifies[TXQ], 1);
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->notifies[TXQ], 2);
	/* used_event far ahead: due by coalescing, but the driver does not want it. */
	fake_vq_set_used_event(q, 10);
	td_tx(td, TXQ, 2, 64); /* 3 -> 5 */
	assert_int_equal(td->notifies[TXQ], 2);
	assert_int_equal(stats(td, TXQ)->suppressed, 1);
	td_tx(td, TXQ, 2, 64); /* 5 -> 7 */
	assert_int_equal(td->notifies[TXQ], 2);
	fake_vq_set_used_event(q, 7);
	td_tx(td, TXQ, 2, 64); /* 7 -> 9 crosses 7 */
	assert_int_equal(td->notifies[TXQ], 3);
	assert_int_equal(fake_vq_used_idx(q), 9);
	td_free(td);
}

static void test_mergeable_rx_counts_packets_not_buffers(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | BIT_ULL(VIRTIO_NET_F_MRG_RXBUF));

	(void)state;
	assert_true(td->features & BIT_ULL(VIRTIO_NET_F_MRG_RXBUF));
	assert_int_equal(td_coal_cmd(td, RX_SET, 3, 1000000), VIRTIO_NET_OK);
	td_post_rx(td, RXQ, 12, 64);
	/* 12 + 150 bytes: 3 buffers of 64 each packet. */
	assert_int_equal(td_receive(td, 150, 0xa1), 1);
	assert_int_equal(td_receive(td, 150, 0xa2), 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 6);
	assert_int_equal(td->notifies[RXQ], 0);
	assert_int_equal(coal(td, RXQ)->pending, 2);
	assert_int_equal(td_receive(td, 150, 0xa3), 1);
	assert_int_equal(td->notifies[RXQ], 1);
	assert_int_equal(stats(td, RXQ)->packets, 3);
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

static void test_packets_never_delayed_only_notifications(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 100, 1000000), VIRTIO_NET_OK);
	assert_int_equal(td_coal_cmd(td, RX_SET, 100, 1000000), VIRTIO_NET_OK);
	td_tx(td, TXQ, 3, 64);
	assert_int_equal(td->npkts, 3);                     /* at the backend at kick time */
	assert_int_equal(fake_vq_used_idx(&td->vq[TXQ]), 3); /* buffers returned at once */
	assert_int_equal(td->notifies[TXQ], 0);             /* only the notification waits */
	assert_int_equal(stats(td, TXQ)->held, 3);
	td_post_rx(td, RXQ, 2, 2048);
	assert_int_equal(td_receive(td, 60, 1), 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 1);
	assert_int_equal(td->notifies[RXQ], 0);
	td_advance(td, 1000 * MS);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(td->notifies[RXQ], 1);
	assert_int_equal(stats(td, TXQ)->timer_notifications, 1);
	td_free(td);
}

static void test_timer_lateness_recorded(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 100, 50), VIRTIO_NET_OK);
	td_tx(td, TXQ, 1, 64);
	td_advance(td, 50 * US + 7000);
	assert_int_equal(td->notifies[TXQ], 1);
	assert_int_equal(stats(td, TXQ)->lateness_count, 1);
	assert_int_equal(stats(td, TXQ)->lateness_ns[0], 7000);
	td_tx(td, TXQ, 1, 64);
	td_advance(td, 50 * US);
	assert_int_equal(stats(td, TXQ)->lateness_count, 2);
	assert_int_equal(stats(td, TXQ)->lateness_ns[1], 0);
	td_free(td);
}

static void test_queues_count_independently(void **state)
{
	struct test_dev *td = td_mq();

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 2, 1000000), VIRTIO_NET_OK);
	td_tx(td, 1, 1, 64);
	td_tx(td, 3, 1, 64);
	assert_int_equal(td->notifies[1], 0);
	assert_int_equal(td->notifies[3], 0);
	td_tx(td, 1, 1, 64);
	assert_int_equal(td->notifies[1], 1);
	assert_int_equal(td->notifies[3], 0);
	assert_int_equal(coal(td, 3)->pending, 1);
	td_free(td);
}

static void test_timer_with_nothing_pending_does_not_notify(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	vnet_dev_timer_expired(td->dev, TXQ);
	vnet_dev_timer_expired(td->dev, RXQ);
	assert_int_equal(td->notifies[TXQ], 0);
	assert_int_equal(td->notifies[RXQ], 0);
	assert_int_equal(stats(td, TXQ)->timer_notifications, 0);
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
	assert_int_equal(vnet_dev_host_coalesce(td->dev, -1, VNET_QUEUE_RX,
						&(struct coal_params){2, 3}),
			 0);
	assert_params(td, RXQ, 2, 3);
	assert_params(td, TXQ, 4, 10);
	assert_int_equal(vnet_dev_host_coalesce(td->dev, 99, VNET_QUEUE_RX,
						&(struct coal_params){2, 3}),
			 -1);
	td_free(td);
}

#define T(fn) cmocka_unit_test_teardown(fn, td_cleanup)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_coal_active_needs_both_fields_nonzero),
		T(test_window_starts_at_first_packet),
		T(test_evaluate_due_at_packets_or_usecs_whichever_first),
		T(test_evaluate_zero_field_is_due_at_once),
		T(test_evaluate_large_usecs_does_not_overflow),
		T(test_set_params_keeps_pending_spec_example),
		T(test_setter_names),
		T(test_tx_set_applies_to_every_tx_queue),
		T(test_rx_set_applies_to_every_rx_queue),
		T(test_vq_set_applies_to_one_queue),
		T(test_packets_field_comes_first),
		T(test_zero_usecs_notifies_every_packet),
		T(test_zero_packets_notifies_every_packet),
		T(test_notify_when_max_packets_reached),
		T(test_notify_when_max_usecs_elapsed_since_first_packet),
		T(test_counting_starts_at_first_packet_after_notification),
		T(test_parameter_change_notifies_at_once_when_already_due),
		T(test_parameter_change_rearms_deadline),
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
		T(test_no_notification_while_no_interrupt_flag_set),
		T(test_event_idx_used_event_respected_with_coalescing),
		T(test_mergeable_rx_counts_packets_not_buffers),
		T(test_notf_coal_commands_err_when_feature_not_negotiated),
		T(test_packets_never_delayed_only_notifications),
		T(test_timer_lateness_recorded),
		T(test_queues_count_independently),
		T(test_timer_with_nothing_pending_does_not_notify),
		T(test_host_defaults_apply_until_guest_sets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
