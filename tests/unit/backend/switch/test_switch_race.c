/* SPDX-License-Identifier: MIT */
/* test_switch_race.c - switch backend: a guest's other vCPU rewrites a frame between check and copy. */
#include "switch_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/guest_race.h"
#include "lib/iov.h"

/*
 * A guest with two vCPUs can rewrite a TX buffer while the switch works on it: between the
 * checks (port security, the access port's tag check, ips=) and the copy to each receiver,
 * queue, cross-worker ring or uplink. The hook of guest_race.h plays that vCPU
 * deterministically: at GUEST_RACE_TX_ADMITTED (the switch admitted the frame) or
 * GUEST_RACE_TX_FORWARD (before each copy) it writes another port's MAC, an inner VLAN tag or
 * an ARP body into the sender's buffers. Every receiver must get the bytes the checks read.
 * Built with -Dguest_race=true only (tests/unit/meson.build): elsewhere the hook is not there.
 */

/* The other vCPU: at `at`, n bytes at byte `off` of every frame queued since tx_track_reset(). */
struct race {
	enum guest_race_point at;
	size_t off, n;
	uint8_t bytes[32];
	unsigned hits;
};

static struct race race;

static void race_hook(void *ctx, enum guest_race_point point)
{
	struct race *r = ctx;

	if (point != r->at)
		return;
	r->hits++;
	for (unsigned k = 0; k < tx_ntracked; k++)
		tx_guest_write(k, r->off, r->bytes, r->n);
}

static void race_on(enum guest_race_point at, size_t off, const void *bytes, size_t n)
{
	assert_true(n <= sizeof(race.bytes));
	race = (struct race){.at = at, .off = off, .n = n};
	memcpy(race.bytes, bytes, n);
	guest_race_ctx = &race;
	guest_race_hook = race_hook;
}

static void race_off(void)
{
	guest_race_hook = NULL;
	guest_race_ctx = NULL;
}

static int race_teardown(void **state)
{
	race_off();
	return sw_teardown(state);
}

#define TR(fn) cmocka_unit_test_teardown(fn, race_teardown)

static const enum guest_race_point points[] = {GUEST_RACE_TX_ADMITTED, GUEST_RACE_TX_FORWARD};

/* A port-secured port on `worker` (its device's MAC its p->mac), with RX buffers if asked. */
static struct port *secure_port(unsigned worker, unsigned bufs)
{
	struct port *p = port_add_on(F(CTRL_MAC_ADDR), worker);
	uint8_t in[8] = {VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET};

	memcpy(in + 2, p->mac, 6);
	assert_int_equal(td_exec(p->td, in, sizeof(in)), VIRTIO_NET_OK);
	assert_int_equal(switch_port_set_security(p->be, &(struct switch_port_security){.on = true}),
			 0);
	vnet_dev_attach_backend(p->td->dev, switch_port_ops(p->be), p->be);
	if (bufs)
		rx_post(p, bufs, 1526);
	return p;
}

/* Queue frame (len bytes) on p's TX ring cut into ncuts descriptors (header with the first). */
static void queue_cut(struct port *p, const uint8_t *frame, size_t len, unsigned ncuts)
{
	uint32_t cuts[16];
	size_t left = HDR + len;

	assert_true(ncuts >= 1 && ncuts <= 16 && len >= 2 * ncuts);
	for (unsigned i = 0; i < ncuts; i++) {
		cuts[i] = i + 1 == ncuts ? (uint32_t)left : (uint32_t)(i ? 2 : HDR + 6);
		left -= cuts[i];
	}
	tx_queue_cut(p, frame, len, cuts, ncuts, false);
}

/* r's guest got exactly `want` (len bytes) as its next packet. */
static void expect_bytes(struct port *r, const uint8_t *want, size_t len)
{
	assert_int_equal(rx_take(r, NULL), HDR + len);
	assert_memory_equal(rx_out + HDR, want, len);
}

/* Every port learnt: each sends one broadcast, which the others take. */
static void all_learnt(void)
{
	for (unsigned i = 0; i < nports; i++) {
		send_from(&ports[i], mac_bcast, ports[i].mac, 60, 900 + i);
		drain_workers();
		for (unsigned j = 0; j < nports; j++)
			while (j != i && rx_pending(&ports[j]))
				rx_take(&ports[j], NULL);
	}
}

/*
 * (R1) One worker: a secure port's unicast and broadcast, as one descriptor (the burst path) and
 * cut into 2 and 12 (transmit()), while its other vCPU writes another port's MAC over the
 * source after the check or before each copy: every receiver gets the source that was checked.
 */
