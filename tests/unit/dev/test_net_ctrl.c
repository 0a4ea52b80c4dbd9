/* SPDX-License-Identifier: MIT */
/* test_net_ctrl.c - every control command (good and malformed), control queue, config. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

#define F(bit) BIT_ULL(VIRTIO_NET_F_##bit)

static const uint8_t default_mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
static const uint8_t new_mac[6] = {0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee};

static struct test_dev *dev_with(uint16_t pairs, uint64_t extra)
{
	struct test_dev *td = td_new(pairs, TD_BASE_FEATURES | extra);

	assert_int_equal(td->features & extra, extra);
	return td;
}

/* A command as Linux sends it: {class, cmd} and the payload in separate descriptors. */
static int ctrl_split(struct test_dev *td, const uint8_t *in, size_t in_len)
{
	struct fake_vq *q = &td->vq[td->ctrl_q];
	struct fake_buf b[3];
	uint8_t *ack;
	uint32_t id, len;
	unsigned n = 0;
	int head;

	b[n].gpa = fake_mem_alloc(&td->mem, 2, 8);
	b[n].len = 2;
	b[n++].write = false;
	memcpy(fake_mem_host(&td->mem, b[0].gpa), in, 2);
	if (in_len > 2) {
		b[n].gpa = fake_mem_alloc(&td->mem, in_len - 2, 8);
		b[n].len = (uint32_t)(in_len - 2);
		b[n].write = false;
		memcpy(fake_mem_host(&td->mem, b[n].gpa), in + 2, in_len - 2);
		n++;
	}
	b[n].gpa = fake_mem_alloc(&td->mem, 1, 1);
	b[n].len = 1;
	b[n].write = true;
	ack = fake_mem_host(&td->mem, b[n].gpa);
	*ack = 0xee;
	n++;
	head = fake_vq_add_chain(q, b, n);
	fake_vq_publish(q);
	vnet_dev_kick(td->dev, td->ctrl_q);
	if (!fake_vq_get_used(q, &id, &len) || id != (uint32_t)head)
		return -1;
	return *ack;
}

static uint8_t cmd1(struct test_dev *td, uint8_t cls, uint8_t cmd, const uint8_t *payload,
		    size_t len)
{
	uint8_t in[64];

	assert_true(len + 2 <= sizeof(in));
	in[0] = cls;
	in[1] = cmd;
	if (len)
		memcpy(in + 2, payload, len);
	return td_exec(td, in, len + 2);
}

/* ---- the control virtqueue itself ---- */

static void test_ctrl_queue_round_trip_acks_ok_with_used_len_1(void **state)
{
	struct test_dev *td = dev_with(1, 0);
	uint8_t in[10] = {VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_TX_SET};
	uint32_t used_len = 0;

	(void)state;
	put_le32(in + 2, 16);
	put_le32(in + 6, 64);
	assert_int_equal(td_ctrl(td, in, sizeof(in), NULL, 0, &used_len), VIRTIO_NET_OK);
	assert_int_equal(used_len, 1);
	assert_int_equal(vnet_dev_queue(td->dev, 1)->coal.params.max_packets, 16);
	assert_int_equal(vnet_dev_queue(td->dev, 1)->coal.params.max_usecs, 64);
	td_free(td);
}

static void test_ctrl_queue_acks_err_for_malformed_commands(void **state)
{
	struct test_dev *td = dev_with(1, 0);
	uint8_t bad_class[3] = {0x77, 0, 0};
	uint8_t truncated[5] = {VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_TX_SET, 1, 2,
				3};
	uint32_t used_len = 0;

	(void)state;
	/* Every command completes, or the polling guest hangs. */
	assert_int_equal(td_ctrl(td, bad_class, sizeof(bad_class), NULL, 0, &used_len),
			 VIRTIO_NET_ERR);
	assert_int_equal(used_len, 1);
	assert_int_equal(td_ctrl(td, truncated, sizeof(truncated), NULL, 0, &used_len),
			 VIRTIO_NET_ERR);
	assert_int_equal(td_ctrl(td, truncated, 1, NULL, 0, &used_len), VIRTIO_NET_ERR);
	assert_false(vnet_dev_queue(td->dev, td->ctrl_q)->vq.broken);
	td_free(td);
}

