/* SPDX-License-Identifier: MIT */
/* test_vq_in_order.c - VIRTIO_F_IN_ORDER, packed and split: batched used writes, violations. */
#include "vq_packed_driver.h"

/* ---- IN_ORDER ---- */

/* A packed queue restarted with IN_ORDER on TX (batch_used) and n one-slot buffers, ids 0..n-1. */
static void pd_in_order_tx(struct pd *p, uint16_t n)
{
	vq_stop(&p->vq);
	p->vq.in_order = p->vq.batch_used = true;
	pd_start(p);
	for (uint16_t i = 0; i < n; i++)
		pd_add1(p, i, 64, false);
}

/*
 * The first three buffers, published: one used descriptor at the batch's first slot with the
 * last buffer's id (2) and length 0, the next slot untouched; the driver skips the batch.
 */
static void expect_one_descriptor_for_three(struct pd *p)
{
	uint16_t id;
	uint32_t len;

	assert_int_equal(p->ring[0].id, 2);
	assert_int_equal(p->ring[0].flags & (F_AVAIL | F_USED), F_AVAIL | F_USED);
	assert_int_equal(p->ring[1].flags & (F_AVAIL | F_USED), F_AVAIL); /* untouched */
	assert_true(pd_get_used(p, &id, &len, NULL));
	assert_int_equal(id, 2);
	assert_int_equal(len, 0);
	p->used = 3; /* the driver skips the batch (Linux: ids up to the last) */
	assert_int_equal(vq_get_base(&p->vq), 0x80038003u);
}

static void test_in_order_batch_one_descriptor(void **state)
{
	struct pd *p = *state;

	pd_in_order_tx(p, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
		vq_push(&p->vq, p->chain.head, 0);
	}
	vq_publish(&p->vq);
	expect_one_descriptor_for_three(p);
}

/*
 * vq_push_last() (a TX burst completed at once): the same one used descriptor as three
 * vq_push(); and vq_pop_as() of another layout than the queue's takes the slow path and gets
 * the same buffers (a packed queue with a buffer given back is off its fast path until caught up).
 */
static void test_in_order_push_last_packed(void **state)
{
	struct pd *p = *state;

	pd_in_order_tx(p, 4);
	assert_int_equal(vq_pop_as(&p->vq, &p->chain, VQ_FAST_SPLIT, false), 1); /* not its layout */
	assert_int_equal(p->chain.head, 0);
	assert_int_equal(vq_pop_as(&p->vq, &p->chain, VQ_FAST_PACKED, false), 1);
	assert_int_equal(vq_pop_as(&p->vq, &p->chain, VQ_FAST_PACKED, false), 1);
	assert_int_equal(p->chain.head, 2);
	vq_unpop(&p->vq, 1); /* off the fast path until 2 is popped again */
	assert_int_equal(vq_pop_as(&p->vq, &p->chain, VQ_FAST_PACKED, false), 1);
	assert_int_equal(p->chain.head, 2);
	vq_push_last(&p->vq, p->chain.head, 3);
	vq_publish(&p->vq);
	expect_one_descriptor_for_three(p);
	/* The fourth is still there, on the fast path again. */
	assert_int_equal(vq_pop_as(&p->vq, &p->chain, VQ_FAST_PACKED, false), 1);
	assert_int_equal(p->chain.head, 3);
}

/* Split ring with IN_ORDER: a hand-made table, heads offered directly. */
struct sx {
	struct fake_mem mem;
	struct fake_vq fq;
	struct virtqueue vq;
	struct vq_chain chain;
	uint64_t data;
};

static struct sx *sx_new(bool batch)
{
	struct sx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	fake_mem_init(&x->mem, MEM_GPA, MEM_SIZE, false);
	fake_vq_init(&x->fq, &x->mem, 8);
	x->data = fake_mem_alloc(&x->mem, 0x1000, 64);
	fake_vq_setup_virtqueue(&x->fq, &x->vq);
	x->vq.in_order = true;
	x->vq.batch_used = batch;
	assert_int_equal(vq_start(&x->vq, &x->mem.gm), 0);
	for (unsigned i = 0; i < 8; i++) {
		x->fq.desc[i].addr = x->data + 64 * i;
		x->fq.desc[i].len = 64;
		x->fq.desc[i].flags = 0;
	}
	return x;
}

static void sx_free(struct sx *x)
{
	vq_reset(&x->vq);
	fake_vq_destroy(&x->fq);
	fake_mem_free(&x->mem);
	free(x);
}

static void test_split_in_order_batch_one_used_entry(void **state)
{
	struct sx *x = sx_new(true);
	uint32_t id, len;

	(void)state;
	/* Heads 0, 1 and the chain 2 -> 3: ring order. */
	x->fq.desc[2].flags = VRING_DESC_F_NEXT;
	x->fq.desc[2].next = 3;
	fake_vq_add_head(&x->fq, 0);
	fake_vq_add_head(&x->fq, 1);
	fake_vq_add_head(&x->fq, 2);
	fake_vq_publish(&x->fq);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(vq_pop(&x->vq, &x->chain), 1);
		vq_push(&x->vq, x->chain.head, 0);
	}
	vq_publish(&x->vq);
	assert_int_equal(fake_vq_used_idx(&x->fq), 3);
	/* One entry, where the driver looks first: the last buffer's head. */
	assert_int_equal(x->fq.used->ring[0].id, 2);
	assert_int_equal(x->fq.used->ring[1].id, 0); /* never written */
	fake_vq_add_head(&x->fq, 4);
	fake_vq_publish(&x->fq);
	assert_int_equal(vq_pop(&x->vq, &x->chain), 1);
	assert_false(x->vq.broken);
	(void)id;
	(void)len;
	sx_free(x);
}

