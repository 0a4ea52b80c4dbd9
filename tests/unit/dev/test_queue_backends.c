/* SPDX-License-Identifier: MIT */
/* test_queue_backends.c - a backend per queue pair (multi-queue tap): RX by pair, TX per handle. */
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
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
#define RXBUF 2048

/* A backend whose transmits record which handle (queue) they came through. */
static struct vnet_backend be0, be1;
static unsigned sent[2], eagain[2];

static int q_transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
		      const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len)
{
	unsigned i = be == &be1;

	(void)hdr, (void)iov, (void)iovcnt, (void)off, (void)frame_len;
	assert_true(be == &be0 || be == &be1);
	if (eagain[i]) {
		eagain[i]--;
		return -EAGAIN;
	}
	sent[i]++;
	return 0;
}

static unsigned pairs_told[8], npairs_told;

static void q_set_pairs(struct vnet_backend *be, unsigned pairs)
{
	(void)be;
	if (npairs_told < 8)
		pairs_told[npairs_told++] = pairs;
}

static const struct vnet_backend_ops q_ops = {
    .kind = "q-test", .transmit = q_transmit, .set_pairs = q_set_pairs};

static struct test_dev *pairs_dev(uint16_t active)
{
	struct test_dev *td = td_new(2, TD_BASE_FEATURES | F(MQ) | F(MRG_RXBUF));
	uint8_t in[4] = {VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET};

	assert_true(td->features & F(MQ));
	put_le16(in + 2, active);
	assert_int_equal(td_exec(td, in, sizeof(in)), VIRTIO_NET_OK);
	assert_int_equal(vnet_dev_active_pairs(td->dev), active);
	memset(sent, 0, sizeof(sent));
	memset(eagain, 0, sizeof(eagain));
	return td;
}

/* An IPv4/UDP frame to the device's MAC, `flow` in the source port (12-byte header first). */
static size_t packet(struct test_dev *td, uint8_t *p, unsigned flow)
{
	uint8_t *f = p + 12;

	memset(p, 0, 12 + 60);
	memcpy(f, vnet_dev_mac(td->dev), 6);
	f[6] = 0x02;
	f[12] = 0x08;
	f[14] = 0x45;
	f[23] = 17;
	f[26] = 10, f[29] = 1, f[30] = 10, f[33] = 2;
	f[34] = (uint8_t)(flow >> 8), f[35] = (uint8_t)flow;
	f[37] = 80;
	return 12 + 60;
}

/* Which RX queue pair got the packets: used entries per pair, after a flush. */
static void used_per_pair(struct test_dev *td, unsigned got[2])
{
	uint32_t id, len;

	vnet_dev_rx_flush(td->dev);
	for (unsigned pair = 0; pair < 2; pair++) {
		got[pair] = 0;
		while (fake_vq_get_used(&td->vq[2 * pair], &id, &len))
			got[pair]++;
	}
}

/* Both pairs active, no RSS: a packet read for pair i lands on pair i, whatever its flow. */
static void test_receive_pair_keeps_the_backends_queue(void **state)
{
	struct test_dev *td = pairs_dev(2);
	unsigned got[2];
	uint8_t p[128];

	(void)state;
	td_post_rx(td, 0, 64, RXBUF);
	td_post_rx(td, 2, 64, RXBUF);
	for (unsigned flow = 0; flow < 32; flow++) {
		struct iovec iov = {p, packet(td, p, flow)};

		assert_int_equal(vnet_dev_receive_pair(td->dev, 1, &iov, 1), 1);
	}
	used_per_pair(td, got);
	assert_int_equal(got[0], 0);
	assert_int_equal(got[1], 32);
	for (unsigned flow = 0; flow < 32; flow++) {
		struct iovec iov = {p, packet(td, p, flow)};

		assert_int_equal(vnet_dev_receive_pair(td->dev, 0, &iov, 1), 1);
	}
	used_per_pair(td, got);
	assert_int_equal(got[0], 32);
	assert_int_equal(got[1], 0);
	/* The same flows without a pair spread by the flow hash (both pairs get some). */
	for (unsigned flow = 0; flow < 32; flow++) {
		struct iovec iov = {p, packet(td, p, flow)};

		assert_int_equal(vnet_dev_receive(td->dev, &iov, 1), 1);
	}
	used_per_pair(td, got);
	assert_true(got[0] > 0 && got[1] > 0 && got[0] + got[1] == 32);
	td_free(td);
}

/* A pair the guest has not activated (or out of range): the active pairs' flow hash picks. */
static void test_receive_pair_beyond_the_active_ones(void **state)
{
	struct test_dev *td = pairs_dev(1);
	unsigned got[2];
	uint8_t p[128];

	(void)state;
	td_post_rx(td, 0, 64, RXBUF);
	td_post_rx(td, 2, 64, RXBUF);
	for (unsigned flow = 0; flow < 16; flow++) {
		struct iovec iov = {p, packet(td, p, flow)};

		assert_int_equal(vnet_dev_receive_pair(td->dev, 1, &iov, 1), 1);
		assert_int_equal(vnet_dev_receive_pair(td->dev, 1000, &iov, 1), 1);
	}
	used_per_pair(td, got);
	assert_int_equal(got[0], 32);
	assert_int_equal(got[1], 0);
	td_free(td);
}

