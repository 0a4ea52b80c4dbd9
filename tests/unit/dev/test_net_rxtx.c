/* SPDX-License-Identifier: MIT */
/* test_net_rxtx.c - data path: TX, back-pressure, RX (plain, mergeable), drops, batching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dev/backend.h"
#include "fake_driver.h"
#include "lib/iov.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

#define F(bit) BIT_ULL(VIRTIO_NET_F_##bit)
#define RXQ 0
#define TXQ 1
#define HDR 12u
#define US 1000ull

static struct vnet_queue_stats *stats(struct test_dev *td, unsigned q)
{
	return &vnet_dev_queue(td->dev, q)->stats;
}

static void fill_pattern(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7);
}

/* A header the device must pass through untouched (CSUM negotiated). */
static void tx_header(uint8_t hdr[HDR])
{
	struct virtio_net_hdr_v1 h = {
	    .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
	    .gso_type = VIRTIO_NET_HDR_GSO_NONE,
	    .hdr_len = 0,
	    .gso_size = 0,
	    .csum_start = 34,
	    .csum_offset = 16,
	    .num_buffers = 0,
	};

	memcpy(hdr, &h, HDR);
}

/* Copy `pkt` into guest memory cut at the given lengths; one readable descriptor per piece. */
static int tx_chain_cut(struct test_dev *td, const uint8_t *pkt, const uint32_t *cuts, unsigned n,
			bool indirect)
{
	struct fake_buf b[8];
	size_t off = 0;

	for (unsigned i = 0; i < n; i++) {
		b[i].gpa = fake_mem_alloc(&td->mem, cuts[i], 8);
		b[i].len = cuts[i];
		b[i].write = false;
		memcpy(fake_mem_host(&td->mem, b[i].gpa), pkt + off, cuts[i]);
		off += cuts[i];
	}
	return indirect ? fake_vq_add_indirect(&td->vq[TXQ], b, n)
			: fake_vq_add_chain(&td->vq[TXQ], b, n);
}

/* One writable buffer on the RX queue; returns its GPA, *head its descriptor. */
static uint64_t post_one(struct test_dev *td, uint32_t size, int *head)
{
	struct fake_buf b = {fake_mem_alloc(&td->mem, size, 8), size, true};

	memset(fake_mem_host(&td->mem, b.gpa), 0xcc, size);
	*head = fake_vq_add_chain(&td->vq[RXQ], &b, 1);
	fake_vq_publish(&td->vq[RXQ]);
	return b.gpa;
}

static int rx_deliver(struct test_dev *td, const uint8_t hdr[HDR], const uint8_t *data, size_t len)
{
	struct iovec iov[2] = {{(void *)hdr, HDR}, {(void *)data, len}};
	int r = vnet_dev_receive(td->dev, iov, 2);

	vnet_dev_rx_flush(td->dev);
	return r;
}

/*
 * td_receive() in a forked child first, under a watchdog: a device that loops forever fails
 * this test instead of hanging the whole suite. Then the same call in this process.
 */
static int guarded_receive(struct test_dev *td, uint32_t len, uint8_t fill)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(10);
		_exit(td_receive(td, len, fill) == 0 ? 10 : 11);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("vnet_dev_receive() did not return (signal %d): it loops",
			 WTERMSIG(status));
	return td_receive(td, len, fill);
}

/* ---- TX ---- */

static void test_tx_packet_reaches_backend_byte_exact(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | F(CSUM));
	uint8_t pkt[HDR + 100];
	const uint32_t two[] = {HDR, 100}, one[] = {HDR + 100}, odd[] = {5, 47, 60};
	int heads[4];
	uint32_t id, len;

	(void)state;
	assert_true(td->features & F(CSUM));
	tx_header(pkt);
	fill_pattern(pkt + HDR, 100, 1);
	heads[0] = tx_chain_cut(td, pkt, two, 2, false);
	heads[1] = tx_chain_cut(td, pkt, one, 1, false);
	heads[2] = tx_chain_cut(td, pkt, odd, 3, false);
	heads[3] = tx_chain_cut(td, pkt, odd, 3, true);
	fake_vq_publish(&td->vq[TXQ]);
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(td->npkts, 4);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(td->pkts[i].len, sizeof(pkt));
		assert_memory_equal(td->pkts[i].data, pkt, sizeof(pkt));
		assert_true(fake_vq_get_used(&td->vq[TXQ], &id, &len));
		assert_int_equal(id, heads[i]);
		assert_int_equal(len, 0); /* the device wrote nothing into TX buffers */
	}
	assert_int_equal(stats(td, TXQ)->packets, 4);
	assert_int_equal(stats(td, TXQ)->dropped, 0);
	td_free(td);
}