static void test_ctrl_queue_completes_while_no_interrupt_set(void **state)
{
	struct test_dev *td = dev_with(1, 0);
	uint8_t in[10] = {VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_RX_SET};

	(void)state;
	/* Linux polls the control queue with VRING_AVAIL_F_NO_INTERRUPT set. */
	fake_vq_set_no_interrupt(&td->vq[td->ctrl_q], true);
	put_le32(in + 2, 2);
	assert_int_equal(td_ctrl(td, in, sizeof(in), NULL, 0, NULL), VIRTIO_NET_OK);
	assert_int_equal(td->notifies[td->ctrl_q], 0);
	fake_vq_set_no_interrupt(&td->vq[td->ctrl_q], false);
	assert_int_equal(td_ctrl(td, in, sizeof(in), NULL, 0, NULL), VIRTIO_NET_OK);
	assert_int_equal(td->notifies[td->ctrl_q], 1);
	td_free(td);
}

static void test_ctrl_command_split_across_descriptors(void **state)
{
	struct test_dev *td = dev_with(1, 0);
	uint8_t in[10] = {VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_RX_SET};

	(void)state;
	put_le32(in + 2, 3);
	put_le32(in + 6, 33);
	assert_int_equal(ctrl_split(td, in, sizeof(in)), VIRTIO_NET_OK);
	assert_int_equal(vnet_dev_queue(td->dev, 0)->coal.params.max_packets, 3);
	assert_int_equal(vnet_dev_queue(td->dev, 0)->coal.params.max_usecs, 33);
	td_free(td);
}

static void test_ctrl_queue_handles_several_commands_per_kick(void **state)
{
	struct test_dev *td = dev_with(1, 0);
	struct fake_vq *q = &td->vq[td->ctrl_q];
	uint8_t *acks[3];
	int heads[3];
	uint32_t id, len;

	(void)state;
	for (unsigned i = 0; i < 3; i++) {
		struct fake_buf b[2];
		uint8_t *in;

		b[0].gpa = fake_mem_alloc(&td->mem, 10, 8);
		b[0].len = 10;
		b[0].write = false;
		in = fake_mem_host(&td->mem, b[0].gpa);
		in[0] = VIRTIO_NET_CTRL_NOTF_COAL;
		in[1] = i == 1 ? 9 : VIRTIO_NET_CTRL_NOTF_COAL_TX_SET; /* the middle one is bad */
		put_le32(in + 2, 10 + i);
		put_le32(in + 6, 100);
		b[1].gpa = fake_mem_alloc(&td->mem, 1, 1);
		b[1].len = 1;
		b[1].write = true;
		acks[i] = fake_mem_host(&td->mem, b[1].gpa);
		*acks[i] = 0xee;
		heads[i] = fake_vq_add_chain(q, b, 2);
	}
	fake_vq_publish(q);
	vnet_dev_kick(td->dev, td->ctrl_q);
	for (unsigned i = 0; i < 3; i++) {
		assert_true(fake_vq_get_used(q, &id, &len));
		assert_int_equal(id, heads[i]);
	}
	assert_int_equal(*acks[0], VIRTIO_NET_OK);
	assert_int_equal(*acks[1], VIRTIO_NET_ERR);
	assert_int_equal(*acks[2], VIRTIO_NET_OK);
	assert_int_equal(vnet_dev_queue(td->dev, 1)->coal.params.max_packets, 12);
	td_free(td);
}

/* ---- CTRL_RX ---- */

static void test_rx_promisc_and_allmulti_take_one_byte(void **state)
{
	struct test_dev *td = dev_with(1, F(CTRL_RX));
	uint8_t on = 1, off = 0;

	(void)state;
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &on, 1),
			 VIRTIO_NET_OK);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &off, 1),
			 VIRTIO_NET_OK);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, &on, 1),
			 VIRTIO_NET_OK);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, &off, 1),
			 VIRTIO_NET_OK);
	/* Wrong size. */
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, NULL, 0),
			 VIRTIO_NET_ERR);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, NULL, 0),
			 VIRTIO_NET_ERR);
	/* Unknown RX command. */
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, 0x7f, &on, 1), VIRTIO_NET_ERR);
	td_free(td);
}

static void test_rx_promisc_via_control_queue(void **state)
{
	struct test_dev *td = dev_with(1, F(CTRL_RX));
	uint8_t in[3] = {VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, 1};

	(void)state;
	assert_int_equal(ctrl_split(td, in, sizeof(in)), VIRTIO_NET_OK);
	td_free(td);
}

/* ---- CTRL_MAC ---- */