static void test_race_source_mac_one_worker(void **state)
{
	static const unsigned cutting[] = {1, 2, 12};
	uint8_t want[200];

	(void)state;
	sw_new_workers(1);
	struct port *a = secure_port(0, 64), *b = secure_port(0, 64), *c = secure_port(0, 64);

	all_learnt();
	for (unsigned pi = 0; pi < 2; pi++)
		for (unsigned ci = 0; ci < 3; ci++) {
			unsigned seed = 10 * pi + ci;

			tx_track_reset();
			memcpy(want, make_frame(b->mac, a->mac, sizeof(want), seed), sizeof(want));
			queue_cut(a, want, sizeof(want), cutting[ci]);
			race_on(points[pi], 6, c->mac, 6);
			tx_kick(a);
			race_off();
			assert_true(race.hits > 0);
			expect_bytes(b, want, sizeof(want));
			expect_nothing(c);

			tx_track_reset();
			memcpy(want, make_frame(mac_bcast, a->mac, sizeof(want), seed + 100), sizeof(want));
			queue_cut(a, want, sizeof(want), cutting[ci]);
			race_on(points[pi], 6, c->mac, 6);
			tx_kick(a);
			race_off();
			expect_bytes(b, want, sizeof(want));
			expect_bytes(c, want, sizeof(want));
		}
	/* A burst of four in one kick (a run to b, then a flood): each with its own source. */
	tx_track_reset();
	for (unsigned i = 0; i < 4; i++)
		tx_queue_cut(a, make_frame(i < 3 ? b->mac : mac_bcast, a->mac, 64, 200 + i), 64, NULL,
			     0, false);
	race_on(GUEST_RACE_TX_FORWARD, 6, c->mac, 6);
	tx_kick(a);
	race_off();
	for (unsigned i = 0; i < 4; i++)
		expect_bytes(b, make_frame(i < 3 ? b->mac : mac_bcast, a->mac, 64, 200 + i), 64);
	expect_bytes(c, make_frame(mac_bcast, a->mac, 64, 203), 64);
	assert_int_equal(counters(a).spoofed, 0);
	assert_int_equal(counters(c).macs, 1); /* the FDB never learnt c's MAC behind a */
	/* Rewritten before the checks (the device popped the chain): refused, nothing leaves. */
	for (unsigned cuts = 1; cuts <= 2; cuts++) {
		tx_track_reset();
		queue_cut(a, make_frame(mac_bcast, a->mac, 64, 250), 64, cuts);
		race_on(GUEST_RACE_TX_POPPED, 6, c->mac, 6);
		tx_kick(a);
		race_off();
		assert_int_equal(race.hits, 1);
		expect_nothing(b);
		expect_nothing(c);
	}
	assert_int_equal(counters(a).spoofed, 2);
	/* c's unicast still reaches c only. */
	tx_send(b, c->mac, 60, 300);
	expect_from(c, b, c->mac, 60, 300);
	expect_nothing(a);
}

/*
 * (R2) A receiver whose guest has no buffers: the frames wait in its queue (a copy) and come out
 * with the source that was checked, whatever the sender's guest wrote before the copy; unicast
 * and floods, one descriptor and two.
 */
static void test_race_receiver_queue(void **state)
{
	uint8_t want[4][120];

	(void)state;
	sw_new_workers(1);
	struct port *a = secure_port(0, 64), *b = secure_port(0, 0), *c = secure_port(0, 64);

	rx_post(b, 8, 1526);
	all_learnt(); /* b took two of its 8 buffers */
	for (unsigned i = 0; i < 4; i++)
		memcpy(want[i], make_frame(i & 1 ? mac_bcast : b->mac, a->mac, sizeof(want[i]), 40 + i),
		       sizeof(want[i]));
	/* c uses up b's buffers: a's frames queue. */
	for (unsigned i = 0; i < 6; i++)
		send_from(c, b->mac, c->mac, 60, 500 + i);
	for (unsigned i = 0; i < 4; i++) {
		tx_track_reset();
		queue_cut(a, want[i], sizeof(want[i]), 1 + (i >> 1));
		race_on(points[i & 1], 6, c->mac, 6);
		tx_kick(a);
		race_off();
	}
	assert_int_equal(switch_port_queued(b->be), 4);
	for (unsigned i = 0; i < 6; i++)
		expect_frame(b, b->mac, c->mac, 60, 500 + i);
	rx_post(b, 8, 1526);
	for (unsigned i = 0; i < 4; i++)
		expect_bytes(b, want[i], sizeof(want[i]));
	expect_bytes(c, want[1], sizeof(want[1]));
	expect_bytes(c, want[3], sizeof(want[3]));
	assert_int_equal(counters(a).spoofed, 0);
}

