/* SPDX-License-Identifier: MIT */
/* test_packed_stop.c - a packed queue stops without loss: chains given back, held completions. */
#include "coal_helpers.h"
#include "vq_packed_driver.h"

#include "lib/virtio_net_defs.h"
#include "dev/vnet_dev_core.h"

#define FRAME 64

struct pk_dev {
	struct test_dev *td;
	struct pd *p; /* the TX ring's driver side, in its own guest memory */
};

static struct pk_dev *pk_new(bool in_order)
{
	struct pk_dev *k = calloc(1, sizeof(*k));
	struct vnet_dev_params prm;

	assert_non_null(k);
	td_default_params(&prm, 1);
	k->p = pd_new(8, false, true);
	k->td = pd_device(k->p, &prm, TXQ, in_order ? BIT_ULL(VIRTIO_F_IN_ORDER) : 0);
	assert_true(vnet_dev_queue(k->td->dev, TXQ)->vq.in_order == in_order);
	return k;
}

static void pk_free(struct pk_dev *k)
{
	td_free(k->td);
	fake_mem_free(&k->p->mem);
	free(k->p);
	free(k);
}

/* The driver sends frame `marker` (12-byte header, FRAME bytes) as buffer id `id`. */
static void pk_send(struct pk_dev *k, uint16_t id, uint8_t marker)
{
	uint8_t *d = fake_mem_host(&k->p->mem, k->p->data + 256u * id);

	memset(d, 0, VNET_HDR_LEN + FRAME);
	d[VNET_HDR_LEN] = marker;
	pd_add1(k->p, id, VNET_HDR_LEN + FRAME, false);
}

static void restart_at(struct pk_dev *k, uint32_t base)
{
	struct vnet_queue *q = vnet_dev_queue(k->td->dev, TXQ);

	assert_int_equal(vq_set_base(&q->vq, base), 0);
	assert_int_equal(vnet_dev_queue_start(k->td->dev, TXQ, &k->p->mem.gm), 0);
	vnet_dev_kick(k->td->dev, TXQ);
}

static int eagain_on_second_attempt(struct test_dev *td)
{
	if (td->tx_attempts == 2)
		td->tx_eagain = 1;
	return 0;
}

/*
 * The backend refuses the second frame: GET_VRING_BASE's base points at it, the driver sees only
 * the first used, and a restart at that base sends the other two, each once, in order. With
 * IN_ORDER the restart's batch is one used descriptor, the last id, at the batch's first slot.
 */
static void stop_gives_back(bool in_order)
{
	struct pk_dev *k = pk_new(in_order);
	struct test_dev *td = k->td;
	uint16_t id;
	uint32_t len, base;

	td->tx_hook = eagain_on_second_attempt;
	for (uint16_t i = 0; i < 3; i++)
		pk_send(k, i, (uint8_t)(0xa0 + i));
	vnet_dev_kick(td->dev, TXQ);
	assert_int_equal(td->npkts, 1);
	assert_true(vnet_dev_queue(td->dev, TXQ)->tx_blocked);
	base = vnet_dev_queue_stop(td->dev, TXQ);
	/* Slot 1, wrap 1, both halves: the refused chain is not marked used, not lost. */
	assert_int_equal(base, 0x80018001u);
	assert_true(pd_get_used(k->p, &id, &len, NULL));
	assert_int_equal(id, 0);
	assert_false(pd_get_used(k->p, &id, &len, NULL));
	restart_at(k, base);
	assert_int_equal(td->npkts, 3);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(td->pkts[i].data[VNET_HDR_LEN], 0xa0 + i);
	assert_true(pd_get_used(k->p, &id, &len, NULL));
	if (in_order) {
		assert_int_equal(id, 2); /* covers ids 1 and 2 */
		k->p->used = 3;
	} else {
		assert_int_equal(id, 1);
		assert_true(pd_get_used(k->p, &id, &len, NULL));
		assert_int_equal(id, 2);
	}
	assert_false(pd_get_used(k->p, &id, &len, NULL));
	assert_int_equal(vnet_dev_queue_stop(td->dev, TXQ), 0x80038003u);
	assert_int_equal(stats(td, TXQ)->dropped, 0);
	pk_free(k);
}

static void test_stop_gives_back_refused_chain(void **state)
{
	(void)state;
	stop_gives_back(false);
}

static void test_stop_gives_back_refused_chain_in_order(void **state)
{
	(void)state;
	stop_gives_back(true);
}

/*
 * Completions coalescing holds are published and signalled at the stop: the base is past them
 * and a restart there walks nothing again (nothing used twice), over a ring lap too.
 */
