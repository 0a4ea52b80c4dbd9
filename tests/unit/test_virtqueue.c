/* test_virtqueue.c - chain walker (valid and hostile chains), vq_pop/vq_start checks, used ring, EVENT_IDX. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "fake_driver.h"
#include "virtqueue.h"

#define MEM_GPA 0x40000ull
#define MEM_SIZE (2u << 20)
#define QSIZE 16

struct fx {
	struct fake_mem mem;
	struct fake_vq fq;
	struct virtqueue vq;
	uint64_t data;  /* GPA of a 64 KiB data area */
	struct vq_chain chain;
};

static struct fx *fx_new(uint16_t num, bool indirect, bool event_idx)
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

static int setup(void **state)
{
	*state = fx_new(QSIZE, true, false);
	return 0;
}

static int setup_event_idx(void **state)
{
	*state = fx_new(QSIZE, true, true);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	fake_vq_destroy(&f->fq);
	fake_mem_free(&f->mem);
	free(f);
	return 0;
}

static void set_desc(struct vring_desc *d, uint64_t addr, uint32_t len, uint16_t flags,
		     uint16_t next)
{
	d->addr = addr;
	d->len = len;
	d->flags = flags;
	d->next = next;
}

static enum vq_walk_error walk(struct fx *f, unsigned head, bool indirect_ok)
{
	return vq_walk_chain(&f->mem.gm, f->fq.desc, f->fq.num, head, indirect_ok, &f->chain);
}

static uint8_t *host(struct fx *f, uint64_t gpa)
{
	return fake_mem_host(&f->mem, gpa);
}

/* Put one hand-made head into the avail ring and publish it. */
static void offer(struct fx *f, uint16_t head)
{
	fake_vq_add_head(&f->fq, head);
	fake_vq_publish(&f->fq);
}

/* ---- valid chains ---- */

static void test_walk_direct_chain_gives_readable_then_writable_iovecs(void **state)
{
	struct fx *f = *state;
	struct vring_desc *d = f->fq.desc;

	set_desc(&d[3], f->data, 12, VRING_DESC_F_NEXT, 7);
	set_desc(&d[7], f->data + 100, 100, VRING_DESC_F_NEXT, 1);
	set_desc(&d[1], f->data + 1000, 200, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 0);
	set_desc(&d[0], f->data + 4000, 50, VRING_DESC_F_WRITE, 9 /* ignored: no NEXT */);
	assert_int_equal(walk(f, 3, true), VQ_WALK_OK);
	assert_int_equal(f->chain.head, 3);
	assert_int_equal(f->chain.nread, 2);
	assert_int_equal(f->chain.nwrite, 2);
	assert_int_equal(f->chain.read_len, 112);
	assert_int_equal(f->chain.write_len, 250);
	assert_ptr_equal(f->chain.iov[0].iov_base, host(f, f->data));
	assert_int_equal(f->chain.iov[0].iov_len, 12);
	assert_ptr_equal(f->chain.iov[1].iov_base, host(f, f->data + 100));
	assert_int_equal(f->chain.iov[1].iov_len, 100);
	assert_ptr_equal(f->chain.iov[2].iov_base, host(f, f->data + 1000));
	assert_int_equal(f->chain.iov[2].iov_len, 200);
	assert_ptr_equal(f->chain.iov[3].iov_base, host(f, f->data + 4000));
	assert_int_equal(f->chain.iov[3].iov_len, 50);
}

static void test_walk_writable_only_chain(void **state)
{
	struct fx *f = *state;

	set_desc(&f->fq.desc[5], f->data + 64, 1526, VRING_DESC_F_WRITE, 0);
	assert_int_equal(walk(f, 5, false), VQ_WALK_OK);
	assert_int_equal(f->chain.head, 5);
	assert_int_equal(f->chain.nread, 0);
	assert_int_equal(f->chain.nwrite, 1);
	assert_int_equal(f->chain.write_len, 1526);
	assert_ptr_equal(f->chain.iov[0].iov_base, host(f, f->data + 64));
}

