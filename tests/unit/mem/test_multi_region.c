/* SPDX-License-Identifier: MIT */
/* test_multi_region.c - buffers straddling adjacent guest memory regions: walker, TX and RX. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "lib/virtio_net_defs.h"
#include "virtq/virtq.h"
#include "dev/dev.h"

#define MEM_GPA 0x40000ull
#define MEM_SIZE (2u << 20)
#define HDR 12u
#define RXQ 0
#define TXQ 1

/* ---- helpers ---- */

/* Copy to / from guest memory byte by byte (a range may straddle the regions). */
static void gpa_write(struct fake_mem *m, uint64_t gpa, const void *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		*(uint8_t *)fake_mem_host(m, gpa + i) = ((const uint8_t *)src)[i];
}

static void gpa_read(struct fake_mem *m, uint64_t gpa, void *dst, size_t len)
{
	for (size_t i = 0; i < len; i++)
		((uint8_t *)dst)[i] = *(const uint8_t *)fake_mem_host(m, gpa + i);
}

/* GPA of the first byte of the second region (FAKE_MEM_ADJACENT: right after the first). */
static uint64_t boundary(const struct fake_mem *m)
{
	return m->gpa + m->size / 2;
}

/* The FAKE_HOST_GAP bytes between the regions' host memory still hold their 0xdb poison. */
static void assert_host_gap_untouched(const struct fake_mem *m)
{
	for (unsigned i = 0; i < FAKE_HOST_GAP; i++)
		assert_int_equal(m->buf[m->size / 2 + i], 0xdb);
}

static void fill_pattern(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + 1);
}

/* ---- the walker on a fake memory of two adjacent regions ---- */

struct fx {
	struct fake_mem mem;
	struct fake_vq fq;
	struct virtqueue vq;
	struct vq_chain chain;
};

static struct fx *fx_new(enum fake_mem_layout layout)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fake_mem_init_layout(&f->mem, MEM_GPA, MEM_SIZE, layout);
	fake_vq_init(&f->fq, &f->mem, 16);
	fake_vq_setup_virtqueue(&f->fq, &f->vq);
	f->vq.indirect = true;
	assert_int_equal(vq_start(&f->vq, &f->mem.gm), 0);
	return f;
}

static void fx_free(struct fx *f)
{
	fake_vq_destroy(&f->fq);
	fake_mem_free(&f->mem);
	free(f);
}

static enum vq_walk_error walk(struct fx *f, int head)
{
	return vq_walk_chain(&f->mem.gm, f->fq.desc, f->fq.num, (unsigned)head, true, &f->chain);
}

static void test_walk_splits_buffer_straddling_adjacent_regions(void **state)
{
	struct fx *f = fx_new(FAKE_MEM_ADJACENT);
	uint64_t gpa = fake_mem_alloc_straddling(&f->mem, 100, 30);
	struct fake_buf b[2] = {{gpa, 100, false}, {fake_mem_alloc(&f->mem, 50, 8), 50, true}};
	const struct vq_chain *c = &f->chain;

	(void)state;
	assert_int_equal(walk(f, fake_vq_add_chain(&f->fq, b, 2)), VQ_WALK_OK);
	assert_int_equal(c->nread, 2);
	assert_int_equal(c->nwrite, 1);
	assert_int_equal(c->read_len, 100);
	assert_int_equal(c->write_len, 50);
	assert_ptr_equal(c->iov[0].iov_base, fake_mem_host(&f->mem, gpa));
	assert_int_equal(c->iov[0].iov_len, 30);
	assert_ptr_equal(c->iov[1].iov_base, fake_mem_host(&f->mem, gpa + 30));
	assert_int_equal(c->iov[1].iov_len, 70);
	/* The regions are not contiguous in host memory: one iovec could not have covered it. */
	assert_ptr_not_equal(c->iov[1].iov_base, (uint8_t *)c->iov[0].iov_base + 30);
	assert_ptr_equal(c->iov[2].iov_base, fake_mem_host(&f->mem, b[1].gpa));
	fx_free(f);
}

