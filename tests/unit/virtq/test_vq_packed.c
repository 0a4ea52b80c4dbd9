/* SPDX-License-Identifier: MIT */
/* test_vq_packed.c - packed virtqueues: the walker, used write-back and the vring base. */
#include "vq_packed_driver.h"

/* ---- walker and write-back ---- */

static void test_pop_push_wraps_many_laps(void **state)
{
	struct pd *p = *state;
	uint16_t id, flags;
	uint32_t len;

	/* 23 buffers through a 5-slot ring: four laps and a bit, both wrap counters flip. */
	for (unsigned i = 0; i < 23; i++) {
		uint16_t bid = (uint16_t)(i % 5);

		pd_add1(p, bid, 60 + i, i & 1);
		assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
		assert_int_equal(p->chain.head, bid);
		assert_int_equal(p->chain.ndesc, 1);
		assert_int_equal(i & 1 ? p->chain.write_len : p->chain.read_len, 60 + i);
		vq_push(&p->vq, p->chain.head, i & 1 ? 60 + i : 0);
		vq_publish(&p->vq);
		assert_true(pd_get_used(p, &id, &len, &flags));
		assert_int_equal(id, bid);
		assert_int_equal(len, i & 1 ? 60 + i : 0);
		assert_int_equal(!!(flags & VRING_DESC_F_WRITE), i & 1);
		assert_false(pd_get_used(p, &id, &len, NULL));
	}
	assert_int_equal(vq_pop(&p->vq, &p->chain), 0);
	assert_false(p->vq.broken);
}

static void test_batch_publishes_first_flags_last(void **state)
{
	struct pd *p = *state;
	uint16_t id;
	uint32_t len;

	for (uint16_t i = 0; i < 4; i++)
		pd_add1(p, (uint16_t)(3 - i), 64, false); /* ids in any order */
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
		vq_push(&p->vq, p->chain.head, 0);
	}
	/* Pushed, not published: the driver sees nothing yet. */
	assert_false(pd_get_used(p, &id, &len, NULL));
	vq_publish(&p->vq);
	for (uint16_t i = 0; i < 4; i++) {
		assert_true(pd_get_used(p, &id, &len, NULL));
		assert_int_equal(id, 3 - i);
	}
}

static void test_chain_across_ring_end(void **state)
{
	struct pd *p = *state;
	struct fake_buf b[3] = {{p->data, 10, false}, {p->data + 100, 20, false},
				{p->data + 200, 30, true}};
	uint16_t id;
	uint32_t len;

	pd_add1(p, 0, 64, false);
	pd_add1(p, 1, 64, false);
	pd_add1(p, 2, 64, false);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
		vq_push(&p->vq, p->chain.head, 0);
	}
	vq_publish(&p->vq);
	for (int i = 0; i < 3; i++)
		assert_true(pd_get_used(p, &id, &len, NULL));
	pd_add(p, b, 3, 4); /* slots 3, 4, 0: the third with the flipped wrap */
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_int_equal(p->chain.head, 4);
	assert_int_equal(p->chain.nread, 2);
	assert_int_equal(p->chain.nwrite, 1);
	assert_int_equal(p->chain.read_len, 30);
	assert_int_equal(p->chain.write_len, 30);
	vq_push(&p->vq, 4, 30);
	vq_publish(&p->vq);
	assert_true(pd_get_used(p, &id, &len, NULL));
	assert_int_equal(id, 4);
	assert_int_equal(len, 30);
	assert_int_equal(p->used, 1); /* skipped the list's three slots */
}

static void test_indirect_table(void **state)
{
	struct pd *p = *state;
	struct fake_buf b[3] = {{p->data, 12, false}, {p->data + 100, 50, false},
				{p->data + 200, 70, true}};

	pd_add_indirect(p, b, 3, 2, 0);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_int_equal(p->chain.head, 2);
	assert_int_equal(p->chain.read_len, 62);
	assert_int_equal(p->chain.write_len, 70);
	assert_int_equal(p->chain.ndesc, 3);
	vq_push(&p->vq, 2, 0);
	vq_publish(&p->vq);
	assert_int_equal(p->vq.pk.next_slot, 1); /* an indirect list takes one slot */
}

