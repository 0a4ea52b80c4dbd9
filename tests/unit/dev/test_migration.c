/* SPDX-License-Identifier: MIT */
/* test_migration.c - dirty log bits (exactly the pages written) and the device state stream. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "mem/dirty_log.h"
#include "fake_driver.h"
#include "lib/virtio_net_defs.h"
#include "virtq/virtq.h"
#include "dev/dev.h"

#define PAGE DIRTY_LOG_PAGE
#define LOG_BYTES 256 /* 2048 pages: 8 MiB of GPA, more than the harness's memory */
#define RXQ 0
#define TXQ 1
#define F(bit) BIT_ULL(VIRTIO_NET_F_##bit)

struct logfx {
	uint8_t bitmap[LOG_BYTES];
	struct dirty_log log;
};

static void logfx_init(struct logfx *l)
{
	memset(l, 0, sizeof(*l));
	l->log.bitmap = l->bitmap;
	l->log.size = LOG_BYTES;
}

static bool bit(const struct logfx *l, uint64_t page)
{
	return l->bitmap[page / 8] >> (page % 8) & 1;
}

static unsigned nbits(const struct logfx *l)
{
	unsigned n = 0;

	for (unsigned i = 0; i < LOG_BYTES; i++)
		n += (unsigned)__builtin_popcount(l->bitmap[i]);
	return n;
}

/* Expected set: mark [gpa, gpa + len) in a second bitmap. */
static void expect(uint8_t *want, uint64_t gpa, uint64_t len)
{
	for (uint64_t p = gpa / PAGE; p <= (gpa + len - 1) / PAGE; p++)
		want[p / 8] |= (uint8_t)(1u << (p % 8));
}

/* ---- the bitmap ---- */

static void test_gpa_bits(void **state)
{
	struct logfx l;

	(void)state;
	logfx_init(&l);
	dirty_log_gpa(&l.log, 0, 1);
	assert_true(bit(&l, 0));
	assert_int_equal(nbits(&l), 1);
	dirty_log_gpa(&l.log, 5 * PAGE - 1, 2); /* the last byte of page 4, the first of 5 */
	assert_true(bit(&l, 4) && bit(&l, 5));
	assert_int_equal(nbits(&l), 3);
	dirty_log_gpa(&l.log, 9 * PAGE, PAGE); /* exactly one page */
	assert_true(bit(&l, 9));
	assert_false(bit(&l, 10));
	dirty_log_gpa(&l.log, 20 * PAGE, 0); /* nothing written: nothing logged */
	assert_false(bit(&l, 20));
	assert_int_equal(nbits(&l), 4);
	assert_int_equal(l.log.dropped, 0);
}

static void test_bounds(void **state)
{
	struct logfx l;
	uint64_t pages = LOG_BYTES * 8;

	(void)state;
	logfx_init(&l);
	dirty_log_gpa(&l.log, (pages - 1) * PAGE, 3 * PAGE); /* last page in, two past the end */
	assert_true(bit(&l, pages - 1));
	assert_int_equal(nbits(&l), 1);
	assert_int_equal(l.log.dropped, 2);
	dirty_log_gpa(&l.log, UINT64_MAX - 10, 100); /* would wrap: clamped, all outside */
	assert_int_equal(nbits(&l), 1);
	assert_int_equal(l.log.dropped, 3);
	l.log.bitmap = NULL; /* no log: nothing happens */
	dirty_log_gpa(&l.log, 0, 1);
	assert_int_equal(l.bitmap[0], 0);
}

static void test_host_translation(void **state)
{
	struct fake_mem m;
	struct logfx l;
	uint64_t hi;

	(void)state;
	logfx_init(&l);
	/* Two regions with a GPA gap: host addresses map back to the right region. */
	fake_mem_init(&m, 0x100000, 1 << 20, true);
	hi = m.gm.regions[1].gpa;
	dirty_log_host(&l.log, &m.gm, m.gm.regions[0].host + 2 * PAGE + 7, 10);
	dirty_log_host(&l.log, &m.gm, m.gm.regions[1].host + PAGE, 1);
	assert_true(bit(&l, 0x100000 / PAGE + 2));
	assert_true(bit(&l, hi / PAGE + 1));
	assert_int_equal(nbits(&l), 2);
	/* A pointer outside guest memory logs nothing; a length past the region is clipped. */
	dirty_log_host(&l.log, &m.gm, l.bitmap, 10);
	dirty_log_host(&l.log, &m.gm, m.gm.regions[0].host + m.gm.regions[0].size - 1, 3 * PAGE);
	assert_int_equal(nbits(&l), 3);
	fake_mem_free(&m);
}

