/* SPDX-License-Identifier: MIT */
/* coal_helpers.h - shared helpers of the coalescing tests (queue state, NOTF_COAL commands). */
#ifndef VNETD_TEST_COAL_HELPERS_H
#define VNETD_TEST_COAL_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dev/coal/coalesce.h"
#include "fake_driver.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

#define US 1000ull
#define MS 1000000ull
#define RXQ 0
#define TXQ 1
#define TX_SET VIRTIO_NET_CTRL_NOTF_COAL_TX_SET
#define RX_SET VIRTIO_NET_CTRL_NOTF_COAL_RX_SET

static inline struct coal_state *coal(struct test_dev *td, unsigned q)
{
	return &vnet_dev_queue(td->dev, q)->coal;
}

static inline struct vnet_queue_stats *stats(struct test_dev *td, unsigned q)
{
	return &vnet_dev_queue(td->dev, q)->stats;
}

static inline void assert_params(struct test_dev *td, unsigned q, uint32_t packets, uint32_t usecs)
{
	assert_int_equal(coal(td, q)->params.max_packets, packets);
	assert_int_equal(coal(td, q)->params.max_usecs, usecs);
}

/* VQ_SET/VQ_GET with an explicit reserved field. */

static inline uint8_t vq_cmd(struct test_dev *td, uint8_t cmd, uint16_t idx, uint16_t reserved,
			     uint32_t packets, uint32_t usecs, size_t in_len, uint8_t *out,
			     size_t out_len, size_t *written)
{
	uint8_t in[14] = {VIRTIO_NET_CTRL_NOTF_COAL, cmd};

	put_le16(in + 2, idx);
	put_le16(in + 4, reserved);
	put_le32(in + 6, packets);
	put_le32(in + 10, usecs);
	return vnet_dev_ctrl_execute(td->dev, in, in_len, out, out_len, written);
}

static inline uint8_t vq_get(struct test_dev *td, uint16_t idx, uint8_t out[8], size_t *written)
{
	return vq_cmd(td, VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET, idx, 0, 0, 0, 6, out, 8, written);
}

static inline void set_pairs(struct test_dev *td, uint16_t pairs)
{
	uint8_t in[4] = {VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET};

	put_le16(in + 2, pairs);
	assert_int_equal(td_exec(td, in, sizeof(in)), VIRTIO_NET_OK);
}

static inline struct test_dev *td_mq(void)
{
	struct test_dev *td = td_new(2, TD_BASE_FEATURES | BIT_ULL(VIRTIO_NET_F_MQ));

	assert_true(td->features & BIT_ULL(VIRTIO_NET_F_MQ));
	assert_int_equal(td->ctrl_q, 4);
	set_pairs(td, 2);
	return td;
}

#endif
