/* SPDX-License-Identifier: MIT */
/* test_vq_lifetime.c - a ring's size and layout are fixed from its start to its stop; restarts across layouts. */
#include "vq_packed_driver.h"

/*
 * One ring, driven on either layout in the same guest memory: the packed ring of struct pd and
 * a split ring (struct fake_vq) next to it, as a guest whose driver reloads with other features
 * would use. Every buffer carries a pattern of its own (round, id), checked byte for byte on
 * whichever side reads it.
 */
#define NUM 8
#define BUF 64

struct lt {
	struct pd *p;
	struct fake_vq fq;
	bool tx;           /* the device reads the buffers (TX), else writes them (RX) */
	bool packed, batch_used; /* the layout the ring was started with */
	uint8_t round;     /* pattern generation */
	uint16_t split_used; /* split: next used entry the driver reads */
	uint16_t split_next; /* split: next descriptor (and head) the driver fills, in order */
};

static uint8_t pattern(uint8_t round, uint16_t id, unsigned i)
{
	return (uint8_t)(round * 31u + id * 7u + i);
}

static uint8_t *buf_host(struct lt *t, uint16_t id)
{
	return fake_mem_host(&t->p->mem, t->p->data + 256u * id);
}

static struct lt *lt_new(bool tx)
{
	struct lt *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->p = pd_new(NUM, false, true);
	fake_vq_init(&t->fq, &t->p->mem, NUM);
	t->tx = tx;
	return t;
}

static void lt_free(struct lt *t)
{
	vq_reset(&t->p->vq);
	fake_vq_destroy(&t->fq);
	fake_mem_free(&t->p->mem);
	free(t->p);
	free(t);
}

/* The transport's fields for the next start: layout, IN_ORDER, and this ring's addresses. */
static void lt_configure(struct lt *t, bool packed, bool in_order)
{
	struct virtqueue *vq = &t->p->vq;

	vq->packed = packed;
	vq->in_order = in_order;
	vq->reads_only = t->tx;
	vq->batch_used = in_order && t->tx;
	vq->num = NUM;
	t->packed = packed;
	t->batch_used = vq->batch_used;
	if (packed) {
		vq->desc_addr = t->p->ring_gpa;
		vq->avail_addr = t->p->drv_gpa;
		vq->used_addr = t->p->dev_gpa;
	} else {
		fake_vq_setup_virtqueue(&t->fq, vq);
	}
}

/* A driver that loads anew: its rings as after a reset, the device told to start there. */
static void lt_start_fresh(struct lt *t, bool packed, bool in_order)
{
	struct pd *p = t->p;

	lt_configure(t, packed, in_order);
	if (packed) {
		memset(p->ring, 0, 16u * NUM);
		p->avail = p->used = 0;
		p->avail_wrap = p->used_wrap = true;
		assert_int_equal(vq_set_base(&p->vq, 0x80008000u), 0);
	} else {
		memset(t->fq.avail, 0, 6u + 2u * NUM);
		memset(t->fq.used, 0, 6u + 8u * NUM);
		t->fq.avail_idx = 0;
		t->split_used = t->split_next = 0;
		assert_int_equal(vq_set_base(&p->vq, 0), 0);
	}
	assert_int_equal(vq_start(&p->vq, &p->mem.gm), 0);
	assert_true(p->vq.started);
}

/* The driver offers buffer id: TX filled with its pattern, RX zeroed for the device to fill. */
static void lt_offer(struct lt *t, uint16_t id)
{
	uint8_t *b = buf_host(t, id);

	for (unsigned i = 0; i < BUF; i++)
		b[i] = t->tx ? pattern(t->round, id, i) : 0;
	if (t->packed) {
		pd_add1(t->p, id, BUF, !t->tx);
		return;
	}
	t->fq.desc[id] = (struct vring_desc){.addr = t->p->data + 256u * id, .len = BUF,
					     .flags = t->tx ? 0 : VRING_DESC_F_WRITE};
	fake_vq_add_head(&t->fq, id);
}

/* The device pops the buffer the driver offered as `id`: its bytes (TX) or writes them (RX). */
static void lt_device_take(struct lt *t, uint16_t id, struct vq_chain *c)
{
	assert_int_equal(vq_pop(&t->p->vq, c), 1);
	assert_int_equal(c->head, id);
	assert_int_equal(c->ndesc, 1);
	if (t->tx) {
		const uint8_t *b = c->iov[0].iov_base;

		assert_int_equal(c->nread, 1);
		assert_int_equal(c->read_len, BUF);
		for (unsigned i = 0; i < BUF; i++)
			assert_int_equal(b[i], pattern(t->round, id, i));
	} else {
		uint8_t *b = c->iov[0].iov_base;

		assert_int_equal(c->nwrite, 1);
		assert_int_equal(c->write_len, BUF);
		for (unsigned i = 0; i < BUF; i++)
			b[i] = pattern(t->round, id, i);
	}
}

/*
 * One batch of n buffers (ids first .. first + n - 1 below NUM) through the ring: offered,
 * popped, completed as net_tx.c / net_rx.c do for the layout, published, and read back by the
 * driver: the ids in order (IN_ORDER TX: one used entry for the batch), lengths, RX bytes.
 */