/* ---- the data path ---- */

/* A device whose queues log, the used rings at their GPAs (VHOST_VRING_F_LOG). */
static struct test_dev *logged_dev(struct logfx *l, uint64_t features)
{
	struct test_dev *td = td_new(1, features);

	logfx_init(l);
	vnet_dev_set_dirty_log(td->dev, &l->log);
	for (unsigned i = 0; i < td->nqueues; i++) {
		struct vnet_queue *q = vnet_dev_queue(td->dev, i);

		q->vq.log_used = true;
		q->vq.log_used_gpa = td->vq[i].used_gpa;
	}
	return td;
}

/* One writable buffer of len bytes starting `into` bytes before a page boundary. */
static uint64_t post_across(struct test_dev *td, uint32_t len, uint32_t into)
{
	uint64_t base = fake_mem_alloc(&td->mem, 3 * PAGE, PAGE);
	struct fake_buf b = {base + PAGE - into, len, true};

	fake_vq_add_chain(&td->vq[RXQ], &b, 1);
	fake_vq_publish(&td->vq[RXQ]);
	return b.gpa;
}

static void used_ring_writes(uint8_t *want, const struct test_dev *td, unsigned q, uint16_t from,
			     uint16_t to)
{
	uint64_t used = td->vq[q].used_gpa;

	expect(want, used, 4); /* flags (kick on/off) and idx */
	for (uint16_t i = from; i != to; i++)
		expect(want, used + 4 + 8u * (i % td->vq[q].num), 8);
}

static void test_rx_logs_buffer_and_used(void **state)
{
	struct logfx l;
	struct test_dev *td = logged_dev(&l, TD_BASE_FEATURES);
	uint8_t want[LOG_BYTES] = {0};
	uint64_t gpa;

	(void)state;
	gpa = post_across(td, 2048, 100);
	memset(l.bitmap, 0, sizeof(l.bitmap));
	assert_int_equal(td_receive(td, 1000, 0x5a), 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 1);
	expect(want, gpa, 12 + 1000); /* header and frame: across the page boundary */
	used_ring_writes(want, td, RXQ, 0, 1);
	assert_memory_equal(l.bitmap, want, LOG_BYTES);
	td_free(td);
}

static void test_rx_mergeable_logs_every_buffer(void **state)
{
	struct logfx l;
	struct test_dev *td = logged_dev(&l, TD_BASE_FEATURES | F(MRG_RXBUF));
	uint8_t want[LOG_BYTES] = {0};
	uint64_t a, b, c;

	(void)state;
	a = post_across(td, 600, 300);
	b = post_across(td, 600, 10);
	c = post_across(td, 600, 10); /* not needed: must stay clean */
	memset(l.bitmap, 0, sizeof(l.bitmap));
	assert_int_equal(td_receive(td, 1000, 0x11), 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 2);
	expect(want, a, 600);
	expect(want, b, 12 + 1000 - 600);
	used_ring_writes(want, td, RXQ, 0, 2);
	assert_memory_equal(l.bitmap, want, LOG_BYTES);
	assert_false(bit(&l, c / PAGE + 1));
	td_free(td);
}

/*
 * A driver reuses a descriptor the moment it sees the used element: the split ring's used page
 * is read-only while vq_publish() runs, and the fault its index store takes is the driver
 * seeing the element, pointing the descriptor at another buffer before the store completes.
 * The buffer written must be the one logged (a walk after the store logged the new one, and
 * the page vnetd wrote reached the destination stale).
 */
static struct {
	uint8_t *page;	       /* host page of the used index, read-only until the fault */
	long page_size;
	struct vring_desc *desc; /* the reused descriptor */
	uint64_t new_addr;
	unsigned faults;
} reuse;

static void reuse_on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if ((uint8_t *)si->si_addr < reuse.page ||
	    (uint8_t *)si->si_addr >= reuse.page + reuse.page_size || reuse.faults++)
		abort(); /* any other fault is a real one */
	mprotect(reuse.page, (size_t)reuse.page_size, PROT_READ | PROT_WRITE);
	reuse.desc->addr = reuse.new_addr; /* the driver's refill, before the index store ends */
}