static uint16_t seen_used[16];
static unsigned nseen;

static int record_used_idx(struct test_dev *td)
{
	if (nseen < 16)
		seen_used[nseen++] = fake_vq_used_idx(&td->vq[TXQ]);
	return 0;
}

static void test_used_index_published_once_per_batch(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	nseen = 0;
	td->tx_hook = record_used_idx;
	td_tx(td, TXQ, 3, 64);
	assert_int_equal(nseen, 3);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(seen_used[i], 0); /* nothing published mid-batch */
	assert_int_equal(fake_vq_used_idx(&td->vq[TXQ]), 3);
	assert_int_equal(td->notifies[TXQ], 1); /* one notification for the batch */
	td_tx(td, TXQ, 2, 64);
	assert_int_equal(nseen, 5);
	assert_int_equal(seen_used[3], 3);
	assert_int_equal(seen_used[4], 3);
	assert_int_equal(fake_vq_used_idx(&td->vq[TXQ]), 5);
	assert_int_equal(td->notifies[TXQ], 2);
	td_free(td);
}

static int eagain_on_second_attempt(struct test_dev *td)
{
	if (td->tx_attempts == 2)
		td->tx_eagain = 1;
	return 0;
}

static void test_tx_back_pressure_keeps_packet_and_retries_in_order(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	td->tx_hook = eagain_on_second_attempt;
	td_tx_queue(td, TXQ, 64, 0xa1);
	td_tx_queue(td, TXQ, 64, 0xa2);
	td_tx_queue(td, TXQ, 64, 0xa3);
	fake_vq_publish(&td->vq[TXQ]);
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(td->npkts, 1);
	assert_true(vnet_dev_queue(td->dev, TXQ)->tx_blocked);
	assert_int_equal(fake_vq_used_idx(&td->vq[TXQ]), 1); /* only A is done */
	/* Still full when resumed: nothing lost, nothing sent. */
	td->tx_eagain = 1;
	vnet_dev_tx_resume(td->dev);
	assert_int_equal(td->npkts, 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[TXQ]), 1);
	/* The guest queues more meanwhile. */
	td_tx_queue(td, TXQ, 64, 0xa4);
	fake_vq_publish(&td->vq[TXQ]);
	vnet_dev_kick(td->dev, TXQ);
	vnet_dev_tx_resume(td->dev);
	assert_int_equal(td->npkts, 4);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(td->pkts[i].len, HDR + 64);
		assert_int_equal(td->pkts[i].data[HDR], 0xa1 + i);
		assert_int_equal(td->pkts[i].data[HDR + 63], 0xa1 + i);
	}
	assert_false(vnet_dev_queue(td->dev, TXQ)->tx_blocked);
	assert_int_equal(fake_vq_used_idx(&td->vq[TXQ]), 4);
	assert_int_equal(stats(td, TXQ)->dropped, 0);
	assert_int_equal(stats(td, TXQ)->packets, 4);
	td_free(td);
}

static int fail_first_attempt(struct test_dev *td)
{
	return td->tx_attempts == 1 ? -1 : 0;
}

static void test_tx_backend_error_drops_packet_and_returns_buffer(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);

	(void)state;
	td->tx_hook = fail_first_attempt;
	td_tx_queue(td, TXQ, 64, 0xb1);
	td_tx_queue(td, TXQ, 64, 0xb2);
	fake_vq_publish(&td->vq[TXQ]);
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(td->npkts, 1);
	assert_int_equal(td->pkts[0].data[HDR], 0xb2);
	assert_int_equal(stats(td, TXQ)->dropped, 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[TXQ]), 2);
	td_free(td);
}