static size_t mac_table(uint8_t *p, uint32_t n_uni, uint32_t n_multi, uint32_t have_uni,
			uint32_t have_multi)
{
	size_t off = 0;

	put_le32(p + off, n_uni);
	off += 4;
	for (uint32_t i = 0; i < have_uni; i++, off += 6)
		memcpy(p + off, (uint8_t[6]){0x02, 0, 0, 0, 0, (uint8_t)i}, 6);
	put_le32(p + off, n_multi);
	off += 4;
	for (uint32_t i = 0; i < have_multi; i++, off += 6)
		memcpy(p + off, (uint8_t[6]){0x01, 0, 0x5e, 0, 0, (uint8_t)i}, 6);
	return off;
}

static void test_mac_table_set_accepts_well_formed_tables(void **state)
{
	struct test_dev *td = dev_with(1, F(CTRL_RX));
	uint8_t buf[60];
	size_t len;

	(void)state;
	len = mac_table(buf, 1, 2, 1, 2);
	assert_int_equal(len, 4 + 6 + 4 + 12);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, buf, len),
			 VIRTIO_NET_OK);
	len = mac_table(buf, 0, 0, 0, 0);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, buf, len),
			 VIRTIO_NET_OK);
	/* Through the queue, split like Linux does (one descriptor per table would also do). */
	{
		uint8_t in[62] = {VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET};

		len = mac_table(in + 2, 2, 1, 2, 1);
		assert_int_equal(ctrl_split(td, in, len + 2), VIRTIO_NET_OK);
	}
	td_free(td);
}

static void test_mac_table_set_truncated_is_err(void **state)
{
	struct test_dev *td = dev_with(1, F(CTRL_RX));
	uint8_t buf[60] = {0};
	size_t len;

	(void)state;
	/* Unicast count says 2, one address present, no multicast table. */
	len = mac_table(buf, 2, 0, 1, 0) - 4;
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, buf, len),
			 VIRTIO_NET_ERR);
	/* Multicast table missing entirely. */
	len = mac_table(buf, 1, 0, 1, 0) - 4;
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, buf, len),
			 VIRTIO_NET_ERR);
	/* Multicast count says 3, two present. */
	len = mac_table(buf, 0, 3, 0, 2);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, buf, len),
			 VIRTIO_NET_ERR);
	/* Half a count. */
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, buf, 2),
			 VIRTIO_NET_ERR);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, NULL, 0),
			 VIRTIO_NET_ERR);
	/* Counts whose byte size overflows 32 bits. */
	len = mac_table(buf, 0xffffffffu, 0, 0, 0);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, buf, len),
			 VIRTIO_NET_ERR);
	len = mac_table(buf, 0x2aaaaaabu, 0, 0, 0); /* 6 * n wraps to 2 */
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, buf, len + 2),
			 VIRTIO_NET_ERR);
	len = mac_table(buf, 0, 0xffffffffu, 0, 0);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, buf, len),
			 VIRTIO_NET_ERR);
	td_free(td);
}

static void test_mac_addr_set_changes_config_space_mac(void **state)
{
	struct test_dev *td = dev_with(1, F(CTRL_MAC_ADDR) | F(CTRL_RX));
	uint8_t cfg[6];

	(void)state;
	assert_memory_equal(vnet_dev_mac(td->dev), default_mac, 6);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, new_mac, 6),
			 VIRTIO_NET_OK);
	assert_memory_equal(vnet_dev_mac(td->dev), new_mac, 6);
	assert_int_equal(vnet_dev_config_read(td->dev, 0, cfg, 6), 6);
	assert_memory_equal(cfg, new_mac, 6);
	/* Too short changes nothing. */
	assert_int_equal(
	    cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, default_mac, 5),
	    VIRTIO_NET_ERR);
	assert_memory_equal(vnet_dev_mac(td->dev), new_mac, 6);
	/* A multicast (group) address is no station address: refused, nothing changed. */
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET,
			      (const uint8_t[6]){0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}, 6),
			 VIRTIO_NET_ERR);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET,
			      (const uint8_t[6]){0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 6),
			 VIRTIO_NET_ERR);
	assert_memory_equal(vnet_dev_mac(td->dev), new_mac, 6);
	/* Unknown MAC command. */
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, 9, new_mac, 6), VIRTIO_NET_ERR);
	td_free(td);
}

