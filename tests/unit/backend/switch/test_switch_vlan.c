/* SPDX-License-Identifier: MIT */
/* test_switch_vlan.c - switch backend: access ports (vlan=N) and uplinks (a tap trunk's VLAN). */
#include "switch_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/iov.h"

/*
 * (26) An access port (vlan=N): frames its guest sends with an 802.1Q, 802.1ad or 0x9100 tag
 * are dropped and counted, never forwarded, flooded or learnt (no double tagging); its
 * untagged frames go as before, and a plain port's tagged frames are not its business.
 */
static void test_access_port_drops_tagged_frames(void **state)
{
	static const uint16_t tpids[] = {0x8100, 0x88a8, 0x9100};
	struct port *a = &ports[0], *b = &ports[1], *c = &ports[2];
	uint8_t tagged[64];

	(void)state;
	sw_up(3, 64);
	switch_port_set_access(a->be, true);
	vnet_dev_attach_backend(a->td->dev, switch_port_ops(a->be), a->be);
	assert_int_equal(counters(a).access, 1);
	assert_int_equal(counters(b).access, 0);
	tx_send(b, mac_bcast, 60, 1); /* b learnt */
	expect_from(a, b, mac_bcast, 60, 1);
	expect_from(c, b, mac_bcast, 60, 1);
	for (unsigned i = 0; i < 3; i++) {
		memcpy(tagged, make_frame(i ? b->mac : mac_bcast, a->mac, sizeof(tagged), 10 + i),
		       sizeof(tagged));
		tagged[12] = (uint8_t)(tpids[i] >> 8);
		tagged[13] = (uint8_t)tpids[i];
		tagged[14] = 0x00; /* VID 10 */
		tagged[15] = 0x0a;
		tx_queue_cut(a, tagged, sizeof(tagged), NULL, 0, false);
		tx_kick(a);
	}
	expect_nothing(b);
	expect_nothing(c);
	assert_int_equal(counters(a).tagged_dropped, 3);
	assert_int_equal(counters(a).macs, 0); /* never learnt */
	assert_int_equal(forwarded(a) + flooded(a), 0);
	/* Untagged: as from any port, byte-exact. */
	tx_send(a, b->mac, 64, 20);
	expect_from(b, a, b->mac, 64, 20);
	tx_send(a, mac_bcast, 60, 21);
	expect_from(b, a, mac_bcast, 60, 21);
	expect_from(c, a, mac_bcast, 60, 21);
	assert_int_equal(counters(a).tagged_dropped, 3);
	/*
	 * A plain port's tagged frame goes through (it is not an access port; in vnetd a VLAN's
	 * domain holds its access ports only, so none reaches them).
	 */
	memcpy(tagged, make_frame(mac_bcast, b->mac, sizeof(tagged), 30), sizeof(tagged));
	tagged[12] = 0x81;
	tagged[13] = 0x00;
	tx_queue_cut(b, tagged, sizeof(tagged), NULL, 0, false);
	tx_kick(b);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(rx_take(i ? c : a, NULL), HDR + sizeof(tagged));
		assert_memory_equal(rx_out + HDR, tagged, sizeof(tagged));
	}
	assert_int_equal(counters(b).tagged_dropped, 0);
	/* Plain again. */
	switch_port_set_access(a->be, false);
	vnet_dev_attach_backend(a->td->dev, switch_port_ops(a->be), a->be);
	assert_int_equal(counters(a).access, 0);
}

/* What the test uplink was given: its frames, in order, and how many. */
static uint8_t up_frames[4][128];
static size_t up_len[4];
static unsigned up_n;

static void up_deliver(void *ctx, const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
		       unsigned iovcnt, size_t off, size_t len)
{
	(void)ctx;
	assert_null(hdr); /* no offloads here */
	assert_true(up_n < 4 && len <= sizeof(up_frames[0]));
	up_len[up_n] = iov_copy_from(iov, iovcnt, off, up_frames[up_n], len);
	up_n++;
}

static const struct switch_uplink_ops up_ops = {.deliver = up_deliver};

/*
 * (27) An uplink (a tap trunk's side of a VLAN) in a switch of access ports: it gets their
 * floods and their unicast to a MAC learnt behind it, byte-exact; what it sends is learnt and
 * reaches the ports as from any port.
 */
static void test_uplink_in_a_vlan(void **state)
{
	static const uint8_t far[6] = {0x02, 0, 0, 0, 0, 0xf0};
	struct port *a = &ports[0], *b = &ports[1];
	struct vnet_backend *up;
	uint8_t frame[80];

	(void)state;
	up_n = 0;
	sw_up(2, 64);
	for (unsigned i = 0; i < 2; i++) {
		switch_port_set_access(ports[i].be, true);
		vnet_dev_attach_backend(ports[i].td->dev, switch_port_ops(ports[i].be), ports[i].be);
	}
	up = switch_attach_uplink(sw, "p9.vlan10", 0, &up_ops, NULL);
	assert_non_null(up);
	tx_send(a, mac_bcast, 60, 1);
	expect_from(b, a, mac_bcast, 60, 1);
	assert_int_equal(up_n, 1);
	assert_int_equal(up_len[0], 60);
	assert_memory_equal(up_frames[0], make_frame(mac_bcast, a->mac, 60, 1), 60);
	memcpy(frame, make_frame(mac_bcast, far, sizeof(frame), 2), sizeof(frame));
	switch_uplink_send(up, NULL, frame, sizeof(frame)); /* far learnt behind the uplink */
	pump();
	expect_frame(a, mac_bcast, far, sizeof(frame), 2);
	expect_frame(b, mac_bcast, far, sizeof(frame), 2);
	assert_int_equal(up_n, 1); /* not back to itself */
	tx_send(b, far, 64, 3);
	expect_nothing(a);
	assert_int_equal(up_n, 2);
	assert_memory_equal(up_frames[1], make_frame(far, b->mac, 64, 3), 64);
	memcpy(frame, make_frame(a->mac, far, 64, 4), 64);
	switch_uplink_send(up, NULL, frame, 64); /* unicast to a: a only */
	pump();
	expect_frame(a, a->mac, far, 64, 4);
	expect_nothing(b);
	switch_detach(up);
	tx_send(b, far, 64, 5); /* forgotten with the uplink: floods to a now */
	expect_from(a, b, far, 64, 5);
	assert_int_equal(up_n, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_access_port_drops_tagged_frames),
	    T(test_uplink_in_a_vlan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