static void test_tx_hostile_chain_breaks_queue_after_valid_ones(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	struct fake_vq *q = &td->vq[TXQ];
	uint64_t gpa = fake_mem_alloc(&td->mem, 64, 8);

	(void)state;
	td_tx_queue(td, TXQ, 64, 0xc1);
	q->desc[200].addr = gpa;
	q->desc[200].len = 64;
	q->desc[200].flags = VRING_DESC_F_NEXT;
	q->desc[200].next = 200; /* self-loop */
	fake_vq_add_head(q, 200);
	fake_vq_publish(q);
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(td->npkts, 1);
	assert_true(vnet_dev_queue(td->dev, TXQ)->vq.broken);
	assert_int_equal(fake_vq_used_idx(q), 1);
	/* A broken queue does nothing more. */
	td_tx(td, TXQ, 1, 64);
	assert_int_equal(td->npkts, 1);
	td_free(td);
}

static void test_tx_timer_mode_sends_batch_when_timer_fires(void **state)
{
	struct vnet_dev_params p;
	struct test_dev *td;
	uint64_t t0;

	(void)state;
	td_default_params(&p, 1);
	p.tx_mode = VNET_TX_TIMER;
	p.tx_timer_usecs = 100;
	td = td_create(&p, TD_BASE_FEATURES);
	td_start_queues(td, 64);
	t0 = td->now;
	td_tx(td, TXQ, 3, 64);
	assert_int_equal(td->npkts, 0);
	assert_int_equal(td->deadline[TXQ], t0 + 100 * US);
	td_advance(td, 100 * US);
	assert_int_equal(td->npkts, 3);
	assert_int_equal(fake_vq_used_idx(&td->vq[TXQ]), 3);
	assert_int_equal(td->notifies[TXQ], 1);
	td_free(td);
}

/* tx-mode timer batches on its timer: tx_relook (port specs set it for every port) stays out. */
static void test_tx_timer_mode_does_not_relook(void **state)
{
	struct vnet_dev_params p;
	struct test_dev *td;

	(void)state;
	td_default_params(&p, 1);
	p.tx_mode = VNET_TX_TIMER;
	p.tx_timer_usecs = 100;
	p.tx_relook = true;
	td = td_create(&p, TD_BASE_FEATURES);
	td_start_queues(td, 64);
	td_tx(td, TXQ, 3, 64);
	td_advance(td, 100 * US);
	assert_int_equal(td->npkts, 3);
	assert_false(td->scheduled[TXQ]);
	td_tx(td, TXQ, 2, 64); /* the next kick starts the next timer, not a run */
	assert_int_equal(td->npkts, 3);
	assert_false(td->scheduled[TXQ]);
	td_advance(td, 100 * US);
	assert_int_equal(td->npkts, 5);
	assert_false(td->scheduled[TXQ]);
	td_free(td);
}

/* ---- RX ---- */

static void test_rx_non_mergeable_delivery_byte_exact(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint8_t hdr[HDR] = {0}, data[60];
	uint64_t gpa0, gpa1;
	int h0, h1;
	uint32_t id, len;
	uint8_t *buf;

	(void)state;
	put_le16(hdr + 10, 0x7777); /* num_buffers is the device's to fill */
	fill_pattern(data, sizeof(data), 2);
	gpa0 = post_one(td, 1526, &h0);
	gpa1 = post_one(td, 1526, &h1);
	assert_int_equal(rx_deliver(td, hdr, data, sizeof(data)), 1);
	assert_true(fake_vq_get_used(&td->vq[RXQ], &id, &len));
	assert_int_equal(id, h0);
	assert_int_equal(len, HDR + 60);
	buf = fake_mem_host(&td->mem, gpa0);
	assert_memory_equal(buf, hdr, 10);
	assert_int_equal(get_le16(buf + 10), 1);
	assert_memory_equal(buf + HDR, data, sizeof(data));
	assert_int_equal(buf[HDR + 60], 0xcc); /* nothing written past the packet */
	/* The second packet takes the second buffer. */
	fill_pattern(data, sizeof(data), 3);
	assert_int_equal(rx_deliver(td, hdr, data, 40), 1);
	assert_true(fake_vq_get_used(&td->vq[RXQ], &id, &len));
	assert_int_equal(id, h1);
	assert_int_equal(len, HDR + 40);
	assert_memory_equal((uint8_t *)fake_mem_host(&td->mem, gpa1) + HDR, data, 40);
	assert_int_equal(stats(td, RXQ)->packets, 2);
	assert_int_equal(td->notifies[RXQ], 2);
	td_free(td);
}