static void test_unpop_walks_again(void **state)
{
	struct pd *p = *state;

	pd_add1(p, 3, 64, true);
	pd_add1(p, 1, 64, true);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 0);
	vq_unpop(&p->vq, 2);
	assert_true(vq_has_avail(&p->vq));
	assert_int_equal(vq_avail_idx(&p->vq), vq_avail_seen(&p->vq)); /* nothing new */
	pd_add1(p, 0, 64, true);
	assert_true(vq_avail_idx(&p->vq) != vq_avail_seen(&p->vq)); /* the driver added one */
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_int_equal(p->chain.head, 3); /* the same ids again: not "in flight" */
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_int_equal(p->chain.head, 1);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_int_equal(p->chain.head, 0);
	assert_false(p->vq.broken);
}

/*
 * vq_avail_at_least() on a packed ring, which has no avail index: buffers given back count, one
 * descriptor past the farthest position answers, across the ring end and a lap; slots in flight
 * never look available.
 */
static void test_avail_at_least_reads_one_slot(void **state)
{
	struct pd *p = *state; /* 5 slots */

	assert_false(vq_avail_at_least(&p->vq, 1));
	for (uint16_t id = 0; id < 3; id++)
		pd_add1(p, id, 64, true);
	assert_true(vq_avail_at_least(&p->vq, 3));
	assert_false(vq_avail_at_least(&p->vq, 4));
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_false(vq_avail_at_least(&p->vq, 1)); /* three in flight */
	vq_unpop(&p->vq, 2);
	assert_true(vq_avail_at_least(&p->vq, 2));
	assert_false(vq_avail_at_least(&p->vq, 3));
	pd_add1(p, 3, 64, true);
	pd_add1(p, 4, 64, true); /* slot 4, the ring's last */
	assert_true(vq_avail_at_least(&p->vq, 4));
	assert_false(vq_avail_at_least(&p->vq, 5)); /* slot 0 is in flight: the old lap's flags */
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	for (uint16_t id = 0; id < 5; id++)
		vq_push(&p->vq, id, 0);
	vq_publish(&p->vq);
	p->used = 0;
	p->used_wrap = !p->used_wrap;
	pd_add1(p, 0, 64, true); /* slot 0 of the next lap */
	pd_add1(p, 1, 64, true);
	assert_true(vq_avail_at_least(&p->vq, 2));
	assert_false(vq_avail_at_least(&p->vq, 3)); /* slot 2: used, this lap's driver has not */
	assert_false(vq_avail_at_least(&p->vq, 6));
	assert_false(p->vq.broken);
}

/*
 * Lists of several slots (Linux's "big packets" RX buffers): once one is popped, the rest are
 * counted as lists of that length, not as slots.
 */
static void test_avail_at_least_counts_lists(void **state)
{
	struct pd *p = pd_new(8, false, false);

	(void)state;
	pd_start(p);
	for (uint16_t id = 0; id < 3; id++) {
		uint64_t at = p->data + 512u * id;
		struct fake_buf b[2] = {{at, 12, true}, {at + 64, 256, true}};

		pd_add(p, b, 2, id);
	}
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_true(vq_avail_at_least(&p->vq, 2));
	assert_false(vq_avail_at_least(&p->vq, 3)); /* 4 slots: two lists, not four buffers */
	vq_unpop(&p->vq, 1);
	assert_true(vq_avail_at_least(&p->vq, 3));
	assert_false(vq_avail_at_least(&p->vq, 4));
	assert_false(p->vq.broken);
	vq_reset(&p->vq);
	fake_mem_free(&p->mem);
	free(p);
}

/*
 * Hostile: a list that takes the whole ring makes every later answer "not enough" past one list
 * (never a read beyond the ring); a driver that flips a slot it has in flight to "available"
 * only changes the answer, which is its own loss (an earlier notification withheld).
 */
static void test_avail_at_least_whole_ring_list_and_a_lie(void **state)
{
	struct pd *p = pd_new(8, false, false);
	struct fake_buf b[8];

	(void)state;
	pd_start(p);
	for (unsigned i = 0; i < 8; i++)
		b[i] = (struct fake_buf){p->data + 64u * i, 64, true};
	pd_add(p, b, 8, 0);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_int_equal(p->vq.pk.max_nslots, 8);
	assert_false(vq_avail_at_least(&p->vq, 1)); /* slot 7 of the next lap: in flight */
	assert_false(vq_avail_at_least(&p->vq, 2)); /* 16 slots: more than the ring */
	assert_false(vq_avail_at_least(&p->vq, 40000));
	p->ring[7].flags = avail_flags(p->vq.pk.next_wrap); /* the lie: this lap's AVAIL */
	assert_true(vq_avail_at_least(&p->vq, 1));
	assert_false(p->vq.broken);
	vq_reset(&p->vq);
	fake_mem_free(&p->mem);
	free(p);
}

