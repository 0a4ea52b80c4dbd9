/* SPDX-License-Identifier: MIT */
/* test_vq_packed.c - packed virtqueues and IN_ORDER: walker, used write-back, events, hostile rings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "virtqueue_internal.h"

#define MEM_GPA 0x40000ull
#define MEM_SIZE (2u << 20)
#define F_AVAIL VRING_PACKED_DESC_F_AVAIL
#define F_USED VRING_PACKED_DESC_F_USED

/* The driver side of one packed ring, written as the spec's driver does. */
struct pd {
	struct fake_mem mem;
	uint16_t num;
	uint64_t ring_gpa, drv_gpa, dev_gpa, data;
	struct pvirtq_desc *ring;
	uint16_t *drv; /* off_wrap, flags */
	uint16_t *dev;
	uint16_t avail, used;
	bool avail_wrap, used_wrap;
	uint16_t count[VQ_MAX_SIZE]; /* per id: slots its list took */
	struct virtqueue vq;
	struct vq_chain chain;
};

static struct pd *pd_new(uint16_t num, bool event_idx, bool indirect)
{
	struct pd *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	fake_mem_init(&p->mem, MEM_GPA, MEM_SIZE, false);
	p->num = num;
	p->ring_gpa = fake_mem_alloc(&p->mem, 16ull * num, 16);
	p->drv_gpa = fake_mem_alloc(&p->mem, 4, 4);
	p->dev_gpa = fake_mem_alloc(&p->mem, 4, 4);
	p->data = fake_mem_alloc(&p->mem, 0x10000, 64);
	p->ring = fake_mem_host(&p->mem, p->ring_gpa);
	p->drv = fake_mem_host(&p->mem, p->drv_gpa);
	p->dev = fake_mem_host(&p->mem, p->dev_gpa);
	p->avail_wrap = p->used_wrap = true;
	p->vq.num = num;
	p->vq.desc_addr = p->ring_gpa;
	p->vq.avail_addr = p->drv_gpa;
	p->vq.used_addr = p->dev_gpa;
	p->vq.ring_space = GUEST_ADDR_GPA;
	p->vq.packed = true;
	p->vq.event_idx = event_idx;
	p->vq.indirect = indirect;
	return p;
}

static void pd_start(struct pd *p)
{
	assert_int_equal(vq_start(&p->vq, &p->mem.gm), 0);
	assert_true(p->vq.started);
}

static int setup(void **state)
{
	struct pd *p = pd_new(5, false, true); /* 5: packed sizes need not be a power of 2 */

	pd_start(p);
	*state = p;
	return 0;
}

static int setup_event_idx(void **state)
{
	struct pd *p = pd_new(8, true, true);

	pd_start(p);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct pd *p = *state;

	vq_reset(&p->vq);
	fake_mem_free(&p->mem);
	free(p);
	return 0;
}

static uint16_t avail_flags(bool wrap)
{
	return wrap ? F_AVAIL : F_USED;
}

/* Make a list of n buffers available with buffer id `id`; the head's flags are written last. */
static void pd_add(struct pd *p, const struct fake_buf *b, unsigned n, uint16_t id)
{
	uint16_t head = p->avail, head_flags = 0;
	bool w = p->avail_wrap;

	for (unsigned i = 0; i < n; i++) {
		uint16_t f = (uint16_t)(avail_flags(w) | (b[i].write ? VRING_DESC_F_WRITE : 0) |
					(i + 1 < n ? VRING_DESC_F_NEXT : 0));
		struct pvirtq_desc *d = &p->ring[p->avail];

		d->addr = b[i].gpa;
		d->len = b[i].len;
		d->id = id;
		if (i == 0)
			head_flags = f;
		else
			d->flags = f;
		if (++p->avail == p->num) {
			p->avail = 0;
			p->avail_wrap = !p->avail_wrap;
			w = p->avail_wrap;
		}
	}
	p->count[id] = (uint16_t)n;
	__atomic_store_n(&p->ring[head].flags, head_flags, __ATOMIC_RELEASE);
}

/* One readable buffer of len bytes. */
static void pd_add1(struct pd *p, uint16_t id, uint32_t len, bool write)
{
	struct fake_buf b = {p->data + 256u * id, len, write};

	pd_add(p, &b, 1, id);
}

