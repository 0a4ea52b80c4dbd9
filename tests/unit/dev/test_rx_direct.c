/* SPDX-License-Identifier: MIT */
/* test_rx_direct.c - the backend reads straight into reserved guest RX buffers (one copy). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "coal_helpers.h"
#include "lib/iov.h"

#define F(bit) BIT_ULL(VIRTIO_NET_F_##bit)
#define HDR 12u

/* What a tap's readv does: a header (flags 1 = NEEDS_CSUM, num_buffers left as garbage) and a
 * frame to our MAC whose payload is `fill`; returns the bytes "read". */
static size_t backend_write(struct test_dev *td, const struct iovec *iov, int niov, size_t frame,
			    uint8_t fill)
{
	uint8_t pkt[HDR + 65536 + 64];

	memset(pkt, 0, HDR);
	pkt[0] = 1;
	pkt[10] = pkt[11] = 0xee;
	memcpy(pkt + HDR, vnet_dev_mac(td->dev), 6);
	memset(pkt + HDR + 6, 0x02, 6);
	pkt[HDR + 12] = 0x08;
	pkt[HDR + 13] = 0x00;
	memset(pkt + HDR + 14, fill, frame - 14);
	assert_int_equal(iov_copy_to(iov, (unsigned)niov, 0, pkt, HDR + frame), HDR + frame);
	return HDR + frame;
}

static struct test_dev *td_mrg(void)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | F(MRG_RXBUF));

	assert_true(td->features & F(MRG_RXBUF));
	return td;
}

static void test_reserve_commit_delivers_one_packet_and_keeps_the_rest(void **state)
{
	struct test_dev *td = td_mrg();
	const struct iovec *iov;
	uint64_t gpa = td_post_rx(td, RXQ, 48, 1536); /* 72 KiB: mergeable reserves a 64 KiB frame */
	uint32_t id, len;
	int n;

	(void)state;
	n = vnet_dev_rx_reserve(td->dev, 0, &iov);
	assert_true(iov_length(iov, (unsigned)n) >= HDR + 65536); /* any frame fits: no truncation */
	assert_true(iov_length(iov, (unsigned)n) >= HDR + 1518);
	vnet_dev_rx_commit(td->dev, backend_write(td, iov, n, 100, 0x5a));
	vnet_dev_rx_flush(td->dev);
	assert_true(fake_vq_get_used(&td->vq[RXQ], &id, &len));
	assert_int_equal(len, HDR + 100);
	{
		const uint8_t *b = fake_mem_host(&td->mem, gpa);

		assert_int_equal(get_le16(b + 10), 1); /* num_buffers written by the device */
		assert_int_equal(b[0], 0);	       /* no GUEST_CSUM: flags cleared */
		assert_int_equal(b[HDR + 14], 0x5a);
		assert_int_equal(b[HDR + 99], 0x5a);
	}
	assert_false(fake_vq_get_used(&td->vq[RXQ], &id, &len));
	assert_int_equal(stats(td, RXQ)->packets, 1);
	assert_int_equal(stats(td, RXQ)->rx_direct, 1);
	/* The unused buffers stay reserved: stopping the queue gives them back. */
	assert_int_equal(vnet_dev_queue_stop(td->dev, RXQ), 1);
	td_free(td);
}

static void test_packet_spanning_buffers_sets_num_buffers(void **state)
{
	struct test_dev *td = td_mrg();
	const struct iovec *iov;
	uint32_t id, len, total = 0;
	unsigned used = 0;
	int n;

	(void)state;
	td_post_rx(td, RXQ, 140, 512);
	n = vnet_dev_rx_reserve(td->dev, 0, &iov);
	assert_true(n >= 3);
	vnet_dev_rx_commit(td->dev, backend_write(td, iov, n, 1200, 0x33));
	vnet_dev_rx_flush(td->dev);
	while (fake_vq_get_used(&td->vq[RXQ], &id, &len)) {
		used++;
		total += len;
	}
	assert_int_equal(used, 3); /* 1212 bytes in 512-byte buffers */
	assert_int_equal(total, HDR + 1200);
	td_free(td);
}

