/* SPDX-License-Identifier: MIT */
/* test_vq_packed_hostile.c - hostile packed rings: each lie breaks only its own queue. */
#include "vq_packed_driver.h"

/* ---- hostile drivers: each breaks only its queue ---- */



static void test_no_avail_bit_is_not_available(void **state)
{
	struct pd *p = *state;

	p->ring[0].addr = p->data;
	p->ring[0].len = 64;
	p->ring[0].flags = 0; /* neither bit: "used with wrap 0", a zeroed ring */
	assert_int_equal(vq_pop(&p->vq, &p->chain), 0);
	p->ring[0].flags = F_AVAIL | F_USED; /* both bits: used with wrap 1 */
	assert_int_equal(vq_pop(&p->vq, &p->chain), 0);
	p->ring[0].flags = F_USED; /* the wrong wrap: a lie about the wrap counter */
	assert_int_equal(vq_pop(&p->vq, &p->chain), 0);
	assert_false(p->vq.broken);
}

static void test_wrap_lie_over_in_flight_slots_breaks(void **state)
{
	struct pd *p = *state;

	for (uint16_t i = 0; i < 5; i++)
		pd_add1(p, i, 64, false);
	for (int i = 0; i < 5; i++)
		assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	/* The ring is ours; the driver flips slot 0's bits to the next lap's "available". */
	p->ring[0].flags = F_USED;
	p->ring[0].id = 0;
	expect_broken(p);
}

static void test_later_descriptor_not_available_breaks(void **state)
{
	struct pd *p = *state;
	struct fake_buf b[2] = {{p->data, 10, false}, {p->data + 100, 20, false}};

	pd_add(p, b, 2, 1);
	p->ring[1].flags ^= F_AVAIL | F_USED; /* second descriptor marked for the other wrap */
	expect_broken(p);
}

static void test_id_out_of_range_breaks(void **state)
{
	struct pd *p = *state;

	pd_add1(p, 0, 64, false);
	p->ring[0].id = 5; /* == queue size */
	expect_broken(p);
}

static void test_id_reused_in_flight_breaks(void **state)
{
	struct pd *p = *state;

	pd_add1(p, 2, 64, false);
	pd_add1(p, 2, 64, false);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	expect_broken(p);
}

static void test_id_reused_after_completion_is_fine(void **state)
{
	struct pd *p = *state;

	pd_add1(p, 2, 64, false);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	vq_push(&p->vq, 2, 0);
	vq_publish(&p->vq);
	pd_add1(p, 2, 64, false);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	assert_false(p->vq.broken);
}

static void test_indirect_not_negotiated_breaks(void **state)
{
	struct pd *p = pd_new(4, false, false);
	struct fake_buf b = {0, 12, false};

	(void)state;
	pd_start(p);
	b.gpa = p->data;
	pd_add_indirect(p, &b, 1, 0, 0);
	expect_broken(p);
	vq_reset(&p->vq);
	fake_mem_free(&p->mem);
	free(p);
}

static void test_indirect_in_next_list_breaks(void **state)
{
	struct pd *p = *state;
	struct fake_buf b[2] = {{p->data, 10, false}, {p->data + 100, 32, false}};

	pd_add(p, b, 2, 1);
	p->ring[1].flags |= VRING_DESC_F_INDIRECT; /* INDIRECT inside a NEXT list */
	expect_broken(p);
}

static void test_indirect_with_next_breaks(void **state)
{
	struct pd *p = *state;
	struct fake_buf b = {p->data, 12, false};

	pd_add_indirect(p, &b, 1, 0, VRING_DESC_F_NEXT);
	expect_broken(p);
}

static void test_nested_indirect_breaks(void **state)
{
	struct pd *p = *state;
	struct fake_buf b[2] = {{p->data, 12, false}, {p->data + 100, 32, false}};
	struct pvirtq_desc *table;

	pd_add_indirect(p, b, 2, 0, 0);
	table = fake_mem_host(&p->mem, p->ring[0].addr);
	table[1].flags |= VRING_DESC_F_INDIRECT;
	expect_broken(p);
}

static void test_bad_indirect_len_breaks(void **state)
{
	struct pd *p = *state;
	struct fake_buf b = {p->data, 12, false};

	pd_add_indirect(p, &b, 1, 0, 0);
	p->ring[0].len = 15;
	expect_broken(p);
}

static void test_loop_longer_than_ring_breaks(void **state)
{
	struct pd *p = *state;

	/* Every slot says NEXT, with the right wrap: the list never ends. */
	for (uint16_t i = 0; i < 5; i++) {
		p->ring[i].addr = p->data;
		p->ring[i].len = 8;
		p->ring[i].id = 0;
		p->ring[(i + 1) % 5].flags = 0;
	}
	for (uint16_t i = 1; i < 5; i++)
		p->ring[i].flags = F_AVAIL | VRING_DESC_F_NEXT;
	p->ring[0].flags = F_AVAIL | VRING_DESC_F_NEXT;
	expect_broken(p); /* slot 0 again, now with the wrong wrap: NOT_AVAIL, or TOO_LONG */
}

static void test_taken_back_after_unpop_breaks(void **state)
{
	struct pd *p = *state;

	pd_add1(p, 0, 64, false);
	assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
	vq_unpop(&p->vq, 1);
	p->ring[0].flags = 0; /* the driver takes back what it made available */
	expect_broken(p);
}

static void test_buffer_outside_memory_breaks(void **state)
{
	struct pd *p = *state;
	struct fake_buf b = {MEM_GPA + MEM_SIZE - 8, 64, false};

	pd_add(p, &b, 1, 0);
	expect_broken(p);
}

static void test_break_leaves_other_queue_running(void **state)
{
	struct pd *a = *state, *b = pd_new(6, false, true);
	uint16_t id;
	uint32_t len;

	pd_start(b);
	pd_add1(a, 0, 64, false);
	a->ring[0].id = 9;
	expect_broken(a);
	pd_add1(b, 4, 64, false);
	assert_int_equal(vq_pop(&b->vq, &b->chain), 1);
	vq_push(&b->vq, 4, 0);
	vq_publish(&b->vq);
	assert_true(pd_get_used(b, &id, &len, NULL));
	assert_int_equal(id, 4);
	vq_reset(&b->vq);
	fake_mem_free(&b->mem);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_avail_bit_is_not_available, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrap_lie_over_in_flight_slots_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_later_descriptor_not_available_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_id_out_of_range_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_id_reused_in_flight_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_id_reused_after_completion_is_fine, setup, teardown),
		cmocka_unit_test(test_indirect_not_negotiated_breaks),
		cmocka_unit_test_setup_teardown(test_indirect_in_next_list_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_indirect_with_next_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nested_indirect_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_indirect_len_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loop_longer_than_ring_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_taken_back_after_unpop_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buffer_outside_memory_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_break_leaves_other_queue_running, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