static void test_log_before_driver_reuses_descriptor(void **state)
{
	struct fake_mem mem;
	struct fake_vq fq;
	struct virtqueue vq = {0};
	struct vq_chain chain;
	struct logfx l;
	struct sigaction sa = {0}, old;
	uint64_t a, b;

	(void)state;
	fake_mem_init(&mem, 0, 1u << 20, false);
	fake_vq_init(&fq, &mem, 16);
	a = fake_mem_alloc(&mem, PAGE, PAGE);
	b = fake_mem_alloc(&mem, PAGE, PAGE);
	fake_vq_setup_virtqueue(&fq, &vq);
	logfx_init(&l);
	vq.log = &l.log;
	vq.log_used = true;
	vq.log_used_gpa = fq.used_gpa;
	assert_int_equal(vq_start(&vq, &mem.gm), 0);
	fake_vq_add_chain(&fq, &(struct fake_buf){a, 256, true}, 1);
	fake_vq_publish(&fq);
	assert_int_equal(vq_pop(&vq, &chain), 1);
	memset(chain.iov[0].iov_base, 0x5a, 100); /* the device writes 100 bytes into a */
	vq_push(&vq, chain.head, 100);

	reuse.page_size = sysconf(_SC_PAGESIZE);
	reuse.page = (uint8_t *)((uintptr_t)&fq.used->idx & ~(uintptr_t)(reuse.page_size - 1));
	reuse.desc = &fq.desc[chain.head];
	reuse.new_addr = b;
	reuse.faults = 0;
	sa.sa_sigaction = reuse_on_fault;
	sa.sa_flags = SA_SIGINFO;
	assert_int_equal(sigaction(SIGSEGV, &sa, &old), 0);
	assert_int_equal(mprotect(reuse.page, (size_t)reuse.page_size, PROT_READ), 0);
	vq_publish(&vq);
	sigaction(SIGSEGV, &old, NULL);
	mprotect(reuse.page, (size_t)reuse.page_size, PROT_READ | PROT_WRITE);

	assert_int_equal(reuse.faults, 1); /* the index store was the driver's cue */
	assert_int_equal(fake_vq_used_idx(&fq), 1);
	assert_true(bit(&l, a / PAGE));	 /* what was written */
	assert_false(bit(&l, b / PAGE)); /* not the driver's new buffer */
	fake_vq_destroy(&fq);
	fake_mem_free(&mem);
}

static void test_tx_logs_only_used_ring(void **state)
{
	struct logfx l;
	struct test_dev *td = logged_dev(&l, TD_BASE_FEATURES);
	uint8_t want[LOG_BYTES] = {0};

	(void)state;
	memset(l.bitmap, 0, sizeof(l.bitmap));
	td_tx(td, TXQ, 3, 200);
	assert_int_equal(td->npkts, 3);
	used_ring_writes(want, td, TXQ, 0, 3); /* the guest's TX buffers are only read */
	assert_memory_equal(l.bitmap, want, LOG_BYTES);
	td_free(td);
}

static void test_ctrl_logs_ack(void **state)
{
	struct logfx l;
	struct test_dev *td = logged_dev(&l, TD_BASE_FEATURES);
	uint8_t cmd[10] = {VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_RX_SET};
	uint32_t used_len;

	(void)state;
	uint64_t page;

	put_le32(cmd + 2, 8);
	put_le32(cmd + 6, 100);
	/* The command and its ack byte go on a fresh page of their own (the bump allocator). */
	page = fake_mem_alloc(&td->mem, 1, PAGE) / PAGE;
	memset(l.bitmap, 0, sizeof(l.bitmap));
	assert_int_equal(td_ctrl(td, cmd, sizeof(cmd), NULL, 0, &used_len), VIRTIO_NET_OK);
	/* The ack byte's page and the control used ring; the driver's writes are not logged. */
	assert_true(bit(&l, page));
	assert_true(bit(&l, td->vq[td->ctrl_q].used_gpa / PAGE));
	assert_true(nbits(&l) <= 3);
	td_free(td);
}

static void test_logging_off_costs_nothing(void **state)
{
	struct logfx l;
	struct test_dev *td = logged_dev(&l, TD_BASE_FEATURES);

	(void)state;
	vnet_dev_set_dirty_log(td->dev, NULL);
	td_post_rx(td, RXQ, 4, 2048);
	memset(l.bitmap, 0, sizeof(l.bitmap));
	assert_int_equal(td_receive(td, 500, 1), 1);
	td_tx(td, TXQ, 2, 100);
	assert_int_equal(nbits(&l), 0);
	/* ... and a device reset keeps the device's choice (here: off). */
	vnet_dev_reset(td->dev);
	assert_null(vnet_dev_queue(td->dev, 0)->vq.log);
	td_free(td);
}

