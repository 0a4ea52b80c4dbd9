/* SPDX-License-Identifier: MIT */
/* test_rx_ring_full.c - RX: a packet the whole ring cannot hold is dropped, one it can waits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

#define RXQ 0
#define QSIZE 256 /* td_new()'s ring size */

static struct vnet_queue_stats *stats(struct test_dev *td, unsigned q)
{
	return &vnet_dev_queue(td->dev, q)->stats;
}

/* n RX buffers of two writable descriptors of `half` bytes each, published. */
static void post_two_desc(struct test_dev *td, unsigned n, uint32_t half)
{
	for (unsigned i = 0; i < n; i++) {
		struct fake_buf b[2] = {{fake_mem_alloc(&td->mem, half, 8), half, true},
					{fake_mem_alloc(&td->mem, half, 8), half, true}};

		fake_vq_add_chain(&td->vq[RXQ], b, 2);
	}
	fake_vq_publish(&td->vq[RXQ]);
}

/*
 * Regression (found by test_hostile_packed): buffers of two descriptors fill the descriptor
 * table with half as many buffers as entries, so "every entry taken" never came true: a packet
 * larger than the whole ring waited for ever, and every packet behind it in the switch port's
 * queue with it. It is dropped and counted; the next one is delivered.
 */
static void test_rx_multi_descriptor_buffers_whole_ring_too_small_drops(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | BIT_ULL(VIRTIO_NET_F_MRG_RXBUF));

	(void)state;
	post_two_desc(td, QSIZE / 2, 32); /* every descriptor: 128 buffers of 64 bytes */
	assert_int_equal(td_receive(td, 9000, 0x33), 1);
	assert_int_equal(stats(td, RXQ)->dropped, 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 0);
	assert_int_equal(td_receive(td, 100, 0x44), 1); /* 12 + 100 bytes: two buffers */
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 2);
	assert_int_equal(stats(td, RXQ)->packets, 1);
	td_free(td);
}

/* With descriptors left for the driver to post more, the same packet waits (not dropped). */
static void test_rx_multi_descriptor_buffers_wait_while_the_ring_has_room(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | BIT_ULL(VIRTIO_NET_F_MRG_RXBUF));

	(void)state;
	post_two_desc(td, 10, 32); /* 640 bytes, 20 of 256 descriptors */
	assert_int_equal(td_receive(td, 1000, 0x55), 0);
	assert_int_equal(stats(td, RXQ)->dropped, 0);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 0);
	post_two_desc(td, 10, 32);
	vnet_dev_kick(td->dev, RXQ);
	assert_int_equal(td_receive(td, 1000, 0x55), 1); /* 1012 bytes: 16 buffers */
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 16);
	assert_int_equal(stats(td, RXQ)->dropped, 0);
	td_free(td);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rx_multi_descriptor_buffers_whole_ring_too_small_drops),
		cmocka_unit_test(test_rx_multi_descriptor_buffers_wait_while_the_ring_has_room),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
