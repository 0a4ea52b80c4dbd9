/* SPDX-License-Identifier: MIT */
/* switch_fixture.c - the switch unit tests' ports, frames, guests and expectations. */
#include "switch_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/iov.h"

struct vnet_switch *sw;

/* The switch's learning clock (switch_set_clock()); sw_new() starts it at 1000 s. */
uint64_t clock_ns;

void clock_advance(uint64_t sec)
{
	clock_ns += sec * NS;
	switch_set_clock(sw, clock_ns);
}

/* ---- Ports: a test device attached to the switch, and its guest's RX buffers ---- */

struct port ports[MAX_PORTS];
unsigned nports;
uint8_t rx_out[BIG + 4096], frame_buf[BIG];

/* A guest header the switch must not pass on: everything but flags and gso_type non-zero. */
void tx_header(uint8_t *h)
{
	memset(h, 0, HDR);
	put_le16(h + 2, 54);   /* hdr_len */
	put_le16(h + 4, 1448); /* gso_size */
	put_le16(h + 6, 34);   /* csum_start */
	put_le16(h + 8, 16);   /* csum_offset */
	put_le16(h + 10, 7);   /* num_buffers */
}

void sw_new(void)
{
	sw = switch_create(1, NULL, NULL);
	assert_non_null(sw);
	nports = 0;
	tx_ntracked = 0;
	clock_ns = 1000 * NS;
	switch_set_clock(sw, clock_ns);
}

/* Port i: a new device with `features`, attached to the switch, MAC 02:00:00:00:00:a<i>. */
struct port *port_add(uint64_t features)
{
	static const char *const names[MAX_PORTS] = {"a", "b", "c", "d", "e"};
	struct port *p = &ports[nports];

	assert_true(nports < MAX_PORTS);
	memset(p, 0, sizeof(*p));
	p->td = td_new(1, TD_BASE_FEATURES | features);
	assert_int_equal(p->td->features & features, features);
	p->be = switch_attach(sw, p->td->dev, names[nports], 0);
	assert_non_null(p->be);
	vnet_dev_attach_backend(p->td->dev, &switch_backend_ops, p->be);
	memcpy(p->mac, (const uint8_t[6]){0x02, 0, 0, 0, 0, (uint8_t)(0xa0 + nports)}, 6);
	nports++;
	return p;
}

/* ---- A switch over several workers, one thread playing them all ---- */

static void wake_none(void *ctx, unsigned worker)
{
	(void)ctx;
	(void)worker; /* drain_workers() looks at every worker anyway */
}

static const struct switch_owner_ops wake_ops = {.wake = wake_none};

void sw_new_workers(unsigned nworkers)
{
	sw = switch_create(nworkers, &wake_ops, NULL);
	assert_non_null(sw);
	nports = 0;
	tx_ntracked = 0;
	clock_ns = 1000 * NS;
	switch_set_clock(sw, clock_ns);
}

/* port_add() on worker `worker`, with the ops table switch_port_ops() picks. */
struct port *port_add_on(uint64_t features, unsigned worker)
{
	static const char *const names[MAX_PORTS] = {"a", "b", "c", "d", "e"};
	struct port *p = &ports[nports];

	assert_true(nports < MAX_PORTS);
	memset(p, 0, sizeof(*p));
	p->td = td_new(1, TD_BASE_FEATURES | features);
	p->be = switch_attach(sw, p->td->dev, names[nports], worker);
	assert_non_null(p->be);
	vnet_dev_attach_backend(p->td->dev, switch_port_ops(p->be), p->be);
	memcpy(p->mac, (const uint8_t[6]){0x02, 0, 0, 0, 0, (uint8_t)(0xa0 + nports)}, 6);
	nports++;
	return p;
}

/*
 * port_add_on() whose guest negotiates `features` against the switch port's own offer (its
 * offloads: CSUM, HOST_/GUEST_TSO4/6, ECN), not the test backend's: the device is reset and
 * its queues started again behind the switch.
 */