/*
 * The invariant a migration needs, checked byte for byte: after any device work, every page of
 * guest memory that differs from a snapshot taken before it (after the driver's own writes) has
 * its log bit. Workload: the copying RX path, the direct RX path (a backend writing into the
 * reserved buffers, as the tap's readv does), TX, with mergeable buffers, EVENT_IDX, buffers
 * across page boundaries and of many sizes.
 */
static void assert_changes_logged(const struct test_dev *td, const uint8_t *snap,
				  const struct logfx *l)
{
	for (uint64_t off = 0; off < td->mem.size; off += PAGE) {
		uint64_t gpa = td->mem.gpa + off;
		uint64_t n = td->mem.size - off < PAGE ? td->mem.size - off : PAGE;

		if (memcmp(snap + off, td->mem.buf + off, n))
			assert_true(bit(l, gpa / PAGE));
	}
}

static void test_every_write_logged(void **state)
{
	struct logfx l;
	struct test_dev *td = logged_dev(&l, TD_BASE_FEATURES | F(MRG_RXBUF) |
					 BIT_ULL(VIRTIO_RING_F_EVENT_IDX));
	uint8_t *snap = malloc(td->mem.size);
	unsigned seed = 12345;

	(void)state;
	assert_non_null(snap);
	for (unsigned round = 0; round < 60; round++) {
		uint32_t id, len;
		unsigned nbuf = 1 + round % 5;

		/* Driver: reclaim, post buffers of odd sizes at odd offsets, queue TX packets. */
		while (fake_vq_get_used(&td->vq[RXQ], &id, &len))
			;
		for (unsigned i = 0; i < nbuf; i++) {
			seed = seed * 1103515245u + 12345u;
			post_across(td, 256 + (seed >> 8) % 3000, 1 + (seed >> 4) % 1500);
		}
		for (unsigned i = 0; i < round % 3; i++)
			td_tx_queue(td, TXQ, 60 + round * 13, (uint8_t)round);
		fake_vq_publish(&td->vq[TXQ]);
		memcpy(snap, td->mem.buf, td->mem.size);
		memset(l.bitmap, 0, sizeof(l.bitmap));

		/* Device: TX, then a packet by the copying path and one by the direct path. */
		vnet_dev_kick(td->dev, TXQ);
		vnet_dev_kick(td->dev, RXQ);
		td_receive(td, 60 + (round * 97) % 2900, (uint8_t)round);
		{
			const struct iovec *iov;
			int n = vnet_dev_rx_reserve(td->dev, 0, &iov);
			size_t plen = 12 + 60 + (round * 331) % 1400, left = plen;

			for (int i = 0; i < n && left; i++) { /* the backend's readv */
				size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;

				memset(iov[i].iov_base, 0x40 + round, k);
				if (i == 0 && k >= 12 + 6)
					memcpy((uint8_t *)iov[i].iov_base + 12, vnet_dev_mac(td->dev), 6);
				left -= k;
			}
			if (n > 0)
				vnet_dev_rx_commit(td->dev, plen);
		}
		vnet_dev_rx_flush(td->dev);
		assert_changes_logged(td, snap, &l);
	}
	assert_true(vnet_dev_queue(td->dev, RXQ)->stats.packets > 60);
	assert_true(vnet_dev_queue(td->dev, RXQ)->stats.rx_direct > 0);
	assert_true(vnet_dev_queue(td->dev, TXQ)->stats.packets > 30);
	free(snap);
	td_free(td);
}

/* ---- the device state stream ---- */

static struct test_dev *state_dev(void)
{
	struct vnet_dev_params p;
	struct test_dev *td;

	td_default_params(&p, 2);
	td = td_create(&p, TD_BASE_FEATURES | F(MQ) | F(CTRL_RX) | F(CTRL_MAC_ADDR));
	assert_non_null(td);
	return td;
}