/* Hostile lengths through the pair entry: dropped and counted, nothing placed. */
static void test_receive_pair_runt_and_giant(void **state)
{
	struct test_dev *td = pairs_dev(2);
	static uint8_t big[12 + 65536 + 14 + 4 + 1];
	struct iovec iov = {big, 12 + 10};
	unsigned got[2];

	(void)state;
	td_post_rx(td, 0, 4, RXBUF);
	td_post_rx(td, 2, 4, RXBUF);
	assert_int_equal(vnet_dev_receive_pair(td->dev, 1, &iov, 1), 1);
	iov.iov_len = sizeof(big);
	assert_int_equal(vnet_dev_receive_pair(td->dev, 1, &iov, 1), 1);
	used_per_pair(td, got);
	assert_int_equal(got[0] + got[1], 0);
	td_free(td);
}

/* Each pair's TX goes to its own handle; EAGAIN on one resumes that pair alone. */
static void test_tx_through_each_pairs_handle(void **state)
{
	struct test_dev *td = pairs_dev(2);
	uint32_t id, len;

	(void)state;
	be0.td = be1.td = td;
	vnet_dev_attach_backend(td->dev, &q_ops, &be0);
	assert_int_equal(vnet_dev_attach_queue_backend(td->dev, 1, &be1), 0);
	assert_int_equal(vnet_dev_attach_queue_backend(td->dev, 2, &be1), -1);
	td_tx(td, 1, 3, 60);
	td_tx(td, 3, 5, 60);
	assert_int_equal(sent[0], 3);
	assert_int_equal(sent[1], 5);
	/* Pair 1's handle is full: its queue waits; pair 0 goes on. */
	eagain[1] = 1;
	td_tx(td, 3, 2, 60);
	assert_int_equal(sent[1], 5);
	td_tx(td, 1, 1, 60);
	assert_int_equal(sent[0], 4);
	vnet_dev_tx_resume_pair(td->dev, 0); /* not the blocked one: nothing for pair 1 */
	assert_int_equal(sent[1], 5);
	vnet_dev_tx_resume_pair(td->dev, 1);
	assert_int_equal(sent[1], 7);
	vnet_dev_tx_resume_pair(td->dev, 99); /* no such pair: nothing */
	while (fake_vq_get_used(&td->vq[3], &id, &len))
		;
	/* A new backend: every pair transmits through it again. */
	vnet_dev_attach_backend(td->dev, &q_ops, &be0);
	td_tx(td, 3, 1, 60);
	assert_int_equal(sent[0], 5);
	assert_int_equal(sent[1], 7);
	/* No backend: no per-queue handle either. */
	vnet_dev_attach_backend(td->dev, NULL, NULL);
	assert_int_equal(vnet_dev_attach_queue_backend(td->dev, 1, &be1), -1);
	td_free(td);
}

/* The backend hears of every change of the pairs in use, once each. */
static void test_backend_told_the_pairs_in_use(void **state)
{
	struct test_dev *td = pairs_dev(1);
	uint8_t in[4] = {VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET};

	(void)state;
	npairs_told = 0;
	vnet_dev_attach_backend(td->dev, &q_ops, &be0);
	put_le16(in + 2, 2);
	assert_int_equal(td_exec(td, in, sizeof(in)), VIRTIO_NET_OK);
	assert_int_equal(td_exec(td, in, sizeof(in)), VIRTIO_NET_OK); /* no change: not told */
	put_le16(in + 2, 3); /* more than the device has: refused, not told */
	assert_int_equal(td_exec(td, in, sizeof(in)), VIRTIO_NET_ERR);
	vnet_dev_reset(td->dev);
	assert_int_equal(npairs_told, 3);
	assert_int_equal(pairs_told[0], 1); /* attached: 1 pair */
	assert_int_equal(pairs_told[1], 2);
	assert_int_equal(pairs_told[2], 1); /* reset */
	vnet_dev_attach_backend(td->dev, NULL, NULL);
	td_free(td);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_receive_pair_keeps_the_backends_queue, td_cleanup),
	    cmocka_unit_test_teardown(test_receive_pair_beyond_the_active_ones, td_cleanup),
	    cmocka_unit_test_teardown(test_receive_pair_runt_and_giant, td_cleanup),
	    cmocka_unit_test_teardown(test_tx_through_each_pairs_handle, td_cleanup),
	    cmocka_unit_test_teardown(test_backend_told_the_pairs_in_use, td_cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