static void test_walk_indirect_chain(void **state)
{
	struct fx *f = *state;
	uint64_t tgpa = fake_mem_alloc(&f->mem, 3 * 16, 16);
	struct vring_desc *t = (struct vring_desc *)host(f, tgpa);

	set_desc(&t[0], f->data, 12, VRING_DESC_F_NEXT, 2);
	set_desc(&t[2], f->data + 64, 1000, VRING_DESC_F_NEXT, 1);
	set_desc(&t[1], f->data + 2048, 300, 0, 0);
	set_desc(&f->fq.desc[4], tgpa, 3 * 16, VRING_DESC_F_INDIRECT, 0);
	assert_int_equal(walk(f, 4, true), VQ_WALK_OK);
	assert_int_equal(f->chain.head, 4);
	assert_int_equal(f->chain.nread, 3);
	assert_int_equal(f->chain.nwrite, 0);
	assert_int_equal(f->chain.read_len, 1312);
	assert_ptr_equal(f->chain.iov[0].iov_base, host(f, f->data));
	assert_ptr_equal(f->chain.iov[1].iov_base, host(f, f->data + 64));
	assert_int_equal(f->chain.iov[1].iov_len, 1000);
	assert_ptr_equal(f->chain.iov[2].iov_base, host(f, f->data + 2048));
	assert_int_equal(f->chain.iov[2].iov_len, 300);
}

static void test_walk_indirect_mixed_readable_and_writable(void **state)
{
	struct fx *f = *state;
	uint64_t tgpa = fake_mem_alloc(&f->mem, 4 * 16, 16);
	struct vring_desc *t = (struct vring_desc *)host(f, tgpa);

	set_desc(&t[0], f->data, 2, VRING_DESC_F_NEXT, 1);
	set_desc(&t[1], f->data + 8, 4, VRING_DESC_F_NEXT, 2);
	set_desc(&t[2], f->data + 16, 8, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 3);
	set_desc(&t[3], f->data + 32, 1, VRING_DESC_F_WRITE, 0);
	set_desc(&f->fq.desc[0], tgpa, 4 * 16, VRING_DESC_F_INDIRECT, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_OK);
	assert_int_equal(f->chain.nread, 2);
	assert_int_equal(f->chain.nwrite, 2);
	assert_int_equal(f->chain.read_len, 6);
	assert_int_equal(f->chain.write_len, 9);
	assert_ptr_equal(f->chain.iov[2].iov_base, host(f, f->data + 16));
	assert_ptr_equal(f->chain.iov[3].iov_base, host(f, f->data + 32));
	assert_int_equal(f->chain.iov[3].iov_len, 1);
}

static void test_walk_chain_as_long_as_the_queue_is_ok(void **state)
{
	struct fx *f = *state;

	for (unsigned i = 0; i < QSIZE; i++)
		set_desc(&f->fq.desc[i], f->data + 16 * i, 16,
			 i + 1 < QSIZE ? VRING_DESC_F_NEXT : 0, (uint16_t)(i + 1));
	assert_int_equal(walk(f, 0, true), VQ_WALK_OK);
	assert_int_equal(f->chain.nread, QSIZE);
	assert_int_equal(f->chain.read_len, 16 * QSIZE);
}

/* ---- hostile chains ---- */

static void test_walk_self_loop_is_too_long(void **state)
{
	struct fx *f = *state;

	set_desc(&f->fq.desc[2], f->data, 16, VRING_DESC_F_NEXT, 2);
	assert_int_equal(walk(f, 2, true), VQ_WALK_TOO_LONG);
}

static void test_walk_cycle_is_too_long(void **state)
{
	struct fx *f = *state;

	set_desc(&f->fq.desc[0], f->data, 16, VRING_DESC_F_NEXT, 1);
	set_desc(&f->fq.desc[1], f->data, 16, VRING_DESC_F_NEXT, 2);
	set_desc(&f->fq.desc[2], f->data, 16, VRING_DESC_F_NEXT, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_TOO_LONG);
}

static void test_walk_head_out_of_range(void **state)
{
	struct fx *f = *state;

	assert_int_equal(walk(f, QSIZE, true), VQ_WALK_BAD_HEAD);
	assert_int_equal(walk(f, 0xffff, true), VQ_WALK_BAD_HEAD);
}

static void test_walk_next_out_of_range(void **state)
{
	struct fx *f = *state;

	set_desc(&f->fq.desc[0], f->data, 16, VRING_DESC_F_NEXT, QSIZE);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_NEXT);
	set_desc(&f->fq.desc[0], f->data, 16, VRING_DESC_F_NEXT, 0xffff);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_NEXT);
}