static void test_stop_publishes_held_completions_across_a_lap(void **state)
{
	struct pk_dev *k = pk_new(false);
	struct test_dev *td = k->td;
	uint16_t id;
	uint32_t len, base = 0;

	(void)state;
	assert_int_equal(td_coal_cmd(td, TX_SET, 100, 1000000), VIRTIO_NET_OK);
	for (unsigned round = 0; round < 3; round++) {
		for (uint16_t i = 0; i < 5; i++)
			pk_send(k, i, (uint8_t)(round * 5 + i));
		vnet_dev_kick(td->dev, TXQ);
		assert_int_equal(td->notifies[TXQ], round); /* held: 5 of 100 frames */
		base = vnet_dev_queue_stop(td->dev, TXQ);
		assert_int_equal(td->notifies[TXQ], round + 1); /* signalled at the stop */
		for (uint16_t i = 0; i < 5; i++) {
			assert_true(pd_get_used(k->p, &id, &len, NULL));
			assert_int_equal(id, i);
		}
		assert_false(pd_get_used(k->p, &id, &len, NULL));
		/* Base: the driver's next slot and wrap, both halves. */
		assert_int_equal(base, ((uint32_t)k->p->avail | (k->p->avail_wrap ? 0x8000u : 0)) *
					       0x10001u);
		restart_at(k, base);
		assert_int_equal(td->npkts, (round + 1) * 5); /* nothing walked again */
	}
	assert_int_equal(stats(td, TXQ)->stop_notifications, 3);
	for (unsigned i = 0; i < 15; i++)
		assert_int_equal(td->pkts[i].data[VNET_HDR_LEN], i);
	pk_free(k);
}

/* A burst backend (as the switch and the tap): records each frame as transmit() would, takes all. */
static unsigned burst_take_all(struct vnet_backend *be, const struct vnet_frame *f,
			       const struct virtio_net_hdr_v1 *hdr, unsigned n, uint32_t room,
			       uint32_t *extra, bool *full)
{
	struct test_dev *td = be->td;

	(void)hdr;
	(void)room;
	(void)extra;
	(void)full;
	for (unsigned i = 0; i < n; i++) {
		struct td_packet *pk = &td->pkts[td->npkts++];

		assert_true(td->npkts <= TD_MAX_PACKETS);
		pk->len = VNET_HDR_LEN + f[i].len;
		pk->data = calloc(1, pk->len);
		assert_non_null(pk->data);
		memcpy(pk->data + VNET_HDR_LEN, f[i].data, f[i].len);
	}
	return n;
}

/*
 * A burst backend's frames on a packed TX queue complete without the shadow (reads_only): each
 * used descriptor carries the id the driver gave, length 0 (the driver wrote the buffer's length
 * there) and no WRITE flag, in pop order, across ring laps with batches that wrap mid-way.
 */
static void test_burst_completions_ids_and_zero_lengths(void **state)
{
	static struct vnet_backend_ops ops;
	struct pk_dev *k = pk_new(false);
	struct test_dev *td = k->td;
	unsigned sent = 0;

	(void)state;
	ops = td_backend_ops;
	ops.transmit_burst = burst_take_all;
	vnet_dev_attach_backend(td->dev, &ops, &td->be);
	assert_true(vnet_dev_queue(td->dev, TXQ)->vq.reads_only);
	for (unsigned round = 0; round < 6; round++) {
		uint16_t ids[5], id, flags;
		uint32_t len;

		for (unsigned i = 0; i < 5; i++) {
			ids[i] = (uint16_t)((round * 3 + i * 5) % 8); /* 5 distinct ids, shuffled */
			pk_send(k, ids[i], (uint8_t)(sent + i));
		}
		vnet_dev_kick(td->dev, TXQ);
		assert_int_equal(td->npkts, sent + 5);
		for (unsigned i = 0; i < 5; i++) {
			assert_int_equal(td->pkts[sent + i].data[VNET_HDR_LEN], (uint8_t)(sent + i));
			assert_true(pd_get_used(k->p, &id, &len, &flags));
			assert_int_equal(id, ids[i]);
			assert_int_equal(len, 0);
			assert_false(flags & VRING_DESC_F_WRITE);
		}
		assert_false(pd_get_used(k->p, &id, &len, NULL));
		sent += 5;
	}
	assert_int_equal(stats(td, TXQ)->packets, sent);
	pk_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stop_gives_back_refused_chain),
	    cmocka_unit_test(test_stop_gives_back_refused_chain_in_order),
	    cmocka_unit_test(test_stop_publishes_held_completions_across_a_lap),
	    cmocka_unit_test(test_burst_completions_ids_and_zero_lengths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
