/* SPDX-License-Identifier: MIT */
/* test_vq_ring.c - vq_start/vq_pop checks, hostile rings, used ring, notification suppression. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vq_fixture.h"

static void test_start_rejects_rings_outside_memory(void **state)
{
	struct fx *f = *state;
	struct virtqueue vq;
	uint64_t end = fake_mem_end_gpa(&f->mem);

	memset(&vq, 0, sizeof(vq));
	fake_vq_setup_virtqueue(&f->fq, &vq);
	vq.desc_addr = 0x1000;
	assert_int_equal(vq_start(&vq, &f->mem.gm), -1);
	assert_false(vq.started);

	fake_vq_setup_virtqueue(&f->fq, &vq);
	vq.avail_addr = end - 8; /* avail ring needs 6 + 2 * 16 bytes */
	assert_int_equal(vq_start(&vq, &f->mem.gm), -1);

	fake_vq_setup_virtqueue(&f->fq, &vq);
	vq.used_addr = end - 64; /* used ring needs 6 + 8 * 16 bytes */
	assert_int_equal(vq_start(&vq, &f->mem.gm), -1);

	fake_vq_setup_virtqueue(&f->fq, &vq);
	vq.desc_addr = end - 16 * QSIZE + 16;
	assert_int_equal(vq_start(&vq, &f->mem.gm), -1);

	fake_vq_setup_virtqueue(&f->fq, &vq);
	vq.ring_space = GUEST_ADDR_UVA; /* GPAs are not valid UVAs here */
	assert_int_equal(vq_start(&vq, &f->mem.gm), -1);
	assert_false(vq.started);
}

static void test_start_accepts_uva_ring_addresses(void **state)
{
	struct fx *f = *state;
	struct virtqueue vq;

	memset(&vq, 0, sizeof(vq));
	fake_vq_setup_virtqueue(&f->fq, &vq);
	vq.desc_addr += FAKE_UVA_OFFSET;
	vq.avail_addr += FAKE_UVA_OFFSET;
	vq.used_addr += FAKE_UVA_OFFSET;
	vq.ring_space = GUEST_ADDR_UVA;
	assert_int_equal(vq_start(&vq, &f->mem.gm), 0);
	assert_ptr_equal(vq.desc, f->fq.desc);
	assert_ptr_equal(vq.avail, f->fq.avail);
	assert_ptr_equal(vq.used, f->fq.used);
}

static void test_start_rejects_bad_queue_size(void **state)
{
	struct fx *f = *state;
	struct virtqueue vq;

	memset(&vq, 0, sizeof(vq));
	fake_vq_setup_virtqueue(&f->fq, &vq);
	vq.num = 0;
	assert_int_equal(vq_start(&vq, &f->mem.gm), -1);
	vq.num = 12; /* split rings are a power of 2 in size */
	assert_int_equal(vq_start(&vq, &f->mem.gm), -1);
	assert_false(vq.started);
}

static void test_pop_empty_ring_returns_0(void **state)
{
	struct fx *f = *state;

	assert_int_equal(vq_pop(&f->vq, &f->chain), 0);
	assert_false(vq_has_avail(&f->vq));
}

/* vq_avail_at_least() counts chains posted and not popped; a hostile index counts as full. */
static void test_avail_at_least_counts_unpopped(void **state)
{
	struct fx *f = *state;
	struct fake_buf b = {f->data, 64, true};

	assert_true(vq_avail_at_least(&f->vq, 0));
	assert_false(vq_avail_at_least(&f->vq, 1));
	for (unsigned i = 0; i < 3; i++)
		fake_vq_add_chain(&f->fq, &b, 1);
	fake_vq_publish(&f->fq);
	assert_true(vq_avail_at_least(&f->vq, 3));
	assert_false(vq_avail_at_least(&f->vq, 4));
	assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	assert_true(vq_avail_at_least(&f->vq, 2));
	assert_false(vq_avail_at_least(&f->vq, 3));
	f->fq.avail->idx = (uint16_t)(f->vq.last_avail + 1000u);
	assert_true(vq_avail_at_least(&f->vq, QSIZE));
	assert_false(vq_avail_at_least(&f->vq, QSIZE + 1));
}