static void lt_batch(struct lt *t, uint16_t first, unsigned n)
{
	struct virtqueue *vq = &t->p->vq;
	struct vq_chain *c = &t->p->chain;

	for (unsigned k = 0; k < n; k++)
		lt_offer(t, (uint16_t)(first + k));
	if (!t->packed)
		fake_vq_publish(&t->fq);
	for (unsigned k = 0; k < n; k++) {
		uint16_t id = (uint16_t)(first + k);

		lt_device_take(t, id, c);
		if (!t->tx)
			vq_push(vq, id, BUF);
		else if (t->batch_used && k + 1 == n)
			vq_push_last(vq, id, n);
		else if (!t->batch_used && t->packed)
			vq_push_read_n(vq, 1);
		else if (!t->batch_used)
			vq_push(vq, id, 0);
	}
	assert_int_equal(vq_pop(vq, c), 0);
	vq_publish(vq);
	for (unsigned k = 0; k < n; k++) {
		uint16_t id = (uint16_t)(first + k), got_id;
		uint32_t len;

		if (t->batch_used && k + 1 < n)
			continue; /* one used entry covers the batch: the last id */
		if (t->packed) {
			assert_true(pd_get_used(t->p, &got_id, &len, NULL));
			for (unsigned skip = 1; t->batch_used && skip < n; skip++) {
				/* the driver skips the batch's other slots */
				if (++t->p->used == NUM) {
					t->p->used = 0;
					t->p->used_wrap = !t->p->used_wrap;
				}
			}
		} else {
			const struct vring_used_elem *e = &t->fq.used->ring[t->split_used % NUM];

			assert_true((uint16_t)(t->fq.used->idx - t->split_used) >= 1);
			got_id = (uint16_t)e->id;
			len = e->len;
			t->split_used = (uint16_t)(t->split_used + (t->batch_used ? n : 1));
		}
		assert_int_equal(got_id, id);
		assert_int_equal(len, t->tx ? 0 : BUF);
		if (!t->tx) {
			const uint8_t *b = buf_host(t, id);

			for (unsigned i = 0; i < BUF; i++)
				assert_int_equal(b[i], pattern(t->round, id, i));
		}
	}
	if (!t->packed)
		assert_int_equal(t->fq.used->idx, t->split_used);
	t->round++;
}

/* Three laps of batches of 5 and 3 buffers (ids in ring order, as IN_ORDER wants them). */
static void lt_traffic(struct lt *t)
{
	for (unsigned lap = 0; lap < 3; lap++) {
		lt_batch(t, 0, 5);
		lt_batch(t, 5, 3);
	}
}

/*
 * The sequence a VMM sends when a guest reloads its driver with other features: the ring runs
 * packed, stops (GET_VRING_BASE), runs split, stops, runs packed again; traffic byte-exact after
 * each start. A ring's private memory lives from its start to its stop: the split run's shadow
 * is not the packed run's records (before: split_shadow_alloc() freed the packed block and left
 * pk.cap, pk.rec, pk.in_flight pointing into it, and the second packed start reused it when cap
 * matched: a heap use-after-free in vq_packed_start()'s memset of in_flight, under ASan).
 */
static void restart_cycle(bool tx, bool in_order)
{
	struct lt *t = lt_new(tx);

	lt_start_fresh(t, true, in_order);
	lt_traffic(t);
	vq_stop(&t->p->vq);
	lt_start_fresh(t, false, in_order);
	lt_traffic(t);
	vq_stop(&t->p->vq);
	lt_start_fresh(t, true, in_order);
	lt_traffic(t);
	vq_stop(&t->p->vq);
	lt_start_fresh(t, false, !in_order);
	lt_traffic(t);
	vq_stop(&t->p->vq);
	lt_start_fresh(t, true, !in_order);
	lt_traffic(t);
	lt_free(t);
}

static void test_restart_packed_split_packed_tx_in_order(void **state)
{
	(void)state;
	restart_cycle(true, true);
}

static void test_restart_packed_split_packed_tx(void **state)
{
	(void)state;
	restart_cycle(true, false);
}

static void test_restart_packed_split_packed_rx_in_order(void **state)
{
	(void)state;
	restart_cycle(false, true);
}

static void test_restart_packed_split_packed_rx(void **state)
{
	(void)state;
	restart_cycle(false, false);
}

/*
 * A stop keeps the position as a base for the layout that ran: a start on the other layout
 * without a SET_VRING_BASE of its own starts from the beginning instead of reading a packed
 * base as a split index (or the other way round), and GET_VRING_BASE of the stopped ring says
 * where the run stopped, in its layout.
 */