struct port *port_add_offloads(uint64_t features, unsigned worker)
{
	struct port *p = port_add_on(0, worker);

	td_recycle(p->td, TD_BASE_FEATURES | features);
	assert_int_equal(p->td->features & features, features);
	td_start_queues(p->td, QSIZE);
	return p;
}

/* Every worker ends its round and places what the others queued for it, until none is left. */
void drain_workers(void)
{
	for (unsigned w = 0; w < SWITCH_MAX_WORKERS; w++)
		switch_worker_round_end(sw, w);
	for (unsigned w = 0; w < SWITCH_MAX_WORKERS; w++)
		while (switch_worker_rx(sw, w))
			;
	pump();
}

void port_detach(struct port *p)
{
	switch_detach(p->be);
	p->be = NULL;
	vnet_dev_attach_backend(p->td->dev, NULL, NULL);
}

int sw_teardown(void **state)
{
	switch_destroy(sw); /* detaches what is left; the devices are freed after */
	sw = NULL;
	nports = 0;
	td_mem_size = 4u << 20;
	return td_cleanup(state);
}

/* Run what the devices scheduled, then publish RX, as the event loop does after events. */
void pump(void)
{
	for (bool more = true; more;) {
		more = false;
		for (unsigned i = 0; i < nports; i++)
			if (td_run_scheduled(ports[i].td))
				more = true;
	}
	for (unsigned i = 0; i < nports; i++)
		vnet_dev_rx_flush(ports[i].td->dev);
}

/* ---- Frames ---- */

/* An Ethernet frame of len bytes (len >= 12): dst, src, ethertype 0x88b5, a seeded pattern. */
const uint8_t *make_frame(const uint8_t *dst, const uint8_t *src, size_t len, unsigned seed)
{
	memcpy(frame_buf, dst, 6);
	memcpy(frame_buf + 6, src, 6);
	for (size_t i = 12; i < len; i++)
		frame_buf[i] = (uint8_t)(seed * 37 + i * 11 + 1);
	if (len >= 14) {
		frame_buf[12] = 0x88;
		frame_buf[13] = 0xb5;
	}
	if (len >= 16) { /* the seed itself, so a reordering shows as a clear mismatch */
		frame_buf[14] = (uint8_t)seed;
		frame_buf[15] = (uint8_t)(seed >> 8);
	}
	return frame_buf;
}

/*
 * Queue header + frame on p's TX ring as descriptors of the lengths in cuts (NULL: one
 * descriptor), directly or through one indirect table. No publish, no kick.
 */
void tx_queue_cut(struct port *p, const uint8_t *frame, size_t len, const uint32_t *cuts,
			 unsigned ncuts, bool indirect)
{
	tx_queue_hdr_cut(p, NULL, frame, len, cuts, ncuts, indirect);
}

/* tx_queue_cut() behind the guest's header h (NULL: tx_header()'s, which asks for no offload). */
void tx_queue_hdr_cut(struct port *p, const struct virtio_net_hdr_v1 *h, const uint8_t *frame,
		      size_t len, const uint32_t *cuts, unsigned ncuts, bool indirect)
{
	struct test_dev *td = p->td;
	struct fake_buf b[FAKE_MAX_CHAIN];
	uint32_t one = (uint32_t)(HDR + len);
	uint8_t *pkt = malloc(HDR + len);
	size_t off = 0;

	assert_non_null(pkt);
	while (fake_vq_get_used(&td->vq[TXQ], NULL, NULL))
		; /* reclaim finished chains */
	if (h)
		memcpy(pkt, h, HDR);
	else
		tx_header(pkt);
	memcpy(pkt + HDR, frame, len);
	if (!cuts) {
		cuts = &one;
		ncuts = 1;
	}
	assert_true(ncuts <= FAKE_MAX_CHAIN);
	for (unsigned i = 0; i < ncuts; i++) {
		b[i].gpa = fake_mem_alloc(&td->mem, cuts[i], 8);
		b[i].len = cuts[i];
		b[i].write = false;
		memcpy(fake_mem_host(&td->mem, b[i].gpa), pkt + off, cuts[i]);
		off += cuts[i];
	}
	assert_int_equal(off, HDR + len);
	if (tx_ntracked < TX_TRACK) {
		struct tx_tracked *t = &tx_tracked[tx_ntracked++];

		for (unsigned i = 0; i < ncuts; i++) {
			t->host[i] = fake_mem_host(&td->mem, b[i].gpa);
			t->len[i] = cuts[i];
		}
		t->n = ncuts;
	}
	if (indirect)
		fake_vq_add_indirect(&td->vq[TXQ], b, ncuts);
	else
		fake_vq_add_chain(&td->vq[TXQ], b, ncuts);
	free(pkt);
}

