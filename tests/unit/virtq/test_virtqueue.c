/* SPDX-License-Identifier: MIT */
/* test_virtqueue.c - the chain walker: valid chains and every kind of hostile chain. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "vq_fixture.h"

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
	guest_mem_unmap_all(&mem); /* the table's arrays (it owns no mapping) */
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
		set_desc(&desc[i], f->data, 1, i + 1 < n ? VRING_DESC_F_NEXT : 0,
			 (uint16_t)(i + 1));
	assert_int_equal(vq_walk_chain(&f->mem.gm, desc, num, 0, true, &f->chain),
			 VQ_WALK_TOO_LONG);
	free(desc);
}

static void test_walk_error_strings_exist(void **state)
{
	(void)state;
	for (int e = VQ_WALK_OK; e <= VQ_WALK_TOO_MANY_IOV; e++) {
		const char *s = vq_walk_error_str((enum vq_walk_error)e);

		assert_non_null(s);
		assert_true(strlen(s) > 0);
	}
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