/* A list whose head is an INDIRECT descriptor to a table of n buffers. */
static void pd_add_indirect(struct pd *p, const struct fake_buf *b, unsigned n, uint16_t id,
			    uint16_t extra_flags)
{
	uint64_t t = fake_mem_alloc(&p->mem, 16ull * n, 16);
	struct pvirtq_desc *table = fake_mem_host(&p->mem, t);
	struct fake_buf ind = {t, 16u * n, false};

	for (unsigned i = 0; i < n; i++) {
		table[i].addr = b[i].gpa;
		table[i].len = b[i].len;
		table[i].flags = b[i].write ? VRING_DESC_F_WRITE : 0;
	}
	pd_add(p, &ind, 1, id);
	p->ring[(p->avail + p->num - 1) % p->num].flags |= VRING_DESC_F_INDIRECT | extra_flags;
}

/* The next used descriptor, as Linux reads it; false if none. */
static bool pd_get_used(struct pd *p, uint16_t *id, uint32_t *len, uint16_t *flags)
{
	struct pvirtq_desc *d = &p->ring[p->used];
	uint16_t f = __atomic_load_n(&d->flags, __ATOMIC_ACQUIRE);

	if (!!(f & F_AVAIL) != p->used_wrap || !!(f & F_USED) != p->used_wrap)
		return false;
	*id = d->id;
	*len = d->len;
	if (flags)
		*flags = f;
	assert_true(*id < p->num);
	p->used += p->count[*id];
	if (p->used >= p->num) {
		p->used -= p->num;
		p->used_wrap = !p->used_wrap;
	}
	return true;
}

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

/* ---- hostile drivers: each breaks only its queue ---- */

static void expect_broken(struct pd *p)
{
	assert_int_equal(vq_pop(&p->vq, &p->chain), -1);
	assert_true(p->vq.broken);
	assert_int_equal(vq_pop(&p->vq, &p->chain), -1);
}

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

/* ---- event suppression ---- */

static void drv_event(struct pd *p, uint16_t off_wrap, uint16_t flags)
{
	p->drv[0] = off_wrap;
	p->drv[1] = flags;
}

static void complete(struct pd *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		pd_add1(p, (uint16_t)(i % p->num), 64, false);
		assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
		vq_push(&p->vq, p->chain.head, 0);
	}
	vq_publish(&p->vq);
	for (unsigned i = 0; i < n; i++) {
		uint16_t id;
		uint32_t len;

		assert_true(pd_get_used(p, &id, &len, NULL));
	}
}

static void test_driver_flags_enable_disable(void **state)
{
	struct pd *p = *state;

	complete(p, 1);
	drv_event(p, 0, VRING_PACKED_EVENT_F_DISABLE);
	assert_false(vq_driver_wants_notify(&p->vq));
	complete(p, 1);
	drv_event(p, 0, VRING_PACKED_EVENT_F_ENABLE);
	assert_true(vq_driver_wants_notify(&p->vq));
	drv_event(p, 0, VRING_PACKED_EVENT_F_DESC); /* DESC without EVENT_IDX: as ENABLE */
	assert_true(vq_driver_would_notify(&p->vq));
	drv_event(p, 0, 3); /* reserved: notify rather than lose one */
	assert_true(vq_driver_would_notify(&p->vq));
}

static void test_event_idx_off_wrap(void **state)
{
	struct pd *p = *state; /* 8 slots */

	complete(p, 2);
	assert_true(vq_driver_wants_notify(&p->vq)); /* first decision */
	drv_event(p, 5 | 0x8000, VRING_PACKED_EVENT_F_DESC); /* at slot 5, this lap */
	complete(p, 2);                                       /* used 2, 3 */
	assert_false(vq_driver_wants_notify(&p->vq));
	complete(p, 2); /* used 4, 5: crosses 5 */
	assert_true(vq_driver_wants_notify(&p->vq));
	drv_event(p, 1, VRING_PACKED_EVENT_F_DESC); /* slot 1 of the next lap (wrap 0) */
	complete(p, 2);                              /* 6, 7 */
	assert_false(vq_driver_wants_notify(&p->vq));
	complete(p, 1); /* 0 (wrap 0) */
	assert_false(vq_driver_wants_notify(&p->vq));
	/* The flags change between decisions (mid-batch): each decision reads them anew. */
	complete(p, 1); /* 1 */
	drv_event(p, 1, VRING_PACKED_EVENT_F_DISABLE);
	assert_false(vq_driver_wants_notify(&p->vq));
	drv_event(p, 1, VRING_PACKED_EVENT_F_DESC);
	complete(p, 1);
	assert_false(vq_driver_wants_notify(&p->vq)); /* 1 was passed at the DISABLE decision */
	drv_event(p, 0, VRING_PACKED_EVENT_F_ENABLE);
	complete(p, 1);
	assert_true(vq_driver_wants_notify(&p->vq));
}