static void test_state_round_trip(void **state)
{
	struct test_dev *a = state_dev(), *b = state_dev();
	static uint8_t buf[VNET_STATE_MAX], buf2[VNET_STATE_MAX];
	const struct coal_params host_rx = {16, 300};
	uint8_t mq[4] = {VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, 2, 0};
	uint8_t allmulti[3] = {VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, 1};
	uint8_t table[2 + 4 + 6 + 4 + 12] = {VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET};
	const char *why;
	size_t n;

	(void)state;
	td_start_queues(a, 64); /* VQ_SET needs enabled queues */
	assert_int_equal(td_coal_cmd(a, VIRTIO_NET_CTRL_NOTF_COAL_TX_SET, 8, 50), VIRTIO_NET_OK);
	assert_int_equal(vnet_dev_host_coalesce(a->dev, -1, VNET_QUEUE_RX, &host_rx), 0);
	assert_int_equal(td_vq_set(a, 2, 4, 77), VIRTIO_NET_OK); /* RX queue of pair 1 */
	assert_int_equal(td_exec(a, mq, sizeof(mq)), VIRTIO_NET_OK);
	assert_int_equal(td_exec(a, allmulti, sizeof(allmulti)), VIRTIO_NET_OK);
	put_le32(table + 2, 1);
	memcpy(table + 6, (uint8_t[6]){0x02, 1, 2, 3, 4, 5}, 6);
	put_le32(table + 12, 2);
	assert_int_equal(td_exec(a, table, sizeof(table)), VIRTIO_NET_OK);
	n = vnet_dev_state_save(a->dev, buf, sizeof(buf));
	assert_true(n > 62 && n < VNET_STATE_MAX);
	assert_memory_equal(buf, "VNDS", 4);

	/* The destination: a fresh device; the stream applies, and saves back identically. */
	assert_int_equal(vnet_dev_state_load(b->dev, buf, n, &why), 0);
	assert_int_equal(vnet_dev_state_save(b->dev, buf2, sizeof(buf2)), n);
	assert_memory_equal(buf, buf2, n);
	assert_int_equal(vnet_dev_active_pairs(b->dev), 2);
	assert_int_equal(vnet_dev_queue(b->dev, 0)->coal.params.max_usecs, 300);
	assert_int_equal(vnet_dev_queue(b->dev, 0)->coal.setter, COAL_SET_HOST);
	assert_int_equal(vnet_dev_queue(b->dev, 1)->coal.params.max_usecs, 50);
	assert_int_equal(vnet_dev_queue(b->dev, 1)->coal.setter, COAL_SET_GUEST);
	assert_int_equal(vnet_dev_queue(b->dev, 2)->coal.params.max_usecs, 77);

	/* Rings set up while disabled (what a destination does) keep the migrated values. */
	td_start_queues(b, 64);
	assert_int_equal(vnet_dev_queue(b->dev, 2)->coal.params.max_usecs, 77);
	assert_int_equal(vnet_dev_queue(b->dev, 2)->coal.params.max_packets, 4);
	assert_int_equal(vnet_dev_queue(b->dev, 1)->coal.setter, COAL_SET_GUEST);
	td_free(a);
	td_free(b);
}

static void test_state_owed_notification(void **state)
{
	struct test_dev *a = state_dev(), *b = state_dev();
	static uint8_t buf[VNET_STATE_MAX];
	const char *why;
	size_t n;

	(void)state;
	vnet_dev_queue(a->dev, TXQ)->coal.pending = 3; /* completions held at the stop */
	n = vnet_dev_state_save(a->dev, buf, sizeof(buf));
	assert_int_equal(vnet_dev_state_load(b->dev, buf, n, &why), 0);
	td_start_queues(b, 64);
	assert_int_equal(b->notifies[TXQ], 1); /* notified once at enable */
	assert_int_equal(b->notifies[RXQ], 0);
	td_free(a);
	td_free(b);
}

/* An adaptive queue migrates with its level; the destination's controller goes on from it. */
static void test_state_adaptive_queue(void **state)
{
	struct test_dev *a = state_dev(), *b = state_dev();
	static uint8_t buf[VNET_STATE_MAX], buf2[VNET_STATE_MAX];
	struct vnet_queue *qa = vnet_dev_queue(a->dev, TXQ), *qb = vnet_dev_queue(b->dev, TXQ);
	const char *why;
	size_t n;

	(void)state;
	assert_int_equal(vnet_dev_host_adaptive(a->dev, TXQ, VNET_QUEUE_TX, true), 0);
	qa->adapt.level = 3; /* as if the controller had got there */
	coal_set_params(&qa->coal, coal_adapt_profile(3), COAL_SET_ADAPTIVE);
	n = vnet_dev_state_save(a->dev, buf, sizeof(buf));
	assert_int_equal(vnet_dev_state_load(b->dev, buf, n, &why), 0);
	assert_true(qb->adapt.on);
	assert_int_equal(qb->adapt.level, 3);
	assert_int_equal(qb->coal.setter, COAL_SET_ADAPTIVE);
	assert_int_equal(vnet_dev_state_save(b->dev, buf2, sizeof(buf2)), n);
	assert_memory_equal(buf, buf2, n);
	td_start_queues(b, 64);
	assert_true(qb->adapt.on);
	assert_int_equal(qb->coal.params.max_usecs, coal_adapt_profile(3)->max_usecs);
	/* "Adaptive" with values that are no level's is refused. */
	put_le32(buf + 62 + TXQ * 10 + 6, 12345);
	assert_int_equal(vnet_dev_state_load(a->dev, buf, n, &why), -1);
	assert_string_equal(why, "bad queue coalescing state");
	td_free(a);
	td_free(b);
}