/*
 * (R3) Two workers: a's unicast to a port of the other worker goes through the cross-worker ring,
 * its broadcast to its own worker's port at once and to the other worker as one copy; the
 * other vCPU writes c's MAC over the source before each copy (or right after the check): every
 * receiver on both workers gets a's.
 */
static void test_race_cross_worker(void **state)
{
	uint8_t want[300];

	(void)state;
	sw_new_workers(2);
	struct port *a = secure_port(0, 64), *b = secure_port(1, 64), *c = secure_port(1, 64),
		    *d = secure_port(0, 64);

	all_learnt();
	for (unsigned pi = 0; pi < 2; pi++)
		for (unsigned cuts = 1; cuts <= 2; cuts++) {
			unsigned seed = 10 * pi + cuts;

			tx_track_reset();
			memcpy(want, make_frame(b->mac, a->mac, sizeof(want), seed), sizeof(want));
			queue_cut(a, want, sizeof(want), cuts);
			race_on(points[pi], 6, c->mac, 6);
			tx_kick(a);
			race_off();
			drain_workers();
			expect_bytes(b, want, sizeof(want));
			expect_nothing(c);
			expect_nothing(d);

			tx_track_reset();
			memcpy(want, make_frame(mac_bcast, a->mac, sizeof(want), seed + 50), sizeof(want));
			queue_cut(a, want, sizeof(want), cuts);
			race_on(points[pi], 6, c->mac, 6);
			tx_kick(a);
			race_off();
			drain_workers();
			expect_bytes(b, want, sizeof(want));
			expect_bytes(c, want, sizeof(want));
			expect_bytes(d, want, sizeof(want));
		}
	assert_true(switch_port_crossed(a->be) >= 8);
	assert_int_equal(counters(a).spoofed, 0);
}

/* What the test uplink got: its frames, in order. */
static uint8_t up_frames[8][128];
static size_t up_len[8];
static unsigned up_n;

static void up_deliver(void *ctx, const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
		       unsigned iovcnt, size_t off, size_t len)
{
	(void)ctx;
	assert_null(hdr); /* no offloads here */
	assert_true(up_n < 8 && len <= sizeof(up_frames[0]));
	up_len[up_n] = iov_copy_from(iov, iovcnt, off, up_frames[up_n], len);
	up_n++;
}

static const struct switch_uplink_ops up_ops = {.deliver = up_deliver};

/*
 * (R4)'s send: a's untagged IPv4 frame of 100 bytes for dst (into want) in `cuts` pieces, while
 * the other vCPU writes evil (b's MAC and an 802.1Q tag) over its source MAC at `at`: the uplink
 * gets it once, as checked.
 */
static void untagged_raced(struct port *a, const uint8_t *dst, unsigned seed, unsigned cuts,
			   enum guest_race_point at, const uint8_t evil[8], uint8_t want[100])
{
	memcpy(want, make_frame(dst, a->mac, 100, seed), 100);
	want[12] = 0x08, want[13] = 0x00; /* IPv4's EtherType: untagged */
	want[14] = 0x00, want[15] = 0x14; /* tagged, these would say VLAN 20 */
	up_n = 0;
	tx_track_reset();
	queue_cut(a, want, 100, cuts);
	race_on(at, 6, evil, 8);
	tx_kick(a);
	race_off();
	assert_int_equal(up_n, 1);
	assert_int_equal(up_len[0], 100);
	assert_memory_equal(up_frames[0], want, 100);
}

/*
 * (R4) Access ports (vlan=N) and an uplink (a tap trunk's side): an access port's untagged frame
 * whose guest writes an 802.1Q tag (and another port's MAC) into it after the tag check must
 * not leave tagged: the trunk would carry it double-tagged into VLAN 20. The uplink and the
 * other access port get the frame as checked, flooded and as unicast to a MAC behind the
 * uplink.
 */