static void test_kick_enable_disable_device_area(void **state)
{
	struct pd *p = *state; /* no EVENT_IDX */

	vq_kick_disable(&p->vq);
	assert_int_equal(p->dev[1], VRING_PACKED_EVENT_F_DISABLE);
	assert_false(vq_kick_enable(&p->vq));
	assert_int_equal(p->dev[1], VRING_PACKED_EVENT_F_ENABLE);
	pd_add1(p, 0, 64, false);
	assert_true(vq_kick_enable(&p->vq)); /* the re-check sees it */
}

static void test_kick_enable_event_idx_names_next_slot(void **state)
{
	struct pd *p = *state; /* 8 slots, EVENT_IDX */

	complete(p, 8); /* a full lap: the device's wrap is 0 now */
	assert_false(vq_kick_enable(&p->vq));
	assert_int_equal(p->dev[1], VRING_PACKED_EVENT_F_DESC);
	assert_int_equal(p->dev[0], 0); /* slot 0, wrap 0 */
	vq_kick_disable(&p->vq); /* with EVENT_IDX the offset suppresses: nothing written */
	assert_int_equal(p->dev[1], VRING_PACKED_EVENT_F_DESC);
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

/* ---- IN_ORDER ---- */

static void test_in_order_batch_one_descriptor(void **state)
{
	struct pd *p = *state;
	uint16_t id;
	uint32_t len;

	vq_stop(&p->vq);
	p->vq.in_order = p->vq.batch_used = true;
	pd_start(p);
	for (uint16_t i = 0; i < 3; i++)
		pd_add1(p, i, 64, false);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(vq_pop(&p->vq, &p->chain), 1);
		vq_push(&p->vq, p->chain.head, 0);
	}
	vq_publish(&p->vq);
	/* One used descriptor at the batch's first slot, the last buffer's id. */
	assert_int_equal(p->ring[0].id, 2);
	assert_int_equal(p->ring[0].flags & (F_AVAIL | F_USED), F_AVAIL | F_USED);
	assert_int_equal(p->ring[1].flags & (F_AVAIL | F_USED), F_AVAIL); /* untouched */
	assert_true(pd_get_used(p, &id, &len, NULL));
	assert_int_equal(id, 2);
	p->used = 3; /* the driver skips the batch (Linux: ids up to the last) */
	assert_int_equal(vq_get_base(&p->vq), 0x80038003u);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pop_push_wraps_many_laps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_publishes_first_flags_last, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain_across_ring_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_indirect_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unpop_walks_again, setup, teardown),
		cmocka_unit_test(test_start_any_size_up_to_32768),
		cmocka_unit_test_setup_teardown(test_no_avail_bit_is_not_available, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrap_lie_over_in_flight_slots_breaks, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_later_descriptor_not_available_breaks, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_id_out_of_range_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_id_reused_in_flight_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_id_reused_after_completion_is_fine, setup,
						teardown),
		cmocka_unit_test(test_indirect_not_negotiated_breaks),
		cmocka_unit_test_setup_teardown(test_indirect_in_next_list_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_indirect_with_next_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nested_indirect_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_indirect_len_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loop_longer_than_ring_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_taken_back_after_unpop_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buffer_outside_memory_breaks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_break_leaves_other_queue_running, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_driver_flags_enable_disable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_idx_off_wrap, setup_event_idx, teardown),
		cmocka_unit_test_setup_teardown(test_kick_enable_disable_device_area, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kick_enable_event_idx_names_next_slot,
						setup_event_idx, teardown),
		cmocka_unit_test_setup_teardown(test_base_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_base_zero_fresh_or_after_a_lap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_in_order_batch_one_descriptor, setup, teardown),
		cmocka_unit_test(test_split_in_order_batch_one_used_entry),
		cmocka_unit_test(test_split_in_order_violation_breaks),
		cmocka_unit_test(test_split_in_order_chain_out_of_order_breaks),
		cmocka_unit_test(test_split_in_order_unpop_expects_same_head),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