/*
 * Records are kept per slot (a list of several slots at its first and last one): give back a
 * batch of one-slot buffers and a list across the ring end, walk them again, and publish a
 * batch that mixes both (the one-pass publish of a mixed batch).
 */
static void test_unpop_list_across_ring_end_mixed_batch(void **state)
{
	struct pd *p = *state; /* 5 slots */
	struct fake_buf b[3] = {{p->data, 10, false}, {p->data + 100, 20, false},
				{p->data + 200, 30, false}};
	uint16_t id;
	uint32_t len;

	complete(p, 2);            /* slots 0, 1 used once: the next list starts at 2 */
	pd_add1(p, 1, 64, false);  /* slot 2 */
	pd_add(p, b, 3, 4);        /* slots 3, 4, 0 (wrap flips) */
	for (int round = 0; round < 2; round++) {
		assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
		assert_int_equal(p->chain.head, 1);
		assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
		assert_int_equal(p->chain.head, 4);
		assert_int_equal(p->chain.read_len, 60);
		assert_int_equal(p->vq.pk.next_slot, 1);
		if (!round)
			vq_unpop(&p->vq, 2); /* both again: back at slot 2, same wrap */
		else
			break;
		assert_int_equal(p->vq.pk.next_slot, 2);
		assert_true(p->vq.pk.next_wrap);
	}
	/* In flight from slot 2: the base's avail half points there. */
	assert_int_equal(vq_get_base(&p->vq) & 0xffff, 0x8002u);
	vq_push(&p->vq, 1, 0);
	vq_push(&p->vq, 4, 0);
	vq_publish(&p->vq);
	assert_true(pd_get_used(p, &id, &len, NULL));
	assert_int_equal(id, 1);
	assert_true(pd_get_used(p, &id, &len, NULL));
	assert_int_equal(id, 4);
	assert_false(pd_get_used(p, &id, &len, NULL));
	assert_int_equal(vq_get_base(&p->vq), 0x00010001u); /* slot 1, both wraps 0 */
	assert_false(p->vq.broken);
}

/*
 * Dirty logging on a packed ring: the written part of each buffer (the list re-walked from the
 * used position before its slot is overwritten) and every descriptor slot written, for a
 * batch of a list across the ring end and a one-slot buffer; a readable buffer is not logged.
 */
static void test_dirty_log_buffers_and_slots(void **state)
{
	struct pd *p = *state; /* 5 slots */
	uint8_t bitmap[128] = {0}; /* 1024 pages: all of the fake memory */
	struct dirty_log log = {.bitmap = bitmap, .size = sizeof(bitmap)};
	struct fake_buf b[2] = {{p->data + 0x3000, 10, false}, {p->data + 0x5000, 5000, true}};
	uint64_t pg_read = (p->data + 0x3000) / DIRTY_LOG_PAGE;
	uint64_t pg_w0 = (p->data + 0x5000) / DIRTY_LOG_PAGE, pg_w1 = pg_w0 + 1;
	uint64_t pg_one = (p->data + 256u * 3) / DIRTY_LOG_PAGE, pg_ring = p->ring_gpa / DIRTY_LOG_PAGE;
	unsigned set = 0;

	complete(p, 4);           /* the next list starts at slot 4 */
	pd_add(p, b, 2, 2);       /* slots 4, 0 */
	pd_add1(p, 3, 64, true);  /* slot 1 */
	p->vq.log = &log;
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	vq_push(&p->vq, p->chain.head, 4200); /* into the second page of the writable buffer */
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	vq_push(&p->vq, p->chain.head, 64);
	vq_publish(&p->vq);
	p->vq.log = NULL;
#define BIT(pg) (bitmap[(pg) / 8] >> ((pg) % 8) & 1)
	assert_true(BIT(pg_w0));
	assert_true(BIT(pg_w1));
	assert_true(BIT(pg_one));
	assert_true(BIT(pg_ring));
	if (pg_read != pg_w0 && pg_read != pg_one && pg_read != pg_ring)
		assert_false(BIT(pg_read));
#undef BIT
	for (unsigned i = 0; i < sizeof(bitmap); i++)
		set += (unsigned)__builtin_popcount(bitmap[i]);
	assert_true(set <= 4);
}