/* Deliver one frame to `dst`; returns how many used entries it produced. */
static unsigned rx_to(struct test_dev *td, const uint8_t dst[6])
{
	uint8_t hdr[12] = {0}, frame[60] = {0};
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {frame, sizeof(frame)}};
	uint16_t before = fake_vq_used_idx(&td->vq[0]);

	memcpy(frame, dst, 6);
	memcpy(frame + 6, (const uint8_t[6]){0x02, 0, 0, 0, 0, 0x99}, 6);
	frame[12] = 0x88;
	frame[13] = 0xb5;
	assert_int_equal(vnet_dev_receive(td->dev, iov, 2), 1);
	vnet_dev_rx_flush(td->dev);
	return (uint16_t)(fake_vq_used_idx(&td->vq[0]) - before);
}

static void test_rx_filter_follows_promisc_allmulti_and_mac_table(void **state)
{
	static const uint8_t other[6] = {0x02, 0, 0, 0, 0, 0x77};
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t mcast[6] = {0x01, 0, 0x5e, 0, 0, 0x42};
	struct test_dev *td = dev_with(1, F(CTRL_RX));
	uint8_t on = 1, off = 0, table[40] = {0};

	(void)state;
	td_post_rx(td, 0, 16, 1526);
	assert_int_equal(rx_to(td, other), 1); /* promiscuous until the driver says otherwise */
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &off, 1),
			 VIRTIO_NET_OK);
	assert_int_equal(rx_to(td, other), 0);
	assert_int_equal(rx_to(td, default_mac), 1);
	assert_int_equal(rx_to(td, bcast), 1);
	assert_int_equal(rx_to(td, mcast), 0);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, &on, 1),
			 VIRTIO_NET_OK);
	assert_int_equal(rx_to(td, mcast), 1);
	/* Unicast table {other}, empty multicast table. */
	put_le32(table, 1);
	memcpy(table + 4, other, 6);
	put_le32(table + 10, 0);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, table, 14),
			 VIRTIO_NET_OK);
	assert_int_equal(rx_to(td, other), 1);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &on, 1),
			 VIRTIO_NET_OK);
	assert_int_equal(rx_to(td, (const uint8_t[6]){0x02, 1, 2, 3, 4, 5}), 1);
	td_free(td);
}

/* After a vnetd restart (--state-dir) the filter and MAC come back without a command. */
static void test_restore_rx_puts_back_filter_and_mac(void **state)
{
	static const uint8_t other[6] = {0x02, 0, 0, 0, 0, 0x77};
	struct vnet_rx_filter f;
	struct test_dev *td = dev_with(1, F(CTRL_RX) | F(CTRL_MAC_ADDR));

	(void)state;
	memset(&f, 0, sizeof(f));
	f.n_uc = 1;
	memcpy(f.uc[0], other, 6);
	f.nobcast = true;
	assert_int_equal(vnet_dev_restore_rx(td->dev, &f, new_mac), 0);
	assert_false(vnet_dev_rx_filter(td->dev)->promisc);
	assert_true(vnet_dev_rx_filter(td->dev)->nobcast);
	assert_int_equal(vnet_dev_rx_filter(td->dev)->n_uc, 1);
	assert_memory_equal(vnet_dev_mac(td->dev), new_mac, 6);
	td_post_rx(td, 0, 16, 1526);
	assert_int_equal(rx_to(td, other), 1);
	assert_int_equal(rx_to(td, (const uint8_t[6]){0x02, 1, 2, 3, 4, 5}), 0);
	/* Out-of-bounds tables change nothing. */
	f.n_uc = VNET_MAC_TABLE_SIZE + 1;
	assert_int_equal(vnet_dev_restore_rx(td->dev, &f, NULL), -1);
	f.n_uc = 1;
	f.uc_overflow = true;
	assert_int_equal(vnet_dev_restore_rx(td->dev, &f, NULL), -1);
	assert_int_equal(vnet_dev_rx_filter(td->dev)->n_uc, 1);
	td_free(td);
}

/* A driver without CTRL_RX / CTRL_MAC_ADDR could not have set them: nothing is restored. */
static void test_restore_rx_needs_the_features(void **state)
{
	struct vnet_rx_filter f;
	struct test_dev *td = dev_with(1, 0);

	(void)state;
	memset(&f, 0, sizeof(f));
	assert_int_equal(vnet_dev_restore_rx(td->dev, &f, new_mac), 0);
	assert_true(vnet_dev_rx_filter(td->dev)->promisc);
	assert_memory_equal(vnet_dev_mac(td->dev), default_mac, 6);
	td_free(td);
}

/* ---- CTRL_MQ ---- */