static void test_pop_returns_chains_in_avail_order(void **state)
{
	struct fx *f = *state;
	struct fake_buf b1[2] = {{f->data, 10, false}, {f->data + 64, 20, true}};
	struct fake_buf b2[1] = {{f->data + 128, 30, true}};
	int h1 = fake_vq_add_chain(&f->fq, b1, 2);
	int h2 = fake_vq_add_indirect(&f->fq, b2, 1);

	fake_vq_publish(&f->fq);
	assert_true(vq_has_avail(&f->vq));
	assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	assert_int_equal(f->chain.head, h1);
	assert_int_equal(f->chain.nread, 1);
	assert_int_equal(f->chain.nwrite, 1);
	assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	assert_int_equal(f->chain.head, h2);
	assert_int_equal(f->chain.nwrite, 1);
	assert_int_equal(f->chain.write_len, 30);
	assert_ptr_equal(f->chain.iov[0].iov_base, host(f, f->data + 128));
	assert_int_equal(vq_pop(&f->vq, &f->chain), 0);
	assert_int_equal(f->vq.last_avail, 2);
}

static void test_pop_hostile_chain_breaks_queue(void **state)
{
	struct fx *f = *state;
	struct fake_buf b = {f->data, 10, false};

	set_desc(&f->fq.desc[6], f->data, 16, VRING_DESC_F_NEXT, 6);
	offer(f, 6);
	assert_int_equal(vq_pop(&f->vq, &f->chain), -1);
	assert_true(f->vq.broken);
	/* A broken queue stays broken, even with a valid chain behind. */
	fake_vq_add_chain(&f->fq, &b, 1);
	fake_vq_publish(&f->fq);
	assert_int_equal(vq_pop(&f->vq, &f->chain), -1);
}

static void test_pop_head_out_of_range_breaks_queue(void **state)
{
	struct fx *f = *state;

	offer(f, QSIZE + 3);
	assert_int_equal(vq_pop(&f->vq, &f->chain), -1);
	assert_true(f->vq.broken);
}

static void test_pop_indirect_not_negotiated_breaks_queue(void **state)
{
	struct fx *f = *state;
	struct fake_buf b = {f->data, 10, false};

	vq_stop(&f->vq); /* the layout is the ring's from its start to its stop */
	f->vq.indirect = false;
	assert_int_equal(vq_start(&f->vq, &f->mem.gm), 0);
	fake_vq_add_indirect(&f->fq, &b, 1);
	fake_vq_publish(&f->fq);
	assert_int_equal(vq_pop(&f->vq, &f->chain), -1);
	assert_true(f->vq.broken);
}

static void test_pop_buffer_outside_memory_breaks_queue(void **state)
{
	struct fx *f = *state;
	struct fake_buf b = {fake_mem_end_gpa(&f->mem) - 4, 8, true};

	fake_vq_add_chain(&f->fq, &b, 1);
	fake_vq_publish(&f->fq);
	assert_int_equal(vq_pop(&f->vq, &f->chain), -1);
	assert_true(f->vq.broken);
}

static void test_avail_idx_jump_beyond_num_breaks_queue(void **state)
{
	struct fx *f = *state;

	f->fq.avail->idx = QSIZE + 1;
	assert_int_equal(vq_pop(&f->vq, &f->chain), -1);
	assert_true(f->vq.broken);
}

static void test_avail_idx_jump_of_exactly_num_is_ok(void **state)
{
	struct fx *f = *state;
	struct fake_buf b = {f->data, 10, false};

	for (unsigned i = 0; i < QSIZE; i++)
		fake_vq_add_chain(&f->fq, &b, 1);
	fake_vq_publish(&f->fq);
	for (unsigned i = 0; i < QSIZE; i++)
		assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	assert_int_equal(vq_pop(&f->vq, &f->chain), 0);
	assert_false(f->vq.broken);
}