static void test_base_of_other_layout_not_used(void **state)
{
	struct lt *t = lt_new(true);
	struct virtqueue *vq = &t->p->vq;

	(void)state;
	lt_start_fresh(t, true, false);
	lt_batch(t, 0, 5); /* avail and used at slot 5, wrap 1 */
	vq_stop(vq);
	assert_int_equal(vq_get_base(vq), 0x80058005u);
	lt_configure(t, false, false); /* no SET_VRING_BASE: the split ring starts at 0 */
	assert_int_equal(vq_start(vq, &t->p->mem.gm), 0);
	assert_int_equal(vq_get_base(vq), 0);
	lt_batch(t, 0, 5);
	lt_batch(t, 5, 3);
	vq_stop(vq);
	assert_int_equal(vq_get_base(vq), 8);
	lt_configure(t, true, false); /* the split base 8 is no packed position */
	memset(t->p->ring, 0, 16u * NUM);
	t->p->avail = t->p->used = 0;
	t->p->avail_wrap = t->p->used_wrap = true;
	assert_int_equal(vq_start(vq, &t->p->mem.gm), 0);
	assert_int_equal(vq_get_base(vq), 0x80008000u);
	lt_traffic(t);
	lt_free(t);
}

/*
 * The transport rewrites a running split ring's layout and size (what vnet_dev_set_features()
 * did for a SET_FEATURES with RING_PACKED, and SET_VRING_NUM does on a running ring): nothing
 * in the virtqueue follows until the ring stops; the ring runs on as started, byte-exact across
 * the ring's end. Before, vq_kick_disable() took the packed path and read the NULL Device Event
 * Suppression pointer (SIGSEGV), and pops indexed the avail ring with the new size.
 */
static void test_layout_flip_on_running_split_is_harmless(void **state)
{
	struct lt *t = lt_new(true);
	struct virtqueue *vq = &t->p->vq;

	(void)state;
	lt_start_fresh(t, false, false);
	lt_batch(t, 0, 5);
	vq->packed = true;
	vq->num = 32768;
	vq->in_order = vq->batch_used = true;
	vq_kick_disable(vq);
	assert_int_equal(t->fq.used->flags, VRING_USED_F_NO_NOTIFY); /* the split ring's flag */
	assert_false(vq_kick_enable(vq));
	assert_int_equal(t->fq.used->flags, 0);
	assert_false(vq_has_avail(vq));
	assert_int_equal(vq_avail_idx(vq), 5);
	assert_false(vq_avail_at_least(vq, 1));
	assert_true(vq_driver_would_notify(vq));
	lt_batch(t, 5, 3);
	lt_traffic(t); /* laps of the 8-entry ring */
	assert_int_equal(vq_get_base(vq), 5 + 3 + 3 * 8);
	assert_int_equal(vq_set_base(vq, 0x80008000u), -1); /* started: no base changes */
	assert_int_equal(vq_get_base(vq), 5 + 3 + 3 * 8);
	vq_stop(vq);
	assert_int_equal(vq_get_base(vq), 5 + 3 + 3 * 8);
	/* The next start takes the new layout: packed, with IN_ORDER. */
	vq->num = NUM;
	lt_start_fresh(t, true, true);
	lt_traffic(t);
	lt_free(t);
}

/* The same on a running packed ring rewritten to split: the packed run goes on. */
static void test_layout_flip_on_running_packed_is_harmless(void **state)
{
	struct lt *t = lt_new(false);
	struct virtqueue *vq = &t->p->vq;

	(void)state;
	lt_start_fresh(t, true, false);
	lt_batch(t, 0, 5);
	vq->packed = false;
	vq->num = 4096;
	vq->in_order = true;
	vq->event_idx = true;
	vq_kick_disable(vq);
	assert_int_equal(t->p->dev[1], VRING_PACKED_EVENT_F_DISABLE);
	assert_false(vq_kick_enable(vq));
	assert_int_equal(t->p->dev[1], VRING_PACKED_EVENT_F_ENABLE);
	lt_batch(t, 5, 3);
	lt_traffic(t);
	assert_int_equal(vq_get_base(vq), 0x80008000u); /* 4 laps: slot 0, wrap 1 again */
	vq_stop(vq);
	assert_int_equal(vq_get_base(vq), 0x80008000u);
	lt_free(t);
}

/* A start of a started ring stops it first: its position carries over, as from a stop. */
static void test_start_of_started_ring_restarts_it(void **state)
{
	struct lt *t = lt_new(true);
	struct virtqueue *vq = &t->p->vq;

	(void)state;
	lt_start_fresh(t, true, true);
	lt_batch(t, 0, 5);
	assert_int_equal(vq_start(vq, &t->p->mem.gm), 0);
	assert_int_equal(vq_get_base(vq), 0x80058005u);
	lt_batch(t, 5, 3);
	lt_traffic(t);
	lt_free(t);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restart_packed_split_packed_tx_in_order),
		cmocka_unit_test(test_restart_packed_split_packed_tx),
		cmocka_unit_test(test_restart_packed_split_packed_rx_in_order),
		cmocka_unit_test(test_restart_packed_split_packed_rx),
		cmocka_unit_test(test_base_of_other_layout_not_used),
		cmocka_unit_test(test_layout_flip_on_running_split_is_harmless),
		cmocka_unit_test(test_layout_flip_on_running_packed_is_harmless),
		cmocka_unit_test(test_start_of_started_ring_restarts_it),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]); /* one test by name (a pattern) */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
