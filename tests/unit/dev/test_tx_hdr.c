/* SPDX-License-Identifier: MIT */
/* test_tx_hdr.c - the guest's TX virtio-net header is checked against the negotiated offloads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

#define F(bit) BIT_ULL(VIRTIO_NET_F_##bit)
#define TXQ 1
#define HDR 12u
#define FRAME 200u /* data bytes after the header */
#define OFFLOADS (F(CSUM) | F(HOST_TSO4) | F(HOST_TSO6))
#define TCPV4_ECN (VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN)
#define TCPV6_ECN (VIRTIO_NET_HDR_GSO_TCPV6 | VIRTIO_NET_HDR_GSO_ECN)

static struct vnet_queue_stats *stats(struct test_dev *td)
{
	return &vnet_dev_queue(td->dev, TXQ)->stats;
}

/* A TCP-ish header: checksum at 34 + 16 (inside the frame), segments of 1448 bytes. */
static struct virtio_net_hdr_v1 hdr_of(uint8_t flags, uint8_t gso_type, uint16_t gso_size)
{
	struct virtio_net_hdr_v1 h = {
	    .flags = flags,
	    .gso_type = gso_type,
	    .hdr_len = gso_type ? 66 : 0,
	    .gso_size = gso_size,
	    .csum_start = 34,
	    .csum_offset = 16,
	};

	return h;
}

/*
 * The guest sends one packet with header h; returns whether it reached the backend (its chain
 * is used either way, and a packet that did not reach it was counted as dropped).
 */
static bool send(struct test_dev *td, struct virtio_net_hdr_v1 h)
{
	unsigned npkts = td->npkts, attempts = td->tx_attempts;
	uint64_t dropped = stats(td)->dropped;
	int head = td_tx_queue(td, TXQ, FRAME, 0x5a);
	uint32_t id;

	memcpy(fake_mem_host(&td->mem, td->vq[TXQ].desc[head].addr), &h, HDR);
	fake_vq_publish(&td->vq[TXQ]);
	vnet_dev_kick(td->dev, TXQ);
	assert_true(fake_vq_get_used(&td->vq[TXQ], &id, NULL));
	assert_int_equal(id, head);
	assert_false(vnet_dev_queue(td->dev, TXQ)->vq.broken);
	if (td->npkts == npkts) {
		assert_int_equal(td->tx_attempts, attempts); /* never offered to the backend */
		assert_int_equal(stats(td)->dropped, dropped + 1);
		return false;
	}
	assert_int_equal(stats(td)->dropped, dropped);
	assert_int_equal(td->pkts[td->npkts - 1].len, HDR + FRAME);
	return true;
}

static void test_offload_headers_dropped_without_negotiated_offloads(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	const uint8_t csum = VIRTIO_NET_HDR_F_NEEDS_CSUM;

	(void)state;
	assert_int_equal(td->features & OFFLOADS, 0); /* like offloads=off */
	assert_false(send(td, hdr_of(csum, VIRTIO_NET_HDR_GSO_NONE, 0)));
	assert_false(send(td, hdr_of(csum, VIRTIO_NET_HDR_GSO_TCPV4, 1448)));
	assert_false(send(td, hdr_of(csum, VIRTIO_NET_HDR_GSO_TCPV6, 1448)));
	assert_false(send(td, hdr_of(0, VIRTIO_NET_HDR_GSO_TCPV4, 1448)));
	assert_int_equal(td->npkts, 0);
	/* A plain header still goes through. */
	assert_true(send(td, hdr_of(0, VIRTIO_NET_HDR_GSO_NONE, 0)));
	assert_int_equal(stats(td)->dropped, 4);
	assert_int_equal(stats(td)->packets, 1);
	td_free(td);
}

static void test_offload_headers_pass_with_negotiated_offloads(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | OFFLOADS);
	const uint8_t csum = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	struct virtio_net_hdr_v1 h;

	(void)state;
	assert_int_equal(td->features & OFFLOADS, OFFLOADS);
	assert_true(send(td, hdr_of(csum, VIRTIO_NET_HDR_GSO_NONE, 0)));
	assert_true(send(td, hdr_of(csum, VIRTIO_NET_HDR_GSO_TCPV4, 1448)));
	h = hdr_of(csum, VIRTIO_NET_HDR_GSO_TCPV6, 1428);
	assert_true(send(td, h));
	/* The backend gets the header as the guest wrote it. */
	assert_memory_equal(td->pkts[td->npkts - 1].data, &h, HDR);
	assert_int_equal(stats(td)->dropped, 0);
	td_free(td);
}