static void test_avail_index_wraps_at_65536(void **state)
{
	struct fx *f = *state;
	struct fake_buf b = {f->data, 10, true};

	f->vq.last_avail = 65534;
	f->fq.avail_idx = 65534;
	f->fq.avail->idx = 65534;
	for (unsigned i = 0; i < 3; i++)
		fake_vq_add_chain(&f->fq, &b, 1);
	fake_vq_publish(&f->fq);
	assert_int_equal(f->fq.avail->idx, 1);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	assert_int_equal(vq_pop(&f->vq, &f->chain), 0);
	assert_int_equal(f->vq.last_avail, 1);
	assert_false(f->vq.broken);
}

static void test_unpop_returns_chains_again(void **state)
{
	struct fx *f = *state;
	struct fake_buf b = {f->data, 10, true};
	int h1 = fake_vq_add_chain(&f->fq, &b, 1);
	int h2 = fake_vq_add_chain(&f->fq, &b, 1);

	fake_vq_publish(&f->fq);
	assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	vq_unpop(&f->vq, 1);
	assert_true(vq_has_avail(&f->vq));
	assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	assert_int_equal(f->chain.head, h2);
	vq_unpop(&f->vq, 2);
	assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	assert_int_equal(f->chain.head, h1);
}

/* ---- used ring ---- */

static void test_push_is_invisible_until_publish(void **state)
{
	struct fx *f = *state;
	uint32_t id, len;

	vq_push(&f->vq, 5, 100);
	vq_push(&f->vq, 2, 0);
	vq_push(&f->vq, 9, 1526);
	assert_int_equal(fake_vq_used_idx(&f->fq), 0);
	vq_publish(&f->vq);
	assert_int_equal(fake_vq_used_idx(&f->fq), 3);
	assert_true(fake_vq_get_used(&f->fq, &id, &len));
	assert_int_equal(id, 5);
	assert_int_equal(len, 100);
	assert_true(fake_vq_get_used(&f->fq, &id, &len));
	assert_int_equal(id, 2);
	assert_int_equal(len, 0);
	assert_true(fake_vq_get_used(&f->fq, &id, &len));
	assert_int_equal(id, 9);
	assert_int_equal(len, 1526);
	assert_false(fake_vq_get_used(&f->fq, &id, &len));
}

static void test_used_ring_wraps_around(void **state)
{
	struct fx *f = *state;
	uint32_t id, len;

	for (unsigned round = 0; round < 5; round++) {
		for (unsigned i = 0; i < 7; i++)
			vq_push(&f->vq, (uint16_t)i, round * 100 + i);
		vq_publish(&f->vq);
		for (unsigned i = 0; i < 7; i++) {
			assert_true(fake_vq_get_used(&f->fq, &id, &len));
			assert_int_equal(id, i);
			assert_int_equal(len, round * 100 + i);
		}
	}
	assert_int_equal(fake_vq_used_idx(&f->fq), 35);
}

static void test_notify_respects_no_interrupt_flag(void **state)
{
	struct fx *f = *state;

	vq_push(&f->vq, 0, 1);
	vq_publish(&f->vq);
	assert_true(vq_driver_wants_notify(&f->vq));
	assert_int_equal(vq_pending_since_decision(&f->vq), 0);
	fake_vq_set_no_interrupt(&f->fq, true);
	vq_push(&f->vq, 1, 1);
	vq_publish(&f->vq);
	assert_int_equal(vq_pending_since_decision(&f->vq), 1);
	assert_false(vq_driver_wants_notify(&f->vq));
	assert_int_equal(vq_pending_since_decision(&f->vq), 0);
	fake_vq_set_no_interrupt(&f->fq, false);
	vq_push(&f->vq, 2, 1);
	vq_publish(&f->vq);
	assert_true(vq_driver_wants_notify(&f->vq));
}