static void test_walk_splits_straddling_buffer_of_indirect_table(void **state)
{
	struct fx *f = fx_new(FAKE_MEM_ADJACENT);
	uint64_t gpa = fake_mem_alloc_straddling(&f->mem, 1526, 1000);
	struct fake_buf b = {gpa, 1526, true};
	const struct vq_chain *c = &f->chain;

	(void)state;
	assert_int_equal(walk(f, fake_vq_add_indirect(&f->fq, &b, 1)), VQ_WALK_OK);
	assert_int_equal(c->nread, 0);
	assert_int_equal(c->nwrite, 2);
	assert_int_equal(c->write_len, 1526);
	assert_int_equal(c->iov[0].iov_len, 1000);
	assert_int_equal(c->iov[1].iov_len, 526);
	assert_ptr_equal(c->iov[1].iov_base, fake_mem_host(&f->mem, boundary(&f->mem)));
	fx_free(f);
}

static void test_walk_iovecs_bounded_by_chain_capacity(void **state)
{
	struct fx *f = fx_new(FAKE_MEM_ADJACENT);
	uint64_t gpa = fake_mem_alloc_straddling(&f->mem, 16, 8);
	const unsigned n = VQ_MAX_CHAIN / 2; /* each buffer takes two iovecs */
	struct fake_buf *b = calloc(n + 1, sizeof(*b));
	int head;

	(void)state;
	assert_non_null(b);
	for (unsigned i = 0; i <= n; i++)
		b[i] = (struct fake_buf){gpa, 16, false};
	/* Exactly VQ_MAX_CHAIN iovecs fit... */
	assert_int_equal(walk(f, fake_vq_add_indirect(&f->fq, b, n)), VQ_WALK_OK);
	assert_int_equal(f->chain.nread, VQ_MAX_CHAIN);
	assert_int_equal(f->chain.read_len, 16ull * n);
	/* ...one more buffer does not, though the chain has far fewer descriptors than allowed. */
	head = fake_vq_add_indirect(&f->fq, b, n + 1);
	assert_int_equal(walk(f, head), VQ_WALK_TOO_MANY_IOV);
	assert_string_equal(vq_walk_error_str(VQ_WALK_TOO_MANY_IOV),
			    "chain split into more than 1024 pieces of guest memory");
	/* vq_pop() stops the queue on it like on any other walk error. */
	fake_vq_publish(&f->fq);
	assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	assert_int_equal(vq_pop(&f->vq, &f->chain), -1);
	assert_true(f->vq.broken);
	free(b);
	fx_free(f);
}

static void test_walk_buffer_into_a_gap_or_past_the_end_is_bad_addr(void **state)
{
	struct fx *f = fx_new(FAKE_MEM_GAP);
	struct fake_buf into_gap = {MEM_GPA + MEM_SIZE / 2 - 8, 16, false};
	struct fake_buf past_end = {fake_mem_end_gpa(&f->mem) - 8, 16, true};
	struct fake_buf ok = {0, 64, false};

	(void)state;
	assert_int_equal(walk(f, fake_vq_add_chain(&f->fq, &into_gap, 1)), VQ_WALK_BAD_ADDR);
	assert_int_equal(walk(f, fake_vq_add_chain(&f->fq, &past_end, 1)), VQ_WALK_BAD_ADDR);
	fx_free(f);
	/* Adjacent regions: the end of the second one is still the end. */
	f = fx_new(FAKE_MEM_ADJACENT);
	past_end.gpa = fake_mem_end_gpa(&f->mem) - 8;
	assert_int_equal(walk(f, fake_vq_add_chain(&f->fq, &past_end, 1)), VQ_WALK_BAD_ADDR);
	/* And a broken chain breaks the queue after the good one before it. */
	ok.gpa = fake_mem_alloc(&f->mem, 64, 8);
	fake_vq_add_chain(&f->fq, &ok, 1);
	fake_vq_add_chain(&f->fq, &past_end, 1);
	fake_vq_publish(&f->fq);
	f->vq.last_avail = 1; /* skip the chain walked above */
	assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	assert_int_equal(vq_pop(&f->vq, &f->chain), -1);
	assert_true(f->vq.broken);
	fx_free(f);
}

static void test_rings_and_indirect_tables_must_not_straddle(void **state)
{
	struct fx *f = fx_new(FAKE_MEM_ADJACENT);
	uint64_t area = fake_mem_alloc_straddling(&f->mem, 512, 256);
	struct fake_buf b = {fake_mem_alloc(&f->mem, 64, 8), 64, false};
	struct virtqueue vq;
	int head;

	(void)state;
	/* A descriptor ring across the boundary: refused at start. */
	memset(&vq, 0, sizeof(vq));
	fake_vq_setup_virtqueue(&f->fq, &vq);
	vq.desc_addr = area + 128; /* 16 entries of 16 bytes: 128 on each side */
	assert_int_equal(vq_start(&vq, &f->mem.gm), -1);
	vq.desc_addr = area + 256; /* the same ring just after the boundary is fine */
	assert_int_equal(vq_start(&vq, &f->mem.gm), 0);
	/* An indirect table across the boundary: a bad indirect table. */
	head = fake_vq_add_indirect(&f->fq, &b, 1);
	gpa_write(&f->mem, area + 256 - 8, fake_mem_host(&f->mem, f->fq.desc[head].addr), 16);
	f->fq.desc[head].addr = area + 256 - 8;
	assert_int_equal(walk(f, head), VQ_WALK_BAD_INDIRECT);
	fx_free(f);
}