static void test_race_inner_tag_on_access_port(void **state)
{
	static const uint8_t far[6] = {0x02, 0, 0, 0, 0, 0xf0};
	uint8_t want[100], evil[8];
	struct vnet_backend *up;

	(void)state;
	up_n = 0;
	sw_new_workers(1);
	struct port *a = secure_port(0, 64), *b = secure_port(0, 64);

	for (unsigned i = 0; i < 2; i++) {
		switch_port_set_access(ports[i].be, true);
		vnet_dev_attach_backend(ports[i].td->dev, switch_port_ops(ports[i].be), ports[i].be);
	}
	up = switch_attach_uplink(sw, "p9.vlan10", 0, &up_ops, NULL);
	assert_non_null(up);
	memcpy(want, make_frame(mac_bcast, far, 64, 1), 64);
	switch_uplink_send(up, NULL, want, 64); /* far learnt behind the uplink */
	pump();
	expect_bytes(a, want, 64);
	expect_bytes(b, want, 64);
	memcpy(evil, b->mac, 6);
	evil[6] = 0x81, evil[7] = 0x00; /* 802.1Q: the frame's next two bytes its tag */
	for (unsigned pi = 0; pi < 2; pi++)
		for (unsigned cuts = 1; cuts <= 2; cuts++) {
			unsigned seed = 10 * pi + cuts;

			untagged_raced(a, mac_bcast, seed, cuts, points[pi], evil, want);
			expect_bytes(b, want, sizeof(want));
			untagged_raced(a, far, seed + 50, cuts, points[pi], evil, want);
			expect_nothing(b);
		}
	assert_int_equal(counters(a).tagged_dropped, 0);
	assert_int_equal(counters(a).spoofed, 0);
	switch_detach(up);
}

static uint8_t body[600]; /* the ARP / IPv6 frame being built */

/* An ARP reply from p's MAC, broadcast: sender MAC p's, sender IP 10.0.0.1. */
static size_t arp_reply(const struct port *p)
{
	memset(body, 0, sizeof(body));
	memset(body, 0xff, 6);
	memcpy(body + 6, p->mac, 6);
	body[12] = 0x08, body[13] = 0x06;
	body[14 + 1] = 1, body[14 + 2] = 0x08, body[14 + 4] = 6, body[14 + 5] = 4, body[14 + 7] = 2;
	memcpy(body + 14 + 8, p->mac, 6);
	body[14 + 14] = 10, body[14 + 17] = 1;
	body[14 + 24] = 10, body[14 + 27] = 254;
	return 60;
}

/*
 * An IPv6 frame from p's MAC to all nodes: next header nh (58: a neighbour advertisement with
 * `pad` 8-byte padding options, then a target link-layer address option holding tlla); its
 * length.
 */
static size_t ipv6_na(const struct port *p, unsigned nh, unsigned pad, const uint8_t *tlla)
{
	size_t o = 14 + 40 + 24;

	memset(body, 0, sizeof(body));
	body[0] = 0x33, body[1] = 0x33, body[5] = 1;
	memcpy(body + 6, p->mac, 6);
	body[12] = 0x86, body[13] = 0xdd;
	body[14] = 0x60, body[14 + 6] = (uint8_t)nh, body[14 + 7] = 255;
	body[14 + 8] = 0xfe, body[14 + 9] = 0x80, body[14 + 23] = 1;
	body[14 + 24] = 0xff, body[14 + 25] = 0x02, body[14 + 39] = 1;
	body[54] = 136;
	for (unsigned i = 0; i < pad; i++, o += 8)
		body[o] = 99, body[o + 1] = 1;
	body[o] = 2, body[o + 1] = 1;
	memcpy(body + o + 2, tlla, 6);
	o += 8;
	body[14 + 4] = (uint8_t)((o - 54) >> 8), body[14 + 5] = (uint8_t)(o - 54);
	assert_true(o <= sizeof(body));
	return o;
}

/* a sends body (len bytes) in `cuts` descriptors while the other vCPU writes evil at off. */
static void race_send(struct port *a, size_t len, unsigned cuts, enum guest_race_point at,
		      size_t off, const void *evil, size_t n)
{
	tx_track_reset();
	queue_cut(a, body, len, cuts);
	race_on(at, off, evil, n);
	tx_kick(a);
	race_off();
	drain_workers();
}

/*
 * (R5) What port security and ips= read inside a frame is what leaves: an ARP reply whose sender
 * MAC and IP the other vCPU rewrites (to another port's MAC, to an address outside ips=); an
 * IPv6 UDP frame whose next header it turns into ICMPv6 (so that its body reads as a neighbour
 * advertisement for another port's MAC); a neighbour advertisement longer than the switch's
 * copy of a frame's head, whose target address at the end it rewrites. On nworkers workers, b
 * on the last.
 */
