/* SPDX-License-Identifier: MIT */
/* vq_fixture.h - shared fixture of the virtqueue tests: fake memory, one queue, helpers. */
#ifndef VNETD_TEST_VQ_FIXTURE_H
#define VNETD_TEST_VQ_FIXTURE_H

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

#define MEM_GPA 0x40000ull
#define MEM_SIZE (2u << 20)
#define QSIZE 16

struct fx {
	struct fake_mem mem;
	struct fake_vq fq;
	struct virtqueue vq;
	uint64_t data; /* GPA of a 64 KiB data area */
	struct vq_chain chain;
};

static inline struct fx *fx_new(uint16_t num, bool indirect, bool event_idx)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fake_mem_init(&f->mem, MEM_GPA, MEM_SIZE, false);
	fake_vq_init(&f->fq, &f->mem, num);
	f->data = fake_mem_alloc(&f->mem, 0x10000, 64);
	fake_vq_setup_virtqueue(&f->fq, &f->vq);
	f->vq.indirect = indirect;
	f->vq.event_idx = event_idx;
	assert_int_equal(vq_start(&f->vq, &f->mem.gm), 0);
	assert_true(f->vq.started);
	assert_false(f->vq.broken);
	return f;
}

static inline int setup(void **state)
{
	*state = fx_new(QSIZE, true, false);
	return 0;
}

static inline int setup_event_idx(void **state)
{
	*state = fx_new(QSIZE, true, true);
	return 0;
}

static inline int teardown(void **state)
{
	struct fx *f = *state;

	fake_vq_destroy(&f->fq);
	fake_mem_free(&f->mem);
	free(f);
	return 0;
}

static inline void set_desc(struct vring_desc *d, uint64_t addr, uint32_t len, uint16_t flags,
			    uint16_t next)
{
	d->addr = addr;
	d->len = len;
	d->flags = flags;
	d->next = next;
}

static inline enum vq_walk_error walk(struct fx *f, unsigned head, bool indirect_ok)
{
	return vq_walk_chain(&f->mem.gm, f->fq.desc, f->fq.num, head, indirect_ok, &f->chain);
}

static inline uint8_t *host(struct fx *f, uint64_t gpa)
{
	return fake_mem_host(&f->mem, gpa);
}

/* Put one hand-made head into the avail ring and publish it. */
static inline void offer(struct fx *f, uint16_t head)
{
	fake_vq_add_head(&f->fq, head);
	fake_vq_publish(&f->fq);
}

/* ---- valid chains ---- */

#endif