/* vq_push_last() on a split IN_ORDER ring: one entry, the last head, the index past all. */
static void test_split_in_order_push_last(void **state)
{
	struct sx *x = sx_new(true);

	(void)state;
	for (uint16_t h = 0; h < 3; h++)
		fake_vq_add_head(&x->fq, h);
	fake_vq_publish(&x->fq);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(vq_pop_as(&x->vq, &x->chain, VQ_FAST_SPLIT_IN_ORDER, false), 1);
		assert_int_equal(x->chain.head, i);
	}
	vq_push_last(&x->vq, x->chain.head, 3);
	vq_publish(&x->vq);
	assert_int_equal(fake_vq_used_idx(&x->fq), 3);
	assert_int_equal(x->fq.used->ring[0].id, 2);
	assert_int_equal(x->fq.used->ring[0].len, 0);
	assert_int_equal(x->fq.used->ring[1].id, 0); /* never written */
	/* Heads 3 and 4 next, the first through vq_pop_as() of the wrong layout (slow path). */
	fake_vq_add_head(&x->fq, 3);
	fake_vq_add_head(&x->fq, 4);
	fake_vq_publish(&x->fq);
	assert_int_equal(vq_pop_as(&x->vq, &x->chain, VQ_FAST_PACKED, false), 1);
	assert_int_equal(x->chain.head, 3);
	assert_int_equal(vq_pop_as(&x->vq, &x->chain, VQ_FAST_SPLIT_IN_ORDER, false), 1);
	assert_int_equal(x->chain.head, 4);
	vq_push_last(&x->vq, x->chain.head, 2);
	vq_publish(&x->vq);
	assert_int_equal(fake_vq_used_idx(&x->fq), 5);
	assert_int_equal(x->fq.used->ring[3].id, 4);
	assert_false(x->vq.broken);
	sx_free(x);
}

static void test_split_in_order_violation_breaks(void **state)
{
	struct sx *x = sx_new(false);

	(void)state;
	fake_vq_add_head(&x->fq, 0);
	fake_vq_add_head(&x->fq, 2); /* 1 expected */
	fake_vq_publish(&x->fq);
	assert_int_equal(vq_pop(&x->vq, &x->chain), 1);
	assert_int_equal(vq_pop(&x->vq, &x->chain), -1);
	assert_true(x->vq.broken);
	sx_free(x);
}

static void test_split_in_order_chain_out_of_order_breaks(void **state)
{
	struct sx *x = sx_new(false);

	(void)state;
	x->fq.desc[0].flags = VRING_DESC_F_NEXT;
	x->fq.desc[0].next = 5; /* 1 expected */
	fake_vq_add_head(&x->fq, 0);
	fake_vq_publish(&x->fq);
	assert_int_equal(vq_pop(&x->vq, &x->chain), -1);
	assert_true(x->vq.broken);
	sx_free(x);
}

static void test_split_in_order_unpop_expects_same_head(void **state)
{
	struct sx *x = sx_new(false);

	(void)state;
	fake_vq_add_head(&x->fq, 0);
	fake_vq_add_head(&x->fq, 1);
	fake_vq_publish(&x->fq);
	assert_int_equal(vq_pop(&x->vq, &x->chain), 1);
	assert_int_equal(vq_pop(&x->vq, &x->chain), 1);
	vq_unpop(&x->vq, 2);
	assert_int_equal(vq_pop(&x->vq, &x->chain), 1);
	assert_int_equal(x->chain.head, 0);
	assert_int_equal(vq_pop(&x->vq, &x->chain), 1);
	assert_false(x->vq.broken);
	sx_free(x);
}

/*
 * A driver that rewrites an avail entry after the device took it: vq_unpop() reads the head
 * to expect again from the ring, so a value >= num must not become the head IN_ORDER expects
 * (the fast pop trusts io_next to be below num). A descriptor-shaped buffer sits where the
 * table would continue, so a read beyond the table shows as a chain, not as zeros.
 */
static void test_split_in_order_unpop_after_rewrite_stays_in_table(void **state)
{
	struct sx *x = sx_new(false);
	const uint16_t bad = 64; /* beyond the 8-entry table, inside the fake memory */
	struct vring_desc *beyond = (struct vring_desc *)fake_mem_host(&x->mem, x->fq.desc_gpa) + bad;

	(void)state;
	assert_true(x->fq.desc_gpa + 16ull * (bad + 1) <= fake_mem_end_gpa(&x->mem));
	beyond->addr = x->data;
	beyond->len = 64;
	beyond->flags = 0;
	fake_vq_add_head(&x->fq, 0);
	fake_vq_add_head(&x->fq, 1);
	fake_vq_publish(&x->fq);
	assert_int_equal(vq_pop(&x->vq, &x->chain), 1);
	x->fq.avail->ring[0] = bad; /* the driver rewrites the entry the device popped */
	vq_unpop(&x->vq, 1);
	assert_int_equal(vq_pop(&x->vq, &x->chain), -1);
	assert_true(x->vq.broken);
	sx_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_in_order_batch_one_descriptor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_in_order_push_last_packed, setup, teardown),
		cmocka_unit_test(test_split_in_order_batch_one_used_entry),
		cmocka_unit_test(test_split_in_order_push_last),
		cmocka_unit_test(test_split_in_order_violation_breaks),
		cmocka_unit_test(test_split_in_order_chain_out_of_order_breaks),
		cmocka_unit_test(test_split_in_order_unpop_expects_same_head),
		cmocka_unit_test(test_split_in_order_unpop_after_rewrite_stays_in_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