static void race_arp_nd_and_ips(unsigned nworkers)
{
	static const uint8_t net1[4] = {10, 0, 0, 1};
	struct switch_ip_net nets[1] = {{.v6 = false, .prefix = 32}};
	uint8_t want[sizeof(body)], evil[10];
	size_t len;

	memcpy(nets[0].addr, net1, 4);
	sw_new_workers(nworkers);
	struct port *a = secure_port(0, 64), *b = secure_port(nworkers - 1, 64),
		    *c = secure_port(0, 64);

	all_learnt();
	memcpy(evil, c->mac, 6);
	memcpy(evil + 6, (const uint8_t[4]){10, 0, 0, 9}, 4);
	for (unsigned ips = 0; ips < 2; ips++) {
		if (ips) {
			assert_int_equal(switch_port_set_ips(a->be, nets, 1), 0);
			vnet_dev_attach_backend(a->td->dev, switch_port_ops(a->be), a->be);
		}
		for (unsigned pi = 0; pi < 2; pi++)
			for (unsigned cuts = 1; cuts <= 2; cuts++) {
				len = arp_reply(a);
				memcpy(want, body, len);
				race_send(a, len, cuts, points[pi], 14 + 8, evil, sizeof(evil));
				expect_bytes(b, want, len);
				expect_bytes(c, want, len);
			}
	}
	assert_int_equal(counters(a).arp_nd_spoofed + counters(a).ip_spoofed, 0);
	assert_int_equal(switch_port_set_ips(a->be, nets, 0), 0);
	vnet_dev_attach_backend(a->td->dev, switch_port_ops(a->be), a->be);
	for (unsigned pi = 0; pi < 2; pi++)
		for (unsigned cuts = 1; cuts <= 2; cuts++) {
			/* UDP that reads as an NA for c's MAC once its next header says ICMPv6 */
			len = ipv6_na(a, 17, 0, c->mac);
			memcpy(want, body, len);
			race_send(a, len, cuts, points[pi], 14 + 6, (const uint8_t[1]){58}, 1);
			expect_bytes(b, want, len);
			expect_bytes(c, want, len);
			/* 40 padding options: the whole frame is read, and forwarded from that copy */
			len = ipv6_na(a, 58, 40, a->mac);
			assert_true(len > 256);
			memcpy(want, body, len);
			race_send(a, len, cuts, points[pi], len - 6, c->mac, 6);
			expect_bytes(b, want, len);
			expect_bytes(c, want, len);
		}
	assert_int_equal(counters(a).arp_nd_spoofed, 0);
}

static void test_race_arp_nd_and_ips_one_worker(void **state)
{
	(void)state;
	race_arp_nd_and_ips(1);
}

static void test_race_arp_nd_and_ips_two_workers(void **state)
{
	(void)state;
	race_arp_nd_and_ips(2);
}

/*
 * (R6) A frame in several pieces: the rest behind its checked header in 4 (forwarded in place),
 * or in more than the switch forwards in place (12 descriptors through an indirect table, 40:
 * copied whole first) arrives byte-exact with the header that was checked, on both workers.
 */
static void test_race_many_pieces(void **state)
{
	static const unsigned counts[] = {4, 12, 40};
	uint8_t want[400];
	uint32_t cuts[40];

	(void)state;
	sw_new_workers(2);
	struct port *a = secure_port(0, 64), *b = secure_port(1, 64), *c = secure_port(0, 64);

	all_learnt();
	for (unsigned k = 0; k < 3; k++) {
		unsigned n = counts[k];
		size_t left = HDR + sizeof(want);

		for (unsigned i = 0; i < n; i++) {
			uint32_t piece = n == 4 ? (i ? 30u : HDR + 20u) : (i ? 3u : HDR + 5u);

			cuts[i] = i + 1 == n ? (uint32_t)left : piece;
			left -= cuts[i];
		}
		memcpy(want, make_frame(mac_bcast, a->mac, sizeof(want), n), sizeof(want));
		tx_track_reset();
		tx_queue_cut(a, want, sizeof(want), cuts, n, n == 12);
		race_on(GUEST_RACE_TX_FORWARD, 6, c->mac, 6);
		tx_kick(a);
		race_off();
		drain_workers();
		expect_bytes(b, want, sizeof(want));
		expect_bytes(c, want, sizeof(want));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TR(test_race_source_mac_one_worker),
	    TR(test_race_receiver_queue),
	    TR(test_race_cross_worker),
	    TR(test_race_inner_tag_on_access_port),
	    TR(test_race_arp_nd_and_ips_one_worker),
	    TR(test_race_arp_nd_and_ips_two_workers),
	    TR(test_race_many_pieces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