static void test_rx_buffer_of_several_descriptors(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	struct fake_buf b[3];
	uint8_t hdr[HDR] = {0}, data[100];
	uint32_t id, len;
	int head;

	(void)state;
	fill_pattern(data, sizeof(data), 4);
	b[0] = (struct fake_buf){fake_mem_alloc(&td->mem, HDR, 8), HDR, true};
	b[1] = (struct fake_buf){fake_mem_alloc(&td->mem, 30, 8), 30, true};
	b[2] = (struct fake_buf){fake_mem_alloc(&td->mem, 2000, 8), 2000, true};
	head = fake_vq_add_chain(&td->vq[RXQ], b, 3);
	fake_vq_publish(&td->vq[RXQ]);
	assert_int_equal(rx_deliver(td, hdr, data, sizeof(data)), 1);
	assert_true(fake_vq_get_used(&td->vq[RXQ], &id, &len));
	assert_int_equal(id, head);
	assert_int_equal(len, HDR + 100);
	assert_int_equal(get_le16((uint8_t *)fake_mem_host(&td->mem, b[0].gpa) + 10), 1);
	assert_memory_equal(fake_mem_host(&td->mem, b[1].gpa), data, 30);
	assert_memory_equal(fake_mem_host(&td->mem, b[2].gpa), data + 30, 70);
	td_free(td);
}

static void test_rx_mergeable_delivery_byte_exact_with_num_buffers(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | F(MRG_RXBUF));
	uint8_t hdr[HDR] = {0}, data[150];
	uint64_t gpa[4];
	int heads[4];
	uint32_t id, len;
	const uint32_t lens[3] = {64, 64, 34};
	size_t off = 0;

	(void)state;
	assert_true(td->features & F(MRG_RXBUF));
	fill_pattern(data, sizeof(data), 5);
	for (unsigned i = 0; i < 4; i++)
		gpa[i] = post_one(td, 64, &heads[i]);
	assert_int_equal(rx_deliver(td, hdr, data, sizeof(data)), 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 3);
	assert_int_equal(get_le16((uint8_t *)fake_mem_host(&td->mem, gpa[0]) + 10), 3);
	for (unsigned i = 0; i < 3; i++) {
		uint8_t *buf = fake_mem_host(&td->mem, gpa[i]);
		size_t skip = i == 0 ? HDR : 0;

		assert_true(fake_vq_get_used(&td->vq[RXQ], &id, &len));
		assert_int_equal(id, heads[i]);
		assert_int_equal(len, lens[i]);
		assert_memory_equal(buf + skip, data + off, lens[i] - skip);
		off += lens[i] - skip;
	}
	assert_int_equal(off, sizeof(data));
	assert_int_equal(td->notifies[RXQ], 1);
	assert_int_equal(stats(td, RXQ)->packets, 1);
	/* A small packet takes one buffer and says so. */
	assert_int_equal(rx_deliver(td, hdr, data, 20), 1);
	assert_true(fake_vq_get_used(&td->vq[RXQ], &id, &len));
	assert_int_equal(id, heads[3]);
	assert_int_equal(len, HDR + 20);
	assert_int_equal(get_le16((uint8_t *)fake_mem_host(&td->mem, gpa[3]) + 10), 1);
	td_free(td);
}

static void test_rx_no_buffers_returns_0_and_resumes_after_kick(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	int head;

	(void)state;
	assert_int_equal(td_receive(td, 60, 1), 0);
	assert_int_equal(stats(td, RXQ)->rx_no_buffers, 1);
	assert_int_equal(td->rx_resume_calls, 0);
	assert_int_equal(td->notifies[RXQ], 0);
	post_one(td, 1526, &head);
	vnet_dev_kick(td->dev, RXQ);
	assert_int_equal(td->rx_resume_calls, 1);
	assert_int_equal(td_receive(td, 60, 1), 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 1);
	/* No packet waited this time: no resume on the next kick. */
	post_one(td, 1526, &head);
	vnet_dev_kick(td->dev, RXQ);
	assert_int_equal(td->rx_resume_calls, 1);
	td_free(td);
}