static void test_event_idx_used_event_decides(void **state)
{
	struct fx *f = *state;

	/* First decision: used_event 0 is in [0, 1). */
	fake_vq_set_used_event(&f->fq, 0);
	vq_push(&f->vq, 0, 1);
	vq_publish(&f->vq);
	assert_true(vq_driver_wants_notify(&f->vq));
	/* used_event 5: not crossed by 1 -> 2 ... */
	fake_vq_set_used_event(&f->fq, 5);
	vq_push(&f->vq, 1, 1);
	vq_publish(&f->vq);
	assert_false(vq_driver_wants_notify(&f->vq));
	/* ... but crossed by 2 -> 6. */
	for (unsigned i = 0; i < 4; i++)
		vq_push(&f->vq, (uint16_t)(2 + i), 1);
	vq_publish(&f->vq);
	assert_true(vq_driver_wants_notify(&f->vq));
	/* Already passed: 6 -> 7 does not cross 5 again. */
	vq_push(&f->vq, 6, 1);
	vq_publish(&f->vq);
	assert_false(vq_driver_wants_notify(&f->vq));
	/* The flag is ignored under EVENT_IDX: used_event 7 is crossed by 7 -> 8. */
	fake_vq_set_no_interrupt(&f->fq, true);
	fake_vq_set_used_event(&f->fq, 7);
	vq_push(&f->vq, 7, 1);
	vq_publish(&f->vq);
	assert_true(vq_driver_wants_notify(&f->vq));
}

static void test_kick_disable_and_enable_use_used_flags(void **state)
{
	struct fx *f = *state;
	struct fake_buf b = {f->data, 10, true};

	vq_kick_disable(&f->vq);
	assert_int_equal(f->fq.used->flags & VRING_USED_F_NO_NOTIFY, VRING_USED_F_NO_NOTIFY);
	assert_false(vq_kick_enable(&f->vq));
	assert_int_equal(f->fq.used->flags & VRING_USED_F_NO_NOTIFY, 0);
	fake_vq_add_chain(&f->fq, &b, 1);
	fake_vq_publish(&f->fq);
	vq_kick_disable(&f->vq);
	assert_true(vq_kick_enable(&f->vq)); /* a chain arrived while kicks were off */
}

static void test_kick_enable_with_event_idx_writes_avail_event(void **state)
{
	struct fx *f = *state;
	struct fake_buf b = {f->data, 10, true};

	for (unsigned i = 0; i < 3; i++)
		fake_vq_add_chain(&f->fq, &b, 1);
	fake_vq_publish(&f->fq);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	assert_false(vq_kick_enable(&f->vq));
	assert_int_equal(fake_vq_avail_event(&f->fq), 3);
}

static void test_stop_keeps_last_avail_and_reset_clears(void **state)
{
	struct fx *f = *state;
	struct fake_buf b = {f->data, 10, true};

	fake_vq_add_chain(&f->fq, &b, 1);
	fake_vq_add_chain(&f->fq, &b, 1);
	fake_vq_publish(&f->fq);
	assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	assert_int_equal(vq_pop(&f->vq, &f->chain), 1);
	vq_stop(&f->vq);
	assert_false(f->vq.started);
	assert_int_equal(f->vq.last_avail, 2);
	vq_reset(&f->vq);
	assert_false(f->vq.started);
	assert_false(f->vq.broken);
	assert_int_equal(f->vq.last_avail, 0);
	assert_int_equal(f->vq.used_idx, 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TE(fn) cmocka_unit_test_setup_teardown(fn, setup_event_idx, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_start_rejects_rings_outside_memory),
	    T(test_start_accepts_uva_ring_addresses),
	    T(test_start_rejects_bad_queue_size),
	    T(test_avail_at_least_counts_unpopped),
	    T(test_pop_empty_ring_returns_0),
	    T(test_pop_returns_chains_in_avail_order),
	    T(test_pop_hostile_chain_breaks_queue),
	    T(test_pop_head_out_of_range_breaks_queue),
	    T(test_pop_indirect_not_negotiated_breaks_queue),
	    T(test_pop_buffer_outside_memory_breaks_queue),
	    T(test_avail_idx_jump_beyond_num_breaks_queue),
	    T(test_avail_idx_jump_of_exactly_num_is_ok),
	    T(test_avail_index_wraps_at_65536),
	    T(test_unpop_returns_chains_again),
	    T(test_push_is_invisible_until_publish),
	    T(test_used_ring_wraps_around),
	    T(test_notify_respects_no_interrupt_flag),
	    TE(test_event_idx_used_event_decides),
	    T(test_kick_disable_and_enable_use_used_flags),
	    TE(test_kick_enable_with_event_idx_writes_avail_event),
	    T(test_stop_keeps_last_avail_and_reset_clears),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