static void test_state_hostile(void **state)
{
	struct test_dev *a = state_dev(), *b = state_dev(), *one;
	static uint8_t buf[VNET_STATE_MAX], bad[VNET_STATE_MAX], before[VNET_STATE_MAX];
	struct vnet_dev_params p;
	const char *why;
	size_t n, nb;
	static const struct {
		size_t off;
		uint8_t val;
		const char *what;
	} flips[] = {
		{0, 'X', "magic"},         {4, 3, "version"},      {6, 9, "nqueues"},
		{8, 3, "pairs"},           {10, 0, "active 0"},    {10, 3, "active > pairs"},
		{19, 65, "n_uc > 64"},     {21, 1, "reserved"},    {22, 2, "kind set"},
		{23, 1, "host set by guest"}, {23 + 10 * 2, 0, "kind set by none"},
		{62, 3, "queue setter"},   {63, 2, "queue flags"},
	};

	(void)state;
	assert_int_equal(td_coal_cmd(a, VIRTIO_NET_CTRL_NOTF_COAL_RX_SET, 8, 50), VIRTIO_NET_OK);
	n = vnet_dev_state_save(a->dev, buf, sizeof(buf));
	nb = vnet_dev_state_save(b->dev, before, sizeof(before));
	for (unsigned i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
		memcpy(bad, buf, n);
		bad[flips[i].off] = flips[i].val;
		assert_int_equal(vnet_dev_state_load(b->dev, bad, n, &why), -1);
	}
	/* Unset values must be zero; values with setter "none" too. */
	memcpy(bad, buf, n);
	bad[22 + 10 + 5] = 1; /* host TX: unset, yet a value */
	assert_int_equal(vnet_dev_state_load(b->dev, bad, n, &why), -1);
	for (size_t len = 0; len < n + 8; len++)
		if (len != n)
			assert_int_equal(vnet_dev_state_load(b->dev, buf, len, &why), -1);
	/* Nothing of it was applied. */
	assert_int_equal(vnet_dev_state_save(b->dev, bad, sizeof(bad)), nb);
	assert_memory_equal(bad, before, nb);
	/* A device with other queues refuses it; a running one too. */
	td_default_params(&p, 1);
	one = td_create(&p, TD_BASE_FEATURES);
	assert_int_equal(vnet_dev_state_load(one->dev, buf, n, &why), -1);
	td_start_queues(one, 64);
	n = vnet_dev_state_save(one->dev, buf, sizeof(buf));
	assert_int_equal(vnet_dev_state_load(one->dev, buf, n, &why), -1);
	assert_string_equal(why, "device state loaded into a running device");
	td_free(one);
	td_free(a);
	td_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpa_bits),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_host_translation),
		cmocka_unit_test_teardown(test_rx_logs_buffer_and_used, td_cleanup),
		cmocka_unit_test_teardown(test_rx_mergeable_logs_every_buffer, td_cleanup),
		cmocka_unit_test(test_log_before_driver_reuses_descriptor),
		cmocka_unit_test_teardown(test_tx_logs_only_used_ring, td_cleanup),
		cmocka_unit_test_teardown(test_ctrl_logs_ack, td_cleanup),
		cmocka_unit_test_teardown(test_logging_off_costs_nothing, td_cleanup),
		cmocka_unit_test_teardown(test_every_write_logged, td_cleanup),
		cmocka_unit_test_teardown(test_state_round_trip, td_cleanup),
		cmocka_unit_test_teardown(test_state_owed_notification, td_cleanup),
		cmocka_unit_test_teardown(test_state_adaptive_queue, td_cleanup),
		cmocka_unit_test_teardown(test_state_hostile, td_cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