static void test_rx_mergeable_waits_when_buffers_insufficient(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | F(MRG_RXBUF));
	uint64_t gpa0;
	int head;

	(void)state;
	gpa0 = post_one(td, 64, &head);
	assert_int_equal(guarded_receive(td, 150, 0x5a), 0); /* needs 3 buffers, 1 posted */
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 0);
	assert_int_equal(stats(td, RXQ)->dropped, 0);
	post_one(td, 64, &head);
	post_one(td, 64, &head);
	vnet_dev_kick(td->dev, RXQ);
	assert_int_equal(td->rx_resume_calls, 1);
	assert_int_equal(td_receive(td, 150, 0x5a), 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 3);
	assert_int_equal(get_le16((uint8_t *)fake_mem_host(&td->mem, gpa0) + 10), 3);
	assert_int_equal(((uint8_t *)fake_mem_host(&td->mem, gpa0))[HDR + 14], 0x5a);
	td_free(td);
}

/*
 * Regression (found by the benchmark): with EVENT_IDX, a packet that needs more mergeable
 * buffers than are posted must leave avail_event at the driver's avail index, not at the first
 * unconsumed buffer, or the driver never kicks again when it adds the missing ones.
 */
static void test_rx_partial_buffers_ask_for_kick_at_avail_index(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | F(MRG_RXBUF) | BIT_ULL(VIRTIO_RING_F_EVENT_IDX));
	int head;

	(void)state;
	assert_true(td->features & BIT_ULL(VIRTIO_RING_F_EVENT_IDX));
	post_one(td, 64, &head);
	assert_int_equal(td_receive(td, 150, 0x5a), 0); /* needs 3 buffers, 1 posted */
	assert_int_equal(fake_vq_avail_event(&td->vq[RXQ]), 1);
	post_one(td, 64, &head);
	post_one(td, 64, &head);
	vnet_dev_kick(td->dev, RXQ);
	assert_int_equal(td_receive(td, 150, 0x5a), 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 3);
	td_free(td);
}

/*
 * Regression (found by test_switch): a mergeable packet that needs more buffers than the whole
 * ring holds can never fit; waiting for more would stall the queue (and a switch port's queue
 * behind it) forever. It is dropped and counted; the ring is left as it was.
 */
static void test_rx_packet_larger_than_whole_ring_dropped(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | F(MRG_RXBUF));
	int head;

	(void)state;
	for (unsigned i = 0; i < 256; i++) /* the ring's 256 entries, 64 bytes each */
		post_one(td, 64, &head);
	assert_int_equal(td_receive(td, 20000, 0x33), 1);
	assert_int_equal(stats(td, RXQ)->dropped, 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 0);
	assert_int_equal(td_receive(td, 100, 0x44), 1); /* 2 buffers: delivered */
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 2);
	assert_int_equal(stats(td, RXQ)->packets, 1);
	td_free(td);
}

static void test_rx_oversize_packet_dropped_and_counted(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint32_t id, len;
	int h0, h1;
	uint64_t g0, g1;
	uint8_t *buf;

	(void)state;
	g0 = post_one(td, 100, &h0);
	g1 = post_one(td, 100, &h1);
	assert_int_equal(td_receive(td, 200, 0x11), 1);
	assert_int_equal(stats(td, RXQ)->dropped, 1);
	assert_int_equal(stats(td, RXQ)->packets, 0);
	/* The next packet that fits is delivered whole. */
	assert_int_equal(td_receive(td, 50, 0x22), 1);
	while (fake_vq_get_used(&td->vq[RXQ], &id, &len))
		if (len != 0)
			break;
	assert_int_equal(len, HDR + 50);
	assert_true(id == (uint32_t)h0 || id == (uint32_t)h1);
	buf = fake_mem_host(&td->mem, id == (uint32_t)h0 ? g0 : g1);
	assert_memory_equal(buf + HDR, vnet_dev_mac(td->dev), 6);
	assert_int_equal(buf[HDR + 14], 0x22);
	assert_int_equal(buf[HDR + 49], 0x22);
	assert_int_equal(stats(td, RXQ)->packets, 1);
	td_free(td);
}