/* ---- Guest memory the tests' "other vCPU" rewrites ---- */

struct tx_tracked tx_tracked[TX_TRACK];
unsigned tx_ntracked;

/* Forget the frames queued so far (tx_queue_cut() tracks each from now on). */
void tx_track_reset(void)
{
	tx_ntracked = 0;
}

/* Write n bytes at byte frame_off of tracked frame k, in its guest's buffers (wherever cut). */
void tx_guest_write(unsigned k, size_t frame_off, const void *bytes, size_t n)
{
	const struct tx_tracked *t = &tx_tracked[k];
	const uint8_t *src = bytes;
	size_t at = HDR + frame_off, c;

	assert_true(k < tx_ntracked);
	for (unsigned i = 0; i < t->n && n; i++) {
		if (at >= t->len[i]) {
			at -= t->len[i];
			continue;
		}
		c = t->len[i] - at < n ? t->len[i] - at : n;
		memcpy(t->host[i] + at, src, c);
		src += c;
		n -= c;
		at = 0;
	}
	assert_int_equal(n, 0);
}

void tx_kick(struct port *p)
{
	fake_vq_publish(&p->td->vq[TXQ]);
	vnet_dev_kick(p->td->dev, TXQ);
	pump();
}

/* p sends one frame from `src` to `dst` (one descriptor) and kicks. */
void send_from(struct port *p, const uint8_t *dst, const uint8_t *src, size_t len,
		      unsigned seed)
{
	tx_queue_cut(p, make_frame(dst, src, len, seed), len, NULL, 0, false);
	tx_kick(p);
}

/* p sends frame (len bytes, one descriptor) behind the guest's header h, and kicks. */
void tx_send_hdr(struct port *p, const struct virtio_net_hdr_v1 *h, const uint8_t *frame,
		 size_t len)
{
	tx_queue_hdr_cut(p, h, frame, len, NULL, 0, false);
	tx_kick(p);
}

void tx_send(struct port *p, const uint8_t *dst, size_t len, unsigned seed)
{
	send_from(p, dst, p->mac, len, seed);
}

/* n frames from p to dst (seeds first..), kicked in batches that fit the TX ring. */
void send_many(struct port *p, const uint8_t *dst, size_t len, unsigned first, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		tx_queue_cut(p, make_frame(dst, p->mac, len, first + i), len, NULL, 0, false);
		if (i % 100 == 99 || i + 1 == n)
			tx_kick(p);
	}
}

/* ---- The receiving guest ---- */

/* Post n writable buffers of `size` bytes (0xcc-filled) on p's RX ring; kick if asked. */
void rx_post_kick(struct port *p, unsigned n, uint32_t size, bool kick)
{
	struct test_dev *td = p->td;

	for (unsigned i = 0; i < n; i++) {
		struct fake_buf b = {fake_mem_alloc(&td->mem, size, 8), size, true};
		int head;

		memset(fake_mem_host(&td->mem, b.gpa), 0xcc, size);
		head = fake_vq_add_chain(&td->vq[RXQ], &b, 1);
		p->rx_gpa[head] = b.gpa;
		p->rx_cap[head] = size;
	}
	fake_vq_publish(&td->vq[RXQ]);
	if (!kick)
		return;
	vnet_dev_kick(td->dev, RXQ);
	pump();
}