/* ---- TX and RX through a device whose guest memory is two adjacent regions ---- */

static struct test_dev *td_two_regions(enum fake_mem_layout layout, uint64_t features)
{
	struct vnet_dev_params p;
	struct test_dev *td;

	td_default_params(&p, 1);
	td = td_create(&p, features);
	td_set_mem_layout(td, layout);
	td_start_queues(td, 256);
	return td;
}

/* Send the packet at `gpa` (already in guest memory) as one descriptor; true if it was sent. */
static bool tx_one(struct test_dev *td, uint64_t gpa, uint32_t len, bool indirect)
{
	struct fake_buf b = {gpa, len, false};
	unsigned npkts = td->npkts;

	if (indirect)
		fake_vq_add_indirect(&td->vq[TXQ], &b, 1);
	else
		fake_vq_add_chain(&td->vq[TXQ], &b, 1);
	fake_vq_publish(&td->vq[TXQ]);
	vnet_dev_kick(td->dev, TXQ);
	while (fake_vq_get_used(&td->vq[TXQ], NULL, NULL))
		;
	return td->npkts == npkts + 1;
}

static void test_tx_packet_straddling_regions_reaches_backend_intact(void **state)
{
	struct test_dev *td = td_two_regions(FAKE_MEM_ADJACENT, TD_BASE_FEATURES);
	uint64_t s = boundary(&td->mem);
	const uint64_t at[3] = {s - 5, s - HDR - 100, s - 1}; /* header split, data split, 1 byte */
	uint8_t pkt[HDR + 300] = {0};

	(void)state;
	assert_int_equal(fake_mem_alloc_straddling(&td->mem, 4096, 2048), s - 2048);
	for (unsigned i = 0; i < 3; i++) {
		fill_pattern(pkt + HDR, 300, i);
		gpa_write(&td->mem, at[i], pkt, sizeof(pkt));
		assert_true(tx_one(td, at[i], sizeof(pkt), i == 2));
		assert_int_equal(td->pkts[i].len, sizeof(pkt));
		assert_memory_equal(td->pkts[i].data, pkt, sizeof(pkt));
	}
	assert_false(vnet_dev_queue(td->dev, TXQ)->vq.broken);
	assert_int_equal(vnet_dev_queue(td->dev, TXQ)->stats.packets, 3);
	assert_int_equal(vnet_dev_queue(td->dev, TXQ)->stats.dropped, 0);
	td_free(td);
}

static void test_tx_chain_of_max_iovecs_reaches_backend_intact(void **state)
{
	struct test_dev *td = td_two_regions(FAKE_MEM_ADJACENT, TD_BASE_FEATURES);
	const unsigned n = VQ_MAX_CHAIN / 2;
	uint64_t gpa = fake_mem_alloc_straddling(&td->mem, 16, 8);
	uint8_t piece[16] = {0, 0}, *want = calloc(n, 16);
	struct fake_buf *b = calloc(n, sizeof(*b));

	(void)state;
	assert_non_null(want);
	assert_non_null(b);
	/* Every descriptor is the same 16 straddling bytes: a header-looking start, then data. */
	fill_pattern(piece + 2, 14, 9);
	gpa_write(&td->mem, gpa, piece, 16);
	for (unsigned i = 0; i < n; i++) {
		b[i] = (struct fake_buf){gpa, 16, false};
		memcpy(want + 16 * i, piece, 16);
	}
	want[10] = want[11] = 0; /* num_buffers: the device zeroes it */
	fake_vq_add_indirect(&td->vq[TXQ], b, n);
	fake_vq_publish(&td->vq[TXQ]);
	vnet_dev_kick(td->dev, TXQ);
	/* 1024 guest iovecs (the header's own iovec replaces the first two): all arrive. */
	assert_int_equal(td->npkts, 1);
	assert_int_equal(td->pkts[0].len, 16 * n);
	assert_memory_equal(td->pkts[0].data, want, 16 * n);
	assert_false(vnet_dev_queue(td->dev, TXQ)->vq.broken);
	free(want);
	free(b);
	td_free(td);
}

