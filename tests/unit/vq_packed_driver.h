/* SPDX-License-Identifier: MIT */
/* vq_packed_driver.h - the driver side of a packed ring for the packed-virtqueue unit tests. */
#ifndef VNETD_TEST_VQ_PACKED_DRIVER_H
#define VNETD_TEST_VQ_PACKED_DRIVER_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "virtq/virtq.h"
#include "dev/vnet_dev_core.h"

/* Each test file uses some of these helpers. */
#define VQP_HELPER static __attribute__((unused))

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

VQP_HELPER void pd_start(struct pd *p)
{
	assert_int_equal(vq_start(&p->vq, &p->mem.gm), 0);
	assert_true(p->vq.started);
}

/*
 * A device that negotiated VIRTIO_F_RING_PACKED (plus extra features) whose queue qidx is p's
 * ring, started and enabled; the device's other queues are not started.
 */
VQP_HELPER struct test_dev *pd_device(struct pd *p, struct vnet_dev_params *prm, unsigned qidx,
				      uint64_t extra)
{
	struct test_dev *td;
	struct vnet_queue *q;

	prm->features_mask = ~0ull;
	td = td_create(prm, TD_BASE_FEATURES | BIT_ULL(VIRTIO_F_RING_PACKED) | extra);
	assert_true(td->features & BIT_ULL(VIRTIO_F_RING_PACKED));
	q = vnet_dev_queue(td->dev, qidx);
	q->vq.num = p->num;
	q->vq.desc_addr = p->ring_gpa;
	q->vq.avail_addr = p->drv_gpa;
	q->vq.used_addr = p->dev_gpa;
	q->vq.ring_space = GUEST_ADDR_GPA;
	assert_int_equal(vnet_dev_queue_start(td->dev, qidx, &p->mem.gm), 0);
	vnet_dev_queue_enable(td->dev, qidx, true);
	assert_true(q->vq.packed);
	return td;
}

VQP_HELPER int setup(void **state)
{
	struct pd *p = pd_new(5, false, true); /* 5: packed sizes need not be a power of 2 */

	pd_start(p);
	*state = p;
	return 0;
}

VQP_HELPER int setup_event_idx(void **state)
{
	struct pd *p = pd_new(8, true, true);

	pd_start(p);
	*state = p;
	return 0;
}

VQP_HELPER int teardown(void **state)
{
	struct pd *p = *state;

	vq_reset(&p->vq);
	fake_mem_free(&p->mem);
	free(p);
	return 0;
}

VQP_HELPER uint16_t avail_flags(bool wrap)
{
	return wrap ? F_AVAIL : F_USED;
}

/* Make a list of n buffers available with buffer id `id`; the head's flags are written last. */
VQP_HELPER void pd_add(struct pd *p, const struct fake_buf *b, unsigned n, uint16_t id)
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
VQP_HELPER void pd_add1(struct pd *p, uint16_t id, uint32_t len, bool write)
{
	struct fake_buf b = {p->data + 256u * id, len, write};

	pd_add(p, &b, 1, id);
}

/* A list whose head is an INDIRECT descriptor to a table of n buffers. */
VQP_HELPER void pd_add_indirect(struct pd *p, const struct fake_buf *b, unsigned n, uint16_t id,
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
VQP_HELPER bool pd_get_used(struct pd *p, uint16_t *id, uint32_t *len, uint16_t *flags)
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


/* The queue must be broken and pop nothing more. */
VQP_HELPER void expect_broken(struct pd *p)
{
	assert_int_equal(vq_pop(&p->vq, &p->chain), -1);
	assert_true(p->vq.broken);
	assert_int_equal(vq_pop(&p->vq, &p->chain), -1);
}

/* Write the Driver Event Suppression structure. */
VQP_HELPER void drv_event(struct pd *p, uint16_t off_wrap, uint16_t flags)
{
	p->drv[0] = off_wrap;
	p->drv[1] = flags;
}

/* Make n one-buffer lists available, pop, push and publish them, and read them back. */
VQP_HELPER void complete(struct pd *p, unsigned n)
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

#endif