static void test_malformed_offload_headers_dropped_even_when_negotiated(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | OFFLOADS);
	const uint8_t csum = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	struct virtio_net_hdr_v1 h;

	(void)state;
	assert_int_equal(td->features & (F(HOST_ECN) | F(HOST_UFO)), 0);
	/* GSO needs NEEDS_CSUM and a segment size. */
	assert_false(send(td, hdr_of(0, VIRTIO_NET_HDR_GSO_TCPV4, 1448)));
	assert_false(send(td, hdr_of(csum, VIRTIO_NET_HDR_GSO_TCPV4, 0)));
	/* ECN needs HOST_ECN, UDP needs HOST_UFO (never offered), other types do not exist. */
	assert_false(send(td, hdr_of(csum, TCPV4_ECN, 1448)));
	assert_false(send(td, hdr_of(csum, VIRTIO_NET_HDR_GSO_UDP, 1448)));
	assert_false(send(td, hdr_of(csum, 2, 1448)));
	assert_false(send(td, hdr_of(csum, 5, 1448)));
	assert_false(send(td, hdr_of(0, VIRTIO_NET_HDR_GSO_ECN, 0)));
	/* The checksum must land inside the frame. */
	h = hdr_of(csum, VIRTIO_NET_HDR_GSO_NONE, 0);
	h.csum_start = FRAME - 10;
	h.csum_offset = 9;
	assert_false(send(td, h));
	h.csum_offset = 8; /* the last two bytes */
	assert_true(send(td, h));
	assert_int_equal(stats(td)->dropped, 8);
	td_free(td);
}

static void test_ecn_segmentation_passes_with_host_ecn(void **state)
{
	static struct vnet_backend_ops ecn_ops;
	const uint8_t csum = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	struct vnet_dev_params p;
	struct test_dev *td;

	(void)state;
	/* The test backend with HOST_ECN on top (as the tap backend offers it). */
	ecn_ops = td_backend_ops;
	ecn_ops.offload_features |= F(HOST_ECN);
	td_default_params(&p, 1);
	td = td_create(&p, TD_BASE_FEATURES);
	vnet_dev_attach_backend(td->dev, &ecn_ops, &td->be);
	td->features = vnet_dev_offered_features(td->dev) & (TD_BASE_FEATURES | OFFLOADS);
	td->features |= vnet_dev_offered_features(td->dev) & F(HOST_ECN);
	assert_int_equal(vnet_dev_set_features(td->dev, td->features), 0);
	assert_int_equal(td->features & (OFFLOADS | F(HOST_ECN)), OFFLOADS | F(HOST_ECN));
	td_start_queues(td, 256);
	assert_true(send(td, hdr_of(csum, TCPV4_ECN, 1448)));
	assert_true(send(td, hdr_of(csum, TCPV6_ECN, 1448)));
	/* ECN is a modifier of a TCP type, not a type of its own. */
	assert_false(send(td, hdr_of(csum, VIRTIO_NET_HDR_GSO_ECN, 1448)));
	td_free(td);
}

static void test_tx_flags_the_device_does_not_use_are_ignored(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	struct virtio_net_hdr_v1 h = hdr_of(VIRTIO_NET_HDR_F_DATA_VALID | 4, 0, 0);

	(void)state;
	/* DATA_VALID / RSC_INFO mean nothing on TX (tun ignores them): sent, bits cleared. */
	assert_true(send(td, h));
	assert_int_equal(td->pkts[0].data[0], 0);
	assert_memory_equal(td->pkts[0].data + 1, (uint8_t *)&h + 1, HDR - 1);
	td_free(td);
}

#define T(fn) cmocka_unit_test_teardown(fn, td_cleanup)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_offload_headers_dropped_without_negotiated_offloads),
	    T(test_offload_headers_pass_with_negotiated_offloads),
	    T(test_malformed_offload_headers_dropped_even_when_negotiated),
	    T(test_ecn_segmentation_passes_with_host_ecn),
	    T(test_tx_flags_the_device_does_not_use_are_ignored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