static void test_walk_address_outside_memory(void **state)
{
	struct fx *f = *state;
	uint64_t end = fake_mem_end_gpa(&f->mem);

	set_desc(&f->fq.desc[0], 0, 16, 0, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_ADDR);
	set_desc(&f->fq.desc[0], MEM_GPA - 8, 16, 0, 0); /* starts before memory */
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_ADDR);
	set_desc(&f->fq.desc[0], end - 8, 16, 0, 0); /* runs past the end */
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_ADDR);
	/* A bad buffer later in the chain is caught too. */
	set_desc(&f->fq.desc[0], f->data, 16, VRING_DESC_F_NEXT, 1);
	set_desc(&f->fq.desc[1], end, 1, VRING_DESC_F_WRITE, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_ADDR);
}

static void test_walk_address_plus_len_overflowing_64_bits(void **state)
{
	struct fx *f = *state;

	set_desc(&f->fq.desc[0], UINT64_MAX - 0xff, 0x1000, 0, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_ADDR);
	set_desc(&f->fq.desc[0], UINT64_MAX, 2, VRING_DESC_F_WRITE, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_ADDR);
}

static void test_walk_len_all_ones(void **state)
{
	struct fx *f = *state;

	set_desc(&f->fq.desc[0], f->data, 0xffffffffu, VRING_DESC_F_WRITE, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_ADDR);
}