static void test_start_any_size_up_to_32768(void **state)
{
	struct pd *p = pd_new(3, false, false);

	(void)state;
	pd_start(p);
	p->vq.num = 0;
	assert_int_equal(vq_start(&p->vq, &p->mem.gm), -1);
	p->vq.num = 3;
	p->vq.desc_addr = p->ring_gpa + 8; /* misaligned */
	assert_int_equal(vq_start(&p->vq, &p->mem.gm), -1);
	vq_reset(&p->vq);
	fake_mem_free(&p->mem);
	free(p);
	p = pd_new(32768, false, false);
	pd_start(p);
	vq_reset(&p->vq);
	p->vq.num = 32769;
	p->vq.packed = true;
	p->vq.desc_addr = p->ring_gpa;
	p->vq.avail_addr = p->drv_gpa;
	p->vq.used_addr = p->dev_gpa;
	assert_int_equal(vq_start(&p->vq, &p->mem.gm), -1);
	vq_reset(&p->vq);
	fake_mem_free(&p->mem);
	free(p);
}


/* ---- vring base ---- */

static void test_base_round_trip(void **state)
{
	struct pd *p = *state; /* 5 slots */
	struct fake_buf b[2] = {{p->data, 10, false}, {p->data + 100, 20, false}};

	assert_int_equal(vq_get_base(&p->vq), 0x80008000u);
	complete(p, 4);
	pd_add(p, b, 2, 4); /* slots 4, 0 */
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	vq_push(&p->vq, 4, 0);
	vq_publish(&p->vq);
	/* Next avail slot 1 wrap 0; used the same. */
	assert_int_equal(vq_get_base(&p->vq), 0x00010001u);
	vq_stop(&p->vq);
	assert_int_equal(vq_get_base(&p->vq), 0x00010001u);
	pd_start(p); /* resumes where it stopped */
	pd_add1(p, 1, 64, false);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_int_equal(p->chain.head, 1);
	vq_stop(&p->vq);
	/* Popped, not completed: the base points at it (it is walked again, not lost). */
	assert_int_equal(vq_get_base(&p->vq), 0x00010001u);
	/* A DPDK-style base (top half zero): used == avail. */
	assert_int_equal(vq_set_base(&p->vq, 0x0001), 0);
	pd_start(p);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1); /* the one in flight, walked again */
	assert_int_equal(p->chain.head, 1);
	vq_stop(&p->vq);
	assert_int_equal(vq_set_base(&p->vq, 0x00010001u), 0);
	pd_start(p);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	vq_stop(&p->vq);
	assert_int_equal(vq_set_base(&p->vq, 0x7fff), 0); /* slot beyond the ring */
	assert_int_equal(vq_start(&p->vq, &p->mem.gm), -1);
}

/* Base 0: a fresh ring (User-Mode Linux sends 0 whatever the layout) vs one after a lap. */
static void test_base_zero_fresh_or_after_a_lap(void **state)
{
	struct pd *p = *state; /* 5 slots, fresh */

	vq_stop(&p->vq);
	assert_int_equal(vq_set_base(&p->vq, 0), 0);
	pd_start(p);
	pd_add1(p, 3, 64, false); /* slot 0, wrap 1 */
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_int_equal(p->chain.head, 3);
	vq_push(&p->vq, 3, 0);
	vq_publish(&p->vq);
	complete(p, 4); /* slots 1..4: one lap done, every slot marked used */
	vq_publish(&p->vq);
	assert_int_equal(vq_get_base(&p->vq), 0u);
	vq_stop(&p->vq);
	assert_int_equal(vq_set_base(&p->vq, 0), 0);
	pd_start(p); /* the last slot is used: base 0 is slot 0 with wrap 0 */
	pd_add1(p, 2, 64, false); /* slot 0, wrap 0 */
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_int_equal(p->chain.head, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pop_push_wraps_many_laps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_avail_at_least_reads_one_slot, setup, teardown),
		cmocka_unit_test(test_avail_at_least_counts_lists),
		cmocka_unit_test(test_avail_at_least_whole_ring_list_and_a_lie),
		cmocka_unit_test_setup_teardown(test_batch_publishes_first_flags_last, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain_across_ring_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unpop_list_across_ring_end_mixed_batch, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dirty_log_buffers_and_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_indirect_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unpop_walks_again, setup, teardown),
		cmocka_unit_test(test_start_any_size_up_to_32768),
		cmocka_unit_test_setup_teardown(test_base_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_base_zero_fresh_or_after_a_lap, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