static void test_rx_buffer_straddling_regions_is_filled_intact(void **state)
{
	struct test_dev *td =
	    td_two_regions(FAKE_MEM_ADJACENT, TD_BASE_FEATURES | BIT_ULL(VIRTIO_NET_F_MRG_RXBUF));
	uint64_t s = boundary(&td->mem);
	const uint64_t at[2] = {s - 7, s - HDR - 500}; /* header split, frame split */
	uint8_t got[HDR + 1000 + 1], pre[2048];
	uint32_t len;

	(void)state;
	assert_true(td->features & BIT_ULL(VIRTIO_NET_F_MRG_RXBUF));
	assert_int_equal(fake_mem_alloc_straddling(&td->mem, 4096, 2048), s - 2048);
	memset(pre, 0xcc, sizeof(pre));
	for (unsigned i = 0; i < 2; i++) {
		struct fake_buf b = {at[i], 1600, true};

		gpa_write(&td->mem, at[i], pre, 1600);
		fake_vq_add_chain(&td->vq[RXQ], &b, 1);
		fake_vq_publish(&td->vq[RXQ]);
		assert_int_equal(td_receive(td, 1000, (uint8_t)(0x40 + i)), 1);
		assert_true(fake_vq_get_used(&td->vq[RXQ], NULL, &len));
		assert_int_equal(len, HDR + 1000);
		gpa_read(&td->mem, at[i], got, sizeof(got));
		assert_int_equal(got[0], 0);		 /* flags */
		assert_int_equal(got[1], 0);		 /* gso_type */
		assert_int_equal(get_le16(got + 10), 1); /* num_buffers */
		assert_memory_equal(got + HDR, vnet_dev_mac(td->dev), 6);
		for (unsigned j = 14; j < 1000; j++)
			assert_int_equal(got[HDR + j], 0x40 + i);
		assert_int_equal(got[HDR + 1000], 0xcc); /* nothing past the packet */
	}
	assert_host_gap_untouched(&td->mem);
	assert_false(vnet_dev_queue(td->dev, RXQ)->vq.broken);
	td_free(td);
}

static void test_tx_buffer_crossing_into_a_gap_breaks_queue_cleanly(void **state)
{
	struct test_dev *td = td_two_regions(FAKE_MEM_GAP, TD_BASE_FEATURES);
	uint64_t good = fake_mem_alloc(&td->mem, HDR + 64, 8);
	struct fake_buf b[2] = {{good, HDR + 64, false}, {MEM_GPA, 0, false}};

	(void)state;
	/* The last 20 bytes of the first region, then the gap. */
	b[1].gpa = td->mem.gpa + td->mem.size / 2 - 20;
	b[1].len = HDR + 100;
	fake_vq_add_chain(&td->vq[TXQ], &b[0], 1);
	fake_vq_add_chain(&td->vq[TXQ], &b[1], 1);
	fake_vq_publish(&td->vq[TXQ]);
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(td->npkts, 1); /* the good one before it went */
	assert_true(vnet_dev_queue(td->dev, TXQ)->vq.broken);
	assert_int_equal(fake_vq_used_idx(&td->vq[TXQ]), 1);
	/* The other queues go on. */
	td_post_rx(td, RXQ, 1, 1600);
	assert_int_equal(td_receive(td, 100, 1), 1);
	assert_int_equal(fake_vq_used_idx(&td->vq[RXQ]), 1);
	td_free(td);
}

#define T(fn) cmocka_unit_test_teardown(fn, td_cleanup)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_walk_splits_buffer_straddling_adjacent_regions),
	    cmocka_unit_test(test_walk_splits_straddling_buffer_of_indirect_table),
	    cmocka_unit_test(test_walk_iovecs_bounded_by_chain_capacity),
	    cmocka_unit_test(test_walk_buffer_into_a_gap_or_past_the_end_is_bad_addr),
	    cmocka_unit_test(test_rings_and_indirect_tables_must_not_straddle),
	    T(test_tx_packet_straddling_regions_reaches_backend_intact),
	    T(test_tx_chain_of_max_iovecs_reaches_backend_intact),
	    T(test_rx_buffer_straddling_regions_is_filled_intact),
	    T(test_tx_buffer_crossing_into_a_gap_breaks_queue_cleanly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