static void test_rx_used_index_published_once_per_flush(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint8_t hdr[HDR] = {0}, data[60];
	struct iovec iov[2] = {{hdr, HDR}, {data, sizeof(data)}};

	(void)state;
	memset(data, 0xff, sizeof(data)); /* broadcast */
	td_post_rx(td, RXQ, 4, 1526);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(vnet_dev_receive(td->dev, iov, 2), 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 0);
	assert_int_equal(td->notifies[RXQ], 0);
	vnet_dev_rx_flush(td->dev);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 3);
	assert_int_equal(td->notifies[RXQ], 1);
	vnet_dev_rx_flush(td->dev); /* nothing new: nothing happens */
	assert_int_equal(td->notifies[RXQ], 1);
	td_free(td);
}

static void test_rx_hostile_buffer_breaks_queue(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	struct fake_buf b = {fake_mem_end_gpa(&td->mem) - 16, 1526, true};

	(void)state;
	fake_vq_add_chain(&td->vq[RXQ], &b, 1);
	fake_vq_publish(&td->vq[RXQ]);
	assert_int_equal(td_receive(td, 60, 1), 1); /* not delivered, but not left waiting */
	assert_true(vnet_dev_queue(td->dev, RXQ)->vq.broken);
	assert_int_equal(stats(td, RXQ)->dropped, 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 0);
	td_free(td);
}

/* ---- poll mode ---- */

/*
 * iov_copy_iov() from src cut into pieces of the given lengths (0: an empty piece), starting at
 * src_off, into one destination segment of dst_len bytes at dst_off: what it returns and writes
 * must be what a byte-by-byte copy of the same bytes gives, and nothing past the copy changes.
 */
static void check_copy_iov(const uint32_t *cuts, unsigned ncuts, size_t src_off, size_t dst_off,
			   size_t dst_len, size_t len)
{
	uint8_t src[256], dst[256 + 16], want[256 + 16];
	struct iovec in[8], out = {dst, dst_len};
	size_t total = 0, at = 0, expect;

	assert_true(ncuts <= 8 && dst_len <= 256);
	fill_pattern(src, sizeof(src), 9);
	for (unsigned i = 0; i < ncuts; i++) {
		in[i] = (struct iovec){src + total + i, cuts[i]}; /* a gap of i bytes: not one buffer */
		total += cuts[i];
	}
	memset(dst, 0xcc, sizeof(dst));
	memset(want, 0xcc, sizeof(want));
	expect = len;
	if (expect > (total > src_off ? total - src_off : 0))
		expect = total > src_off ? total - src_off : 0;
	if (expect > (dst_len > dst_off ? dst_len - dst_off : 0))
		expect = dst_len > dst_off ? dst_len - dst_off : 0;
	for (unsigned i = 0, pos = 0; i < ncuts; i++)
		for (uint32_t b = 0; b < cuts[i]; b++, pos++)
			if (pos >= src_off && pos < src_off + expect)
				want[dst_off + at++] = ((uint8_t *)in[i].iov_base)[b];
	assert_int_equal(at, expect);
	assert_int_equal(iov_copy_iov(&out, 1, dst_off, in, ncuts, src_off, len), expect);
	assert_memory_equal(dst, want, sizeof(dst));
}