static void test_mq_vq_pairs_set_within_range(void **state)
{
	struct test_dev *td = dev_with(4, F(MQ));
	uint8_t le[2];

	(void)state;
	put_le16(le, 2);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, le, 2),
			 VIRTIO_NET_OK);
	assert_int_equal(vnet_dev_active_pairs(td->dev), 2);
	put_le16(le, 4);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, le, 2),
			 VIRTIO_NET_OK);
	assert_int_equal(vnet_dev_active_pairs(td->dev), 4);
	put_le16(le, 1);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, le, 2),
			 VIRTIO_NET_OK);
	assert_int_equal(vnet_dev_active_pairs(td->dev), 1);
	td_free(td);
}

/* An IPv4 TCP frame to the device's MAC from 10.0.0.1:sport to 10.0.0.2:80 (header only). */
static int receive_tcp(struct test_dev *td, uint16_t sport)
{
	uint8_t hdr[12] = {0}, f[14 + 20 + 20] = {0}; /* hdr: struct virtio_net_hdr_v1 */
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {f, sizeof(f)}};
	int r;

	memcpy(f, vnet_dev_mac(td->dev), 6);
	memcpy(f + 6, (const uint8_t[6]){0x02, 0, 0, 0, 0, 0x99}, 6);
	f[12] = 0x08; /* IPv4 */
	f[14] = 0x45;
	f[14 + 9] = 6; /* TCP */
	memcpy(f + 14 + 12, (const uint8_t[8]){10, 0, 0, 1, 10, 0, 0, 2}, 8);
	f[14 + 20] = (uint8_t)(sport >> 8);
	f[14 + 21] = (uint8_t)sport;
	f[14 + 23] = 80;
	r = vnet_dev_receive(td->dev, iov, 2);
	vnet_dev_rx_flush(td->dev);
	return r;
}

/* Linux's connect() takes even source ports: such flows must still use both pairs. */
static void test_mq_steering_spreads_flows_with_even_ports(void **state)
{
	struct test_dev *td = dev_with(2, F(MQ));
	uint8_t le[2];

	(void)state;
	put_le16(le, 2);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, le, 2),
			 VIRTIO_NET_OK);
	td_post_rx(td, 0, 32, 1526);
	td_post_rx(td, 2, 32, 1526);
	for (uint16_t port = 40000; port < 40064; port += 4)
		assert_int_equal(receive_tcp(td, port), 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[0]) + fake_vq_used_idx(&td->vq[2]), 16);
	assert_true(fake_vq_used_idx(&td->vq[0]) >= 2);
	assert_true(fake_vq_used_idx(&td->vq[2]) >= 2);
	td_free(td);
}

static void test_mq_vq_pairs_set_out_of_range_or_malformed_is_err(void **state)
{
	struct test_dev *td = dev_with(4, F(MQ));
	uint16_t before = vnet_dev_active_pairs(td->dev);
	uint8_t le[3] = {0};

	(void)state;
	put_le16(le, 0);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, le, 2),
			 VIRTIO_NET_ERR);
	put_le16(le, 5);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, le, 2),
			 VIRTIO_NET_ERR);
	put_le16(le, 0x8000);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, le, 2),
			 VIRTIO_NET_ERR);
	put_le16(le, 2);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, le, 1),
			 VIRTIO_NET_ERR);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MQ, 7, le, 2), VIRTIO_NET_ERR);
	assert_int_equal(vnet_dev_active_pairs(td->dev), before);
	td_free(td);
}

static void test_mq_vq_pairs_set_without_mq_is_err(void **state)
{
	struct test_dev *td = td_new(4, TD_BASE_FEATURES);
	uint8_t le[2];

	(void)state;
	assert_int_equal(td->features & F(MQ), 0);
	put_le16(le, 1);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, le, 2),
			 VIRTIO_NET_ERR);
	td_free(td);
}

/* ---- CTRL_GUEST_OFFLOADS ---- */

static void test_guest_offloads_set_negotiated_bits(void **state)
{
	const uint64_t offl = F(GUEST_CSUM) | F(GUEST_TSO4);
	struct test_dev *td = dev_with(1, F(CTRL_GUEST_OFFLOADS) | offl);
	uint8_t le[8];

	(void)state;
	put_le64(le, F(GUEST_CSUM));
	assert_int_equal(
	    cmd1(td, VIRTIO_NET_CTRL_GUEST_OFFLOADS, VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, le, 8),
	    VIRTIO_NET_OK);
	assert_true(td->set_offloads_calls >= 1);
	assert_int_equal(td->offloads & offl, F(GUEST_CSUM));
	put_le64(le, 0);
	assert_int_equal(
	    cmd1(td, VIRTIO_NET_CTRL_GUEST_OFFLOADS, VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, le, 8),
	    VIRTIO_NET_OK);
	assert_int_equal(td->offloads & offl, 0);
	td_free(td);
}