static void test_no_buffers_returns_0_and_resume_follows_kick(void **state)
{
	struct test_dev *td = td_mrg();
	const struct iovec *iov;

	(void)state;
	assert_int_equal(vnet_dev_rx_reserve(td->dev, 0, &iov), 0);
	assert_int_equal(stats(td, RXQ)->rx_no_buffers, 1);
	td_post_rx(td, RXQ, 40, 2048);
	vnet_dev_kick(td->dev, RXQ);
	assert_int_equal(td->rx_resume_calls, 1);
	assert_true(vnet_dev_rx_reserve(td->dev, 0, &iov) > 0);
	td_free(td);
}

static void test_too_few_buffers_for_the_largest_packet_falls_back(void **state)
{
	struct test_dev *td = td_mrg();
	const struct iovec *iov;

	(void)state;
	td_post_rx(td, RXQ, 2, 256); /* 512 bytes: less than one full-size frame */
	assert_int_equal(vnet_dev_rx_reserve(td->dev, 0, &iov), -1);
	/* Nothing stays reserved: the copying path finds every buffer. */
	assert_int_equal(td_receive(td, 300, 0x44), 1);
	assert_int_equal(stats(td, RXQ)->packets, 1);
	td_free(td);
}

/* Too few buffers: the next packets fall back at once, without walking the ring again, until
 * the driver posts more. A corrupted head shows whether the device walked. */
static void test_short_ring_is_not_walked_again_until_the_driver_posts(void **state)
{
	struct test_dev *td = td_mrg();
	const struct iovec *iov;

	(void)state;
	td_post_rx(td, RXQ, 4, 256);
	assert_int_equal(vnet_dev_rx_reserve(td->dev, 0, &iov), -1);
	td->vq[RXQ].avail->ring[0] = 9999; /* a walk now would break the queue */
	assert_int_equal(vnet_dev_rx_reserve(td->dev, 0, &iov), -1);
	assert_false(vnet_dev_queue(td->dev, RXQ)->vq.broken);
	td_post_rx(td, RXQ, 1, 2048); /* the avail index moves: the device looks again */
	assert_int_equal(vnet_dev_rx_reserve(td->dev, 0, &iov), -1);
	assert_true(vnet_dev_queue(td->dev, RXQ)->vq.broken);
	td_free(td);
}

static void test_receive_after_reserve_gives_buffers_back_first(void **state)
{
	struct test_dev *td = td_mrg();
	const struct iovec *iov;
	uint32_t id, len;
	int first;

	(void)state;
	td_post_rx(td, RXQ, 40, 2048);
	first = (int)td->vq[RXQ].avail->ring[0];
	assert_true(vnet_dev_rx_reserve(td->dev, 0, &iov) > 0);
	assert_int_equal(td_receive(td, 200, 0x11), 1);
	assert_true(fake_vq_get_used(&td->vq[RXQ], &id, &len));
	assert_int_equal(id, first); /* the reserved buffer was returned and used in order */
	td_free(td);
}

static void test_truncated_packet_is_dropped_and_buffers_kept(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES); /* no MRG_RXBUF: one buffer a packet */
	const struct iovec *iov;
	uint32_t id, len;
	int n;

	(void)state;
	td_post_rx(td, RXQ, 2, 2048);
	n = vnet_dev_rx_reserve(td->dev, 0, &iov);
	assert_int_equal(n, 1);
	vnet_dev_rx_commit(td->dev, iov_length(iov, 1) + 100); /* tun: longer than the buffer */
	assert_int_equal(stats(td, RXQ)->dropped, 1);
	vnet_dev_rx_flush(td->dev);
	assert_false(fake_vq_get_used(&td->vq[RXQ], &id, &len));
	vnet_dev_rx_commit(td->dev, backend_write(td, iov, n, 60, 0x77));
	vnet_dev_rx_flush(td->dev);
	assert_true(fake_vq_get_used(&td->vq[RXQ], &id, &len));
	assert_int_equal(len, HDR + 60);
	td_free(td);
}