static void test_iov_copy_two_piece_source(void **state)
{
	const uint32_t two[] = {21, 43}, empty_first[] = {0, 21, 43}, empty_second[] = {21, 0, 43},
		       empty_last[] = {21, 43, 0}, three[] = {14, 7, 43}, one[] = {64};

	(void)state;
	check_copy_iov(two, 2, 0, 0, 64, 64);	   /* exact fit: the destination holds both */
	check_copy_iov(two, 2, 0, 12, 76, 64);	   /* after a header, exact fit */
	check_copy_iov(two, 2, 0, 0, 100, 64);	   /* room to spare */
	check_copy_iov(two, 2, 0, 0, 63, 64);	   /* destination one byte short: 63 copied */
	check_copy_iov(two, 2, 0, 0, 30, 64);	   /* destination smaller than the source */
	check_copy_iov(two, 2, 0, 0, 21, 64);	   /* ... holding the first piece alone */
	check_copy_iov(two, 2, 0, 0, 64, 40);	   /* len inside the second piece */
	check_copy_iov(two, 2, 0, 0, 64, 22);	   /* one byte of the second piece */
	check_copy_iov(two, 2, 0, 0, 64, 21);	   /* the first piece exactly */
	check_copy_iov(two, 2, 0, 0, 64, 0);	   /* nothing */
	check_copy_iov(two, 2, 0, 0, 200, 100);   /* len past the source: what it holds */
	check_copy_iov(two, 2, 5, 0, 64, 59);	   /* from inside the first piece, to the end */
	check_copy_iov(two, 2, 20, 0, 64, 44);	   /* the first piece's last byte, then the second */
	check_copy_iov(two, 2, 21, 0, 64, 43);	   /* from the second piece's start: one piece */
	check_copy_iov(two, 2, 64, 0, 64, 10);	   /* from the end: nothing */
	check_copy_iov(empty_first, 3, 0, 0, 64, 64);  /* an empty piece before: skipped */
	check_copy_iov(empty_second, 3, 0, 0, 64, 64); /* an empty piece between */
	check_copy_iov(empty_second, 3, 0, 0, 64, 30);
	check_copy_iov(empty_last, 3, 0, 0, 64, 64);   /* an empty piece after */
	check_copy_iov(three, 3, 0, 0, 64, 64);	       /* three pieces: the general loop */
	check_copy_iov(three, 3, 3, 4, 64, 60);
	check_copy_iov(one, 1, 0, 0, 64, 64);	       /* one piece */
	check_copy_iov(one, 1, 0, 0, 32, 64);
}

/* ---- RX: a frame with the sender's checked head (vnet_dev_receive_checked()) ---- */

/* A 60-byte frame and a different checked copy of its Ethernet header. */
static void checked_frame(uint8_t frame[60], uint8_t head[VNET_FRAME_HEAD], uint8_t want[60])
{
	static const uint8_t guest_dst[6] = {0x02, 0x66, 0x66, 0x66, 0x66, 0x66};

	fill_pattern(frame, 60, 11);
	memset(head, 0xff, 6); /* broadcast: the device's filter takes it */
	memcpy(head + 6, "\x02\x00\x00\x00\x00\x01", 6);
	head[12] = 0x88, head[13] = 0xb5;
	memcpy(frame, guest_dst, 6); /* what the sender's guest wrote after the check */
	memcpy(want, head, VNET_FRAME_HEAD);
	memcpy(want + VNET_FRAME_HEAD, frame + VNET_FRAME_HEAD, 60 - VNET_FRAME_HEAD);
}

static void test_rx_checked_head_replaces_the_frames_first_bytes(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES);
	uint8_t frame[60], head[VNET_FRAME_HEAD], want[60];
	const struct vnet_frame f = {frame, 60}, runt = {frame, 13};
	uint32_t id, len;
	uint64_t gpa;
	uint8_t *buf;
	int h;

	(void)state;
	checked_frame(frame, head, want);
	/* No buffers: 0, nothing taken. */
	assert_int_equal(vnet_dev_receive_checked(td->dev, &f, head), 0);
	gpa = post_one(td, 1526, &h);
	assert_int_equal(vnet_dev_receive_checked(td->dev, &f, head), 1);
	vnet_dev_rx_flush(td->dev);
	assert_true(fake_vq_get_used(&td->vq[RXQ], &id, &len));
	assert_int_equal(id, h);
	assert_int_equal(len, HDR + 60);
	buf = fake_mem_host(&td->mem, gpa);
	assert_int_equal(get_le16(buf + 10), 1);
	assert_memory_equal(buf + HDR, want, 60);
	assert_int_equal(buf[HDR + 60], 0xcc);
	/* A runt is dropped and counted (its head is not read: fewer bytes than it). */
	assert_int_equal(vnet_dev_receive_checked(td->dev, &runt, head), 1);
	assert_int_equal(stats(td, RXQ)->dropped, 1);
	assert_int_equal(stats(td, RXQ)->packets, 1);
	td_free(td);
}