static void test_guest_offloads_set_bits_not_negotiated_is_err(void **state)
{
	struct test_dev *td = dev_with(1, F(CTRL_GUEST_OFFLOADS) | F(GUEST_CSUM));
	unsigned calls;
	uint8_t le[9] = {0};

	(void)state;
	assert_int_equal(td->features & F(GUEST_TSO6), 0);
	calls = td->set_offloads_calls;
	put_le64(le, F(GUEST_CSUM) | F(GUEST_TSO6));
	assert_int_equal(
	    cmd1(td, VIRTIO_NET_CTRL_GUEST_OFFLOADS, VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, le, 8),
	    VIRTIO_NET_ERR);
	put_le64(le, BIT_ULL(63));
	assert_int_equal(
	    cmd1(td, VIRTIO_NET_CTRL_GUEST_OFFLOADS, VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, le, 8),
	    VIRTIO_NET_ERR);
	/* Too short. */
	put_le64(le, F(GUEST_CSUM));
	assert_int_equal(
	    cmd1(td, VIRTIO_NET_CTRL_GUEST_OFFLOADS, VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, le, 7),
	    VIRTIO_NET_ERR);
	assert_int_equal(td->set_offloads_calls, calls);
	td_free(td);
}

static void test_guest_offloads_set_without_feature_is_err(void **state)
{
	struct test_dev *td = dev_with(1, F(GUEST_CSUM));
	uint8_t le[8];

	(void)state;
	assert_int_equal(td->features & F(CTRL_GUEST_OFFLOADS), 0);
	put_le64(le, F(GUEST_CSUM));
	assert_int_equal(
	    cmd1(td, VIRTIO_NET_CTRL_GUEST_OFFLOADS, VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, le, 8),
	    VIRTIO_NET_ERR);
	td_free(td);
}

/* ---- CTRL_ANNOUNCE ---- */

/*
 * vnetd does not offer VIRTIO_NET_F_GUEST_ANNOUNCE (it never sets VIRTIO_NET_S_ANNOUNCE), so a
 * driver may not send CTRL_ANNOUNCE; one that does anyway gets ERR. The control queue itself
 * works on the same device (RX_PROMISC is OK), so the ERR is about the command.
 */
static void test_announce_not_offered_ack_is_err(void **state)
{
	struct test_dev *td =
	    td_new(1, TD_BASE_FEATURES | F(GUEST_ANNOUNCE) | F(STATUS) | F(CTRL_RX));
	const uint8_t ack[2] = {VIRTIO_NET_CTRL_ANNOUNCE, VIRTIO_NET_CTRL_ANNOUNCE_ACK};
	const uint8_t on = 1;
	uint8_t cfg[2];

	(void)state;
	assert_int_equal(vnet_dev_offered_features(td->dev) & F(GUEST_ANNOUNCE), 0);
	assert_int_equal(td->features & F(GUEST_ANNOUNCE), 0);
	assert_int_equal(td->features & (F(CTRL_VQ) | F(CTRL_RX)), F(CTRL_VQ) | F(CTRL_RX));
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &on, 1),
			 VIRTIO_NET_OK);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_ANNOUNCE, VIRTIO_NET_CTRL_ANNOUNCE_ACK, NULL, 0),
			 VIRTIO_NET_ERR);
	/* Through the ring as Linux lays it out, too. */
	assert_int_equal(ctrl_split(td, ack, sizeof(ack)), VIRTIO_NET_ERR);
	assert_int_equal(vnet_dev_config_read(td->dev, 6, cfg, 2), 2);
	assert_int_equal(get_le16(cfg) & VIRTIO_NET_S_ANNOUNCE, 0);
	td_free(td);
}

/* ---- payload sizes ---- */

