/* SPDX-License-Identifier: MIT */
/* test_ctrl_layout.c - control queue writable part: ack first, then the result; used length. */
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

/*
 * Spec (struct virtio_net_ctrl): class, command, command-specific-data, then the device-written
 * ack followed by command-specific-result. Linux's virtnet_send_command_reply() adds the status
 * sg before the result sg; QEMU writes the ack at offset 0 of the writable part and reports the
 * bytes it wrote as the used length.
 */

static struct test_dev *dev_with(uint64_t extra)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | extra);

	assert_int_equal(td->features & extra, extra);
	return td;
}

/*
 * A command with a writable area of the given descriptor lengths, carved from one 0xee-filled
 * allocation (*area points at its first byte). Returns the ack byte (area[0]) or -1.
 */
static int ctrl_area(struct test_dev *td, const uint8_t *in, size_t in_len, const uint32_t *wlens,
		     unsigned nw, uint8_t **area, uint32_t *used_len)
{
	struct fake_vq *q = &td->vq[td->ctrl_q];
	struct fake_buf b[4];
	uint32_t total = 0, id;
	uint64_t gpa;
	int head;

	assert_true(nw >= 1 && nw < 4);
	b[0].gpa = fake_mem_alloc(&td->mem, in_len, 8);
	b[0].len = (uint32_t)in_len;
	b[0].write = false;
	memcpy(fake_mem_host(&td->mem, b[0].gpa), in, in_len);
	for (unsigned i = 0; i < nw; i++)
		total += wlens[i];
	gpa = fake_mem_alloc(&td->mem, total, 8);
	*area = fake_mem_host(&td->mem, gpa);
	memset(*area, 0xee, total);
	for (unsigned i = 0; i < nw; i++) {
		b[1 + i].gpa = gpa;
		b[1 + i].len = wlens[i];
		b[1 + i].write = true;
		gpa += wlens[i];
	}
	head = fake_vq_add_chain(q, b, 1 + nw);
	fake_vq_publish(q);
	vnet_dev_kick(td->dev, td->ctrl_q);
	if (!fake_vq_get_used(q, &id, used_len) || id != (uint32_t)head)
		return -1;
	return (*area)[0];
}

static void assert_untouched(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		assert_int_equal(p[i], 0xee);
}

static void test_ctrl_ack_is_first_writable_byte_and_used_len_counts_it_only(void **state)
{
	struct test_dev *td = dev_with(0);
	uint8_t in[10] = {VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_TX_SET};
	const uint32_t big[1] = {64}, two[2] = {1, 63};
	uint32_t used_len = 0;
	uint8_t *area;

	(void)state;
	/* QEMU: ack at offset 0 of the writable part, used len = the one byte written. */
	assert_int_equal(ctrl_area(td, in, sizeof(in), big, 1, &area, &used_len), VIRTIO_NET_OK);
	assert_int_equal(used_len, 1);
	assert_untouched(area + 1, 63);
	assert_int_equal(ctrl_area(td, in, sizeof(in), two, 2, &area, &used_len), VIRTIO_NET_OK);
	assert_int_equal(used_len, 1);
	assert_untouched(area + 1, 63);
	/* An ERR answer is one byte too. */
	in[0] = 0x77;
	assert_int_equal(ctrl_area(td, in, sizeof(in), big, 1, &area, &used_len), VIRTIO_NET_ERR);
	assert_int_equal(used_len, 1);
	assert_untouched(area + 1, 63);
	td_free(td);
}

static void test_ctrl_result_follows_the_ack_and_used_len_counts_both(void **state)
{
	struct test_dev *td = dev_with(BIT_ULL(VIRTIO_NET_F_VQ_NOTF_COAL));
	uint8_t in[6] = {VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET};
	const uint32_t one[1] = {9}, big[1] = {64}, split[3] = {1, 3, 60}, ack_only[1] = {1};
	uint32_t used_len = 0;
	uint8_t *area;

	(void)state;
	assert_int_equal(td_vq_set(td, 1, 11, 222), VIRTIO_NET_OK);
	put_le16(in + 2, 1);
	/* One 9-byte descriptor, an oversized one, and a result split across descriptors. */
	assert_int_equal(ctrl_area(td, in, sizeof(in), one, 1, &area, &used_len), VIRTIO_NET_OK);
	assert_int_equal(used_len, 9);
	assert_int_equal(get_le32(area + 1), 11);
	assert_int_equal(get_le32(area + 5), 222);
	assert_int_equal(ctrl_area(td, in, sizeof(in), big, 1, &area, &used_len), VIRTIO_NET_OK);
	assert_int_equal(used_len, 9);
	assert_int_equal(get_le32(area + 1), 11);
	assert_int_equal(get_le32(area + 5), 222);
	assert_untouched(area + 9, 55);
	assert_int_equal(ctrl_area(td, in, sizeof(in), split, 3, &area, &used_len), VIRTIO_NET_OK);
	assert_int_equal(used_len, 9);
	assert_int_equal(get_le32(area + 1), 11);
	assert_int_equal(get_le32(area + 5), 222);
	assert_untouched(area + 9, 55);
	/* No room for the result: ERR, and only the ack byte is written. */
	assert_int_equal(ctrl_area(td, in, sizeof(in), ack_only, 1, &area, &used_len),
			 VIRTIO_NET_ERR);
	assert_int_equal(used_len, 1);
	td_free(td);
}

#define T(fn) cmocka_unit_test_teardown(fn, td_cleanup)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_ctrl_ack_is_first_writable_byte_and_used_len_counts_it_only),
	    T(test_ctrl_result_follows_the_ack_and_used_len_counts_both),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