/* A buffer too small for the frame: the general placement, still with the checked head. */
static void test_rx_checked_head_across_mergeable_buffers(void **state)
{
	struct test_dev *td = td_new(1, TD_BASE_FEATURES | F(MRG_RXBUF));
	uint8_t frame[60], head[VNET_FRAME_HEAD], want[HDR + 60], got[HDR + 60];
	const struct vnet_frame f = {frame, 60};
	uint64_t gpa[4];
	int heads[4];
	uint32_t id, len;
	size_t at = 0;

	(void)state;
	checked_frame(frame, head, want + HDR);
	for (unsigned i = 0; i < 4; i++)
		gpa[i] = post_one(td, 20, &heads[i]); /* 12 + 8, 20, 20, 12: the head spans two */
	assert_int_equal(vnet_dev_receive_checked(td->dev, &f, head), 1);
	vnet_dev_rx_flush(td->dev);
	for (unsigned i = 0; i < 4; i++) {
		assert_true(fake_vq_get_used(&td->vq[RXQ], &id, &len));
		assert_int_equal(id, heads[i]);
		memcpy(got + at, fake_mem_host(&td->mem, gpa[i]), len);
		at += len;
	}
	assert_int_equal(at, HDR + 60);
	assert_int_equal(get_le16(got + 10), 4);
	assert_memory_equal(got + HDR, want + HDR, 60);
	td_free(td);
}

/* Several active pairs: the frame as two pieces through the flow hash, the head still checked. */
static void test_rx_checked_head_with_several_pairs(void **state)
{
	struct test_dev *td = td_new(2, TD_BASE_FEATURES | F(MQ) | F(CTRL_VQ));
	uint8_t frame[60], head[VNET_FRAME_HEAD], want[60];
	uint8_t in[4] = {VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, 2, 0};
	const struct vnet_frame f = {frame, 60};
	uint64_t gpa[2];
	int h[2];
	uint32_t id, len;
	unsigned found = 0;

	(void)state;
	assert_int_equal(td_exec(td, in, sizeof(in)), VIRTIO_NET_OK);
	checked_frame(frame, head, want);
	for (unsigned q = 0; q < 2; q++) {
		struct fake_buf b = {fake_mem_alloc(&td->mem, 1526, 8), 1526, true};

		memset(fake_mem_host(&td->mem, b.gpa), 0xcc, 1526);
		gpa[q] = b.gpa;
		h[q] = fake_vq_add_chain(&td->vq[2 * q], &b, 1);
		fake_vq_publish(&td->vq[2 * q]);
	}
	assert_int_equal(vnet_dev_receive_checked(td->dev, &f, head), 1);
	vnet_dev_rx_flush(td->dev);
	for (unsigned q = 0; q < 2; q++) {
		if (!fake_vq_get_used(&td->vq[2 * q], &id, &len))
			continue;
		found++;
		assert_int_equal(id, h[q]);
		assert_int_equal(len, HDR + 60);
		assert_memory_equal((uint8_t *)fake_mem_host(&td->mem, gpa[q]) + HDR, want, 60);
	}
	assert_int_equal(found, 1);
	td_free(td);
}

#define T(fn) cmocka_unit_test_teardown(fn, td_cleanup)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_tx_packet_reaches_backend_byte_exact),
	    T(test_used_index_published_once_per_batch),
	    T(test_tx_back_pressure_keeps_packet_and_retries_in_order),
	    T(test_tx_backend_error_drops_packet_and_returns_buffer),
	    T(test_tx_hostile_chain_breaks_queue_after_valid_ones),
	    T(test_tx_timer_mode_sends_batch_when_timer_fires),
	    T(test_tx_timer_mode_does_not_relook),
	    T(test_rx_non_mergeable_delivery_byte_exact),
	    T(test_rx_buffer_of_several_descriptors),
	    T(test_rx_mergeable_delivery_byte_exact_with_num_buffers),
	    T(test_rx_no_buffers_returns_0_and_resumes_after_kick),
	    T(test_rx_mergeable_waits_when_buffers_insufficient),
	    T(test_rx_partial_buffers_ask_for_kick_at_avail_index),
	    T(test_rx_packet_larger_than_whole_ring_dropped),
	    T(test_rx_oversize_packet_dropped_and_counted),
	    T(test_rx_used_index_published_once_per_flush),
	    T(test_rx_hostile_buffer_breaks_queue),
	    cmocka_unit_test(test_iov_copy_two_piece_source),
	    T(test_rx_checked_head_replaces_the_frames_first_bytes),
	    T(test_rx_checked_head_across_mergeable_buffers),
	    T(test_rx_checked_head_with_several_pairs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