static void test_oversized_payloads_are_err(void **state)
{
	const uint64_t want =
	    F(CTRL_RX) | F(CTRL_MAC_ADDR) | F(MQ) | F(CTRL_GUEST_OFFLOADS) | F(GUEST_CSUM);
	struct test_dev *td = dev_with(2, want);
	uint8_t p[16] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	size_t written = 0;
	uint8_t in[20] = {VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET};

	(void)state;
	/* Each command has a fixed-size payload; a longer one is malformed too. */
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, p, 2),
			 VIRTIO_NET_ERR);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, p, 2),
			 VIRTIO_NET_ERR);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET,
			      (const uint8_t[7]){0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}, 7),
			 VIRTIO_NET_ERR);
	assert_memory_equal(vnet_dev_mac(td->dev), default_mac, 6);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, p, 3),
			 VIRTIO_NET_ERR);
	put_le64(p, F(GUEST_CSUM));
	assert_int_equal(
	    cmd1(td, VIRTIO_NET_CTRL_GUEST_OFFLOADS, VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET, p, 9),
	    VIRTIO_NET_ERR);
	memset(p, 0, sizeof(p));
	p[0] = 4;
	assert_int_equal(
	    cmd1(td, VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_TX_SET, p, 9),
	    VIRTIO_NET_ERR);
	put_le16(in + 2, 1);
	put_le32(in + 6, 4);
	assert_int_equal(vnet_dev_ctrl_execute(td->dev, in, 15, NULL, 0, &written), VIRTIO_NET_ERR);
	assert_int_equal(vnet_dev_queue(td->dev, 1)->coal.params.max_packets, 0);
	td_free(td);
}

/* ---- config space ---- */

static void test_config_read_layout(void **state)
{
	struct test_dev *td = dev_with(4, F(MQ) | F(MTU));
	uint8_t cfg[12];

	(void)state;
	memset(cfg, 0xcc, sizeof(cfg));
	assert_int_equal(vnet_dev_config_read(td->dev, 0, cfg, sizeof(cfg)), 12);
	assert_memory_equal(cfg, default_mac, 6);
	assert_int_equal(get_le16(cfg + 6) & VIRTIO_NET_S_LINK_UP, VIRTIO_NET_S_LINK_UP);
	assert_int_equal(get_le16(cfg + 8), 4);
	assert_int_equal(get_le16(cfg + 10), 1500);
	/* Byte by byte, like UML's GET_CONFIG. */
	for (uint32_t i = 0; i < 12; i++) {
		uint8_t b = 0xcc;

		assert_int_equal(vnet_dev_config_read(td->dev, i, &b, 1), 1);
		assert_int_equal(b, cfg[i]);
	}
	td_free(td);
}

static void test_config_read_past_end_is_zero_filled(void **state)
{
	struct test_dev *td = dev_with(1, 0);
	uint8_t buf[8];

	(void)state;
	memset(buf, 0xcc, sizeof(buf));
	assert_int_equal(vnet_dev_config_read(td->dev, 10, buf, 4), 2);
	assert_int_equal(buf[2], 0);
	assert_int_equal(buf[3], 0);
	assert_int_equal(buf[4], 0xcc); /* nothing written past len */
	memset(buf, 0xcc, sizeof(buf));
	assert_int_equal(vnet_dev_config_read(td->dev, 12, buf, 8), 0);
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(buf[i], 0);
	memset(buf, 0xcc, sizeof(buf));
	assert_int_equal(vnet_dev_config_read(td->dev, 0xfffffffeu, buf, 8), 0);
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(buf[i], 0);
	td_free(td);
}

static void test_config_link_follows_backend(void **state)
{
	struct test_dev *td = dev_with(1, F(STATUS));
	uint8_t st[2];

	(void)state;
	assert_true(vnet_dev_link_up(td->dev));
	vnet_dev_attach_backend(td->dev, NULL, NULL);
	assert_false(vnet_dev_link_up(td->dev));
	assert_int_equal(vnet_dev_config_read(td->dev, 6, st, 2), 2);
	assert_int_equal(get_le16(st) & VIRTIO_NET_S_LINK_UP, 0);
	td_free(td);
}

static void test_config_write_only_mac_without_ctrl_mac_addr(void **state)
{
	struct test_dev *td = dev_with(1, 0);
	uint8_t st[2] = {0, 0};
	uint8_t b = 0x99;

	(void)state;
	assert_int_equal(td->features & F(CTRL_MAC_ADDR), 0);
	assert_int_equal(vnet_dev_config_write(td->dev, 0, new_mac, 6), 0);
	assert_memory_equal(vnet_dev_mac(td->dev), new_mac, 6);
	assert_int_equal(vnet_dev_config_write(td->dev, 5, &b, 1), 0); /* legacy byte writes */
	assert_int_equal(vnet_dev_mac(td->dev)[5], 0x99);
	assert_int_equal(vnet_dev_config_write(td->dev, 6, st, 2), -1);
	assert_int_equal(vnet_dev_config_write(td->dev, 4, new_mac, 4), -1); /* mac + status */
	assert_int_equal(vnet_dev_config_write(td->dev, 100, st, 2), -1);
	assert_int_equal(vnet_dev_config_write(td->dev, 0xffffffffu, st, 2), -1);
	assert_int_equal(vnet_dev_mac(td->dev)[4], new_mac[4]);
	td_free(td);
	/* With CTRL_MAC_ADDR the driver must use the command. */
	td = dev_with(1, F(CTRL_MAC_ADDR) | F(CTRL_RX));
	assert_int_equal(vnet_dev_config_write(td->dev, 0, new_mac, 6), -1);
	assert_memory_equal(vnet_dev_mac(td->dev), default_mac, 6);
	td_free(td);
}