void rx_post(struct port *p, unsigned n, uint32_t size)
{
	rx_post_kick(p, n, size, true);
}

/* A switch with n plain ports, each with bufs RX buffers of 1526 bytes posted. */
void sw_up(unsigned n, unsigned bufs)
{
	sw_new();
	for (unsigned i = 0; i < n; i++)
		port_add(0);
	for (unsigned i = 0; bufs && i < n; i++)
		rx_post(&ports[i], bufs, 1526);
}

bool rx_pending(const struct port *p)
{
	const struct fake_vq *q = &p->td->vq[RXQ];

	return fake_vq_used_idx(q) != q->last_used;
}

/* One used buffer of p's RX ring appended to rx_out at *at; its num_buffers field if first. */
void rx_take_one(struct port *p, size_t *at)
{
	uint32_t id, len;
	const uint8_t *buf;

	assert_true(fake_vq_get_used(&p->td->vq[RXQ], &id, &len));
	assert_true(id < QSIZE);
	assert_true(len <= p->rx_cap[id]);
	assert_true(*at + len <= sizeof(rx_out));
	buf = fake_mem_host(&p->td->mem, p->rx_gpa[id]);
	memcpy(rx_out + *at, buf, len);
	if (len < p->rx_cap[id])
		assert_int_equal(buf[len], 0xcc); /* nothing written past the packet */
	*at += len;
}

/* The next packet p's guest got (header + frame, reassembled into rx_out); its length. */
size_t rx_take(struct port *p, unsigned *nbufs)
{
	size_t at = 0;
	unsigned n;

	assert_true(rx_pending(p));
	rx_take_one(p, &at);
	assert_true(at >= HDR);
	n = get_le16(rx_out + 10);
	if (!(p->td->features & F(MRG_RXBUF)))
		assert_int_equal(n, 1);
	assert_true(n >= 1);
	for (unsigned i = 1; i < n; i++)
		rx_take_one(p, &at);
	if (nbufs)
		*nbufs = n;
	return at;
}

/* p's guest got exactly this frame, behind a header that is zero but for num_buffers. */
unsigned expect_frame(struct port *p, const uint8_t *dst, const uint8_t *src, size_t len,
			     unsigned seed)
{
	static const uint8_t zero[HDR - 2];
	const uint8_t *want = make_frame(dst, src, len, seed);
	unsigned nbufs;
	size_t got = rx_take(p, &nbufs);

	assert_int_equal(got, HDR + len);
	assert_memory_equal(rx_out, zero, sizeof(zero));
	assert_memory_equal(rx_out + HDR, want, len);
	return nbufs;
}

void expect_from(struct port *r, const struct port *s, const uint8_t *dst, size_t len,
			unsigned seed)
{
	expect_frame(r, dst, s->mac, len, seed);
}

void expect_nothing(const struct port *p)
{
	assert_false(rx_pending(p));
}

/* Two ports, A with RX buffers, B without; B has sent once (its MAC is learned). */
void two_ports_b_learned(void)
{
	sw_up(2, 0);
	rx_post(&ports[0], 8, 1526);
	tx_send(&ports[1], ports[0].mac, 60, 1000);
	expect_from(&ports[0], &ports[1], ports[0].mac, 60, 1000);
}

const uint8_t mac_bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
const uint8_t mac_mcast[6] = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01};
const uint8_t mac_zero[6];
const uint8_t mac_unknown[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0xee};

struct switch_port_counters counters(const struct port *p)
{
	struct switch_port_counters c;

	switch_port_counters(p->be, &c);
	return c;
}