static void test_walk_total_over_4gib_is_too_big(void **state)
{
	/* A 3 GiB PROT_NONE mapping: translatable, never touched by the walker. */
	const uint64_t big = 3ull << 30;
	struct vring_desc desc[4];
	struct guest_mem mem;
	struct guest_mem_region r = {0};
	struct fx *f = *state;
	void *map = mmap(NULL, big, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	assert_true(map != MAP_FAILED);
	memset(&mem, 0, sizeof(mem));
	r.gpa = 0x100000000ull;
	r.uva = 0x100000000ull;
	r.size = big;
	r.host = map;
	assert_int_equal(guest_mem_add(&mem, &r), 0);
	set_desc(&desc[0], r.gpa, 0x80000000u, VRING_DESC_F_NEXT, 1);
	set_desc(&desc[1], r.gpa, 0x80000000u, VRING_DESC_F_NEXT, 2);
	set_desc(&desc[2], r.gpa, 0x10u, 0, 0);
	assert_int_equal(vq_walk_chain(&mem, desc, 4, 0, true, &f->chain), VQ_WALK_TOO_BIG);
	/* Just under 4 GiB is fine. */
	set_desc(&desc[1], r.gpa, 0x7fffffffu, 0, 0);
	assert_int_equal(vq_walk_chain(&mem, desc, 4, 0, true, &f->chain), VQ_WALK_OK);
	assert_int_equal(f->chain.read_len, 0xffffffffull);
	munmap(map, big);
}

static void test_walk_indirect_not_negotiated(void **state)
{
	struct fx *f = *state;
	uint64_t tgpa = fake_mem_alloc(&f->mem, 16, 16);

	set_desc((struct vring_desc *)host(f, tgpa), f->data, 16, 0, 0);
	set_desc(&f->fq.desc[0], tgpa, 16, VRING_DESC_F_INDIRECT, 0);
	assert_int_equal(walk(f, 0, false), VQ_WALK_INDIRECT_DISALLOWED);
}

static void test_walk_indirect_len_zero(void **state)
{
	struct fx *f = *state;
	uint64_t tgpa = fake_mem_alloc(&f->mem, 16, 16);

	set_desc(&f->fq.desc[0], tgpa, 0, VRING_DESC_F_INDIRECT, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_INDIRECT);
}

static void test_walk_indirect_len_not_multiple_of_16(void **state)
{
	struct fx *f = *state;
	uint64_t tgpa = fake_mem_alloc(&f->mem, 32, 16);

	set_desc((struct vring_desc *)host(f, tgpa), f->data, 16, 0, 0);
	set_desc(&f->fq.desc[0], tgpa, 17, VRING_DESC_F_INDIRECT, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_INDIRECT);
	set_desc(&f->fq.desc[0], tgpa, 8, VRING_DESC_F_INDIRECT, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_INDIRECT);
}

static void test_walk_indirect_table_outside_memory(void **state)
{
	struct fx *f = *state;

	set_desc(&f->fq.desc[0], fake_mem_end_gpa(&f->mem) - 16, 32, VRING_DESC_F_INDIRECT, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_INDIRECT);
	set_desc(&f->fq.desc[0], UINT64_MAX - 15, 32, VRING_DESC_F_INDIRECT, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_INDIRECT);
}

static void test_walk_indirect_table_at_unaligned_address(void **state)
{
	struct fx *f = *state;
	uint64_t tgpa = fake_mem_alloc(&f->mem, 64, 16) + 3;
	struct vring_desc t[2];
	enum vq_walk_error err;

	/* The guest picks the address: the device may refuse it, but must not misread it. */
	set_desc(&t[0], f->data, 12, VRING_DESC_F_NEXT, 1);
	set_desc(&t[1], f->data + 64, 100, VRING_DESC_F_WRITE, 0);
	memcpy(host(f, tgpa), t, sizeof(t));
	set_desc(&f->fq.desc[0], tgpa, sizeof(t), VRING_DESC_F_INDIRECT, 0);
	err = walk(f, 0, true);
	if (err == VQ_WALK_BAD_INDIRECT)
		return;
	assert_int_equal(err, VQ_WALK_OK);
	assert_int_equal(f->chain.nread, 1);
	assert_int_equal(f->chain.nwrite, 1);
	assert_ptr_equal(f->chain.iov[1].iov_base, host(f, f->data + 64));
	assert_int_equal(f->chain.iov[1].iov_len, 100);
}

static void test_walk_nested_indirect(void **state)
{
	struct fx *f = *state;
	uint64_t t1 = fake_mem_alloc(&f->mem, 32, 16);
	uint64_t t2 = fake_mem_alloc(&f->mem, 16, 16);
	struct vring_desc *t = (struct vring_desc *)host(f, t1);

	set_desc((struct vring_desc *)host(f, t2), f->data, 16, 0, 0);
	set_desc(&t[0], f->data, 16, VRING_DESC_F_NEXT, 1);
	set_desc(&t[1], t2, 16, VRING_DESC_F_INDIRECT, 0);
	set_desc(&f->fq.desc[0], t1, 32, VRING_DESC_F_INDIRECT, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_NESTED_INDIRECT);
}

static void test_walk_indirect_with_next(void **state)
{
	struct fx *f = *state;
	uint64_t tgpa = fake_mem_alloc(&f->mem, 16, 16);

	set_desc((struct vring_desc *)host(f, tgpa), f->data, 16, 0, 0);
	set_desc(&f->fq.desc[0], tgpa, 16, VRING_DESC_F_INDIRECT | VRING_DESC_F_NEXT, 1);
	set_desc(&f->fq.desc[1], f->data, 16, 0, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_NESTED_INDIRECT);
}

static void test_walk_readable_after_writable(void **state)
{
	struct fx *f = *state;
	uint64_t tgpa = fake_mem_alloc(&f->mem, 32, 16);
	struct vring_desc *t = (struct vring_desc *)host(f, tgpa);

	set_desc(&f->fq.desc[0], f->data, 16, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	set_desc(&f->fq.desc[1], f->data + 16, 16, 0, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_READ_AFTER_WRITE);
	/* The same inside an indirect table. */
	set_desc(&t[0], f->data, 16, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	set_desc(&t[1], f->data + 16, 16, 0, 0);
	set_desc(&f->fq.desc[2], tgpa, 32, VRING_DESC_F_INDIRECT, 0);
	assert_int_equal(walk(f, 2, true), VQ_WALK_READ_AFTER_WRITE);
}

static void test_walk_indirect_next_outside_table(void **state)
{
	struct fx *f = *state;
	uint64_t tgpa = fake_mem_alloc(&f->mem, 32, 16);
	struct vring_desc *t = (struct vring_desc *)host(f, tgpa);

	set_desc(&t[0], f->data, 16, VRING_DESC_F_NEXT, 2); /* table has 2 entries */
	set_desc(&t[1], f->data, 16, 0, 0);
	set_desc(&f->fq.desc[0], tgpa, 32, VRING_DESC_F_INDIRECT, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_NEXT);
}

static void test_walk_indirect_loop_is_too_long(void **state)
{
	struct fx *f = *state;
	uint64_t tgpa = fake_mem_alloc(&f->mem, 32, 16);
	struct vring_desc *t = (struct vring_desc *)host(f, tgpa);

	set_desc(&t[0], f->data, 16, VRING_DESC_F_NEXT, 1);
	set_desc(&t[1], f->data, 16, VRING_DESC_F_NEXT, 0);
	set_desc(&f->fq.desc[0], tgpa, 32, VRING_DESC_F_INDIRECT, 0);
	assert_int_equal(walk(f, 0, true), VQ_WALK_TOO_LONG);
}

static void indirect_table(struct fx *f, unsigned n)
{
	uint64_t tgpa = fake_mem_alloc(&f->mem, 16ull * n, 16);
	struct vring_desc *t = (struct vring_desc *)host(f, tgpa);

	for (unsigned i = 0; i < n; i++)
		set_desc(&t[i], f->data, 1, i + 1 < n ? VRING_DESC_F_NEXT : 0, (uint16_t)(i + 1));
	set_desc(&f->fq.desc[0], tgpa, 16u * n, VRING_DESC_F_INDIRECT, 0);
}

static void test_walk_indirect_chains_count_toward_max_chain(void **state)
{
	struct fx *f = *state;

	/* VQ_MAX_CHAIN counts the INDIRECT descriptor too: 1023 + 1 fits ... */
	indirect_table(f, VQ_MAX_CHAIN - 1);
	assert_int_equal(walk(f, 0, true), VQ_WALK_OK);
	assert_int_equal(f->chain.nread, VQ_MAX_CHAIN - 1);
	/* ... 1024 + 1 does not. */
	indirect_table(f, VQ_MAX_CHAIN);
	assert_int_equal(walk(f, 0, true), VQ_WALK_TOO_LONG);
}

static void test_walk_indirect_table_larger_than_max_chain_is_bad(void **state)
{
	struct fx *f = *state;

	/* A table that could never be walked is rejected before walking it. */
	indirect_table(f, VQ_MAX_CHAIN + 1);
	assert_int_equal(walk(f, 0, true), VQ_WALK_BAD_INDIRECT);
}

static void test_walk_direct_chain_over_max_chain_is_too_long(void **state)
{
	const unsigned num = 2048, n = VQ_MAX_CHAIN + 76;
	struct vring_desc *desc = calloc(num, sizeof(*desc));
	struct fx *f = *state;

	assert_non_null(desc);
	for (unsigned i = 0; i < n; i++)
		set_desc(&desc[i], f->data, 1, i + 1 < n ? VRING_DESC_F_NEXT : 0, (uint16_t)(i + 1));
	assert_int_equal(vq_walk_chain(&f->mem.gm, desc, num, 0, true, &f->chain), VQ_WALK_TOO_LONG);
	free(desc);
}

static void test_walk_error_strings_exist(void **state)
{
	(void)state;
	for (int e = VQ_WALK_OK; e <= VQ_WALK_TOO_BIG; e++) {
		const char *s = vq_walk_error_str((enum vq_walk_error)e);

		assert_non_null(s);
		assert_true(strlen(s) > 0);
	}
}

/* ---- vq_start / vq_pop ---- */

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

	f->vq.indirect = false;
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
		T(test_walk_direct_chain_gives_readable_then_writable_iovecs),
		T(test_walk_writable_only_chain),
		T(test_walk_indirect_chain),
		T(test_walk_indirect_mixed_readable_and_writable),
		T(test_walk_chain_as_long_as_the_queue_is_ok),
		T(test_walk_self_loop_is_too_long),
		T(test_walk_cycle_is_too_long),
		T(test_walk_head_out_of_range),
		T(test_walk_next_out_of_range),
		T(test_walk_address_outside_memory),
		T(test_walk_address_plus_len_overflowing_64_bits),
		T(test_walk_len_all_ones),
		T(test_walk_total_over_4gib_is_too_big),
		T(test_walk_indirect_not_negotiated),
		T(test_walk_indirect_len_zero),
		T(test_walk_indirect_len_not_multiple_of_16),
		T(test_walk_indirect_table_outside_memory),
		T(test_walk_indirect_table_at_unaligned_address),
		T(test_walk_nested_indirect),
		T(test_walk_indirect_with_next),
		T(test_walk_readable_after_writable),
		T(test_walk_indirect_next_outside_table),
		T(test_walk_indirect_loop_is_too_long),
		T(test_walk_indirect_chains_count_toward_max_chain),
		T(test_walk_indirect_table_larger_than_max_chain_is_bad),
		T(test_walk_direct_chain_over_max_chain_is_too_long),
		T(test_walk_error_strings_exist),
		T(test_start_rejects_rings_outside_memory),
		T(test_start_accepts_uva_ring_addresses),
		T(test_start_rejects_bad_queue_size),
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