/*
 * Finding 4 of hardening round 3: a group address never becomes the device's MAC, whichever way
 * it comes: a config write (whole, or the byte that sets the I/G bit), a device-state stream, a
 * restore (--state-dir), or CTRL_MAC_ADDR_SET.
 */
static void test_group_mac_refused_from_every_source(void **state)
{
	static const uint8_t group[6] = {0x03, 0xaa, 0xbb, 0xcc, 0xdd, 0xee};
	static uint8_t buf[VNET_STATE_MAX];
	struct vnet_rx_filter f;
	uint8_t b = 0x01;
	const char *why;
	size_t len;
	struct test_dev *td = dev_with(1, 0);

	(void)state;
	assert_int_equal(vnet_dev_config_write(td->dev, 0, group, 6), -1);
	assert_int_equal(vnet_dev_config_write(td->dev, 0, &b, 1), -1); /* byte-wise */
	assert_memory_equal(vnet_dev_mac(td->dev), default_mac, 6);
	/* A stream saved from this device, its MAC byte turned into a group address. */
	len = vnet_dev_state_save(td->dev, buf, sizeof(buf));
	assert_true(len > 18);
	buf[12] |= 1;
	for (unsigned i = 0; i < vnet_dev_num_queues(td->dev); i++)
		vnet_dev_queue_stop(td->dev, i); /* a stream loads into a stopped device */
	assert_int_equal(vnet_dev_state_load(td->dev, buf, len, &why), -1);
	assert_string_equal(why, "a group address as the device's MAC");
	assert_memory_equal(vnet_dev_mac(td->dev), default_mac, 6);
	td_free(td);

	td = dev_with(1, F(CTRL_RX) | F(CTRL_MAC_ADDR));
	memset(&f, 0, sizeof(f));
	assert_int_equal(vnet_dev_restore_rx(td->dev, &f, group), -1);
	assert_int_equal(cmd1(td, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, group, 6),
			 VIRTIO_NET_ERR);
	assert_memory_equal(vnet_dev_mac(td->dev), default_mac, 6);
	td_free(td);
}

#define T(fn) cmocka_unit_test_teardown(fn, td_cleanup)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_ctrl_queue_round_trip_acks_ok_with_used_len_1),
	    T(test_ctrl_queue_acks_err_for_malformed_commands),
	    T(test_ctrl_queue_completes_while_no_interrupt_set),
	    T(test_ctrl_command_split_across_descriptors),
	    T(test_ctrl_queue_handles_several_commands_per_kick),
	    T(test_rx_promisc_and_allmulti_take_one_byte),
	    T(test_rx_promisc_via_control_queue),
	    T(test_mac_table_set_accepts_well_formed_tables),
	    T(test_rx_filter_follows_promisc_allmulti_and_mac_table),
	    T(test_mac_table_set_truncated_is_err),
	    T(test_mac_addr_set_changes_config_space_mac),
	    T(test_restore_rx_puts_back_filter_and_mac),
	    T(test_group_mac_refused_from_every_source),
	    T(test_restore_rx_needs_the_features),
	    T(test_mq_vq_pairs_set_within_range),
	    T(test_mq_steering_spreads_flows_with_even_ports),
	    T(test_mq_vq_pairs_set_out_of_range_or_malformed_is_err),
	    T(test_mq_vq_pairs_set_without_mq_is_err),
	    T(test_guest_offloads_set_negotiated_bits),
	    T(test_guest_offloads_set_bits_not_negotiated_is_err),
	    T(test_guest_offloads_set_without_feature_is_err),
	    T(test_announce_not_offered_ack_is_err),
	    T(test_oversized_payloads_are_err),
	    T(test_config_read_layout),
	    T(test_config_read_past_end_is_zero_filled),
	    T(test_config_link_follows_backend),
	    T(test_config_write_only_mac_without_ctrl_mac_addr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