static void test_filtered_packet_consumes_nothing(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | F(MRG_RXBUF) | F(CTRL_RX));
	uint8_t off[3] = {VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, 0};
	const struct iovec *iov;
	uint8_t other[6] = {0x52, 0x54, 0, 0, 0, 0x99};
	uint32_t id, len;
	int n;

	(void)state;
	assert_int_equal(td_ctrl(td, off, 3, NULL, 0, NULL), VIRTIO_NET_OK);
	td_post_rx(td, RXQ, 40, 2048);
	n = vnet_dev_rx_reserve(td->dev, 0, &iov);
	assert_true(n > 0);
	backend_write(td, iov, n, 80, 0x12);
	iov_copy_to(iov, (unsigned)n, HDR, other, 6); /* not our MAC */
	vnet_dev_rx_commit(td->dev, HDR + 80);
	vnet_dev_rx_flush(td->dev);
	assert_false(fake_vq_get_used(&td->vq[RXQ], &id, &len));
	assert_int_equal(stats(td, RXQ)->packets, 0);
	td_free(td);
}

static void test_several_active_pairs_use_the_copying_path(void **state)
{
	struct test_dev *td = td_mq();
	const struct iovec *iov;

	(void)state;
	td_post_rx(td, RXQ, 4, 2048);
	assert_int_equal(vnet_dev_rx_reserve(td->dev, 0, &iov), -1);
	td_free(td);
}

static void test_reset_gives_reserved_buffers_back(void **state)
{
	struct test_dev *td = td_mrg();
	const struct iovec *iov;

	(void)state;
	td_post_rx(td, RXQ, 40, 2048);
	assert_true(vnet_dev_rx_reserve(td->dev, 0, &iov) > 0);
	assert_int_equal(vnet_dev_queue_stop(td->dev, RXQ), 0); /* nothing was used */
	td_free(td);
}

/* The flags rule lives in the device, for every backend and both receive paths. */
static void test_copying_path_clears_flags_without_guest_csum(void **state)
{
	const uint64_t want[2] = {TD_BASE_FEATURES, TD_BASE_FEATURES | F(GUEST_CSUM)};

	(void)state;
	for (unsigned k = 0; k < 2; k++) {
		struct test_dev *td = td_new(1, want[k]);
		uint8_t pkt[HDR + 64] = {0};
		struct iovec iov = {pkt, sizeof(pkt)};
		uint64_t gpa = td_post_rx(td, RXQ, 1, 2048);

		pkt[0] = VIRTIO_NET_HDR_F_DATA_VALID; /* flags: what tun sets for a verified sum */
		memcpy(pkt + HDR, vnet_dev_mac(td->dev), 6);
		assert_int_equal(vnet_dev_receive(td->dev, &iov, 1), 1);
		vnet_dev_rx_flush(td->dev);
		assert_int_equal(((const uint8_t *)fake_mem_host(&td->mem, gpa))[0],
				 k ? VIRTIO_NET_HDR_F_DATA_VALID : 0);
		td_free(td);
	}
}

int main(void)
{
#define T(fn) cmocka_unit_test_teardown(fn, td_cleanup)
	const struct CMUnitTest tests[] = {
	    T(test_reserve_commit_delivers_one_packet_and_keeps_the_rest),
	    T(test_packet_spanning_buffers_sets_num_buffers),
	    T(test_no_buffers_returns_0_and_resume_follows_kick),
	    T(test_too_few_buffers_for_the_largest_packet_falls_back),
	    T(test_short_ring_is_not_walked_again_until_the_driver_posts),
	    T(test_receive_after_reserve_gives_buffers_back_first),
	    T(test_truncated_packet_is_dropped_and_buffers_kept),
	    T(test_filtered_packet_consumes_nothing),
	    T(test_several_active_pairs_use_the_copying_path),
	    T(test_reset_gives_reserved_buffers_back),
	    T(test_copying_path_clears_flags_without_guest_csum),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
