/* SPDX-License-Identifier: MIT */
/* test_guest_mem.c - guest_mem_translate() / _iov() bounds, overflow and region-table rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "mem/guest_mem.h"

#define GPA0 0x10000ull
#define UVA0 0x7f1200000000ull
#define SIZE0 0x4000ull

struct fixture {
	uint8_t *buf;
	struct guest_mem mem;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct guest_mem_region r = {0};

	assert_non_null(f);
	f->buf = calloc(1, 2 * SIZE0);
	assert_non_null(f->buf);
	r.gpa = GPA0;
	r.uva = UVA0;
	r.size = SIZE0;
	r.host = f->buf;
	assert_int_equal(guest_mem_add(&f->mem, &r), 0);
	/* Second region directly after the first in GPA, but elsewhere in host memory. */
	r.gpa = GPA0 + SIZE0;
	r.uva = UVA0 + 0x100000;
	r.size = SIZE0;
	r.host = f->buf + SIZE0;
	assert_int_equal(guest_mem_add(&f->mem, &r), 0);
	assert_int_equal(f->mem.nregions, 2);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	guest_mem_unmap_all(&f->mem); /* owns no mapping: frees the arrays */
	free(f->buf);
	free(f);
	return 0;
}

static void test_translate_inside_region_returns_host_pointer(void **state)
{
	struct fixture *f = *state;

	assert_ptr_equal(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0, 1), f->buf);
	assert_ptr_equal(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 + 0x123, 0x100),
			 f->buf + 0x123);
	assert_ptr_equal(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 + SIZE0 + 8, 8),
			 f->buf + SIZE0 + 8);
}

static void test_translate_whole_region_and_exact_end(void **state)
{
	struct fixture *f = *state;

	assert_ptr_equal(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0, SIZE0), f->buf);
	assert_ptr_equal(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 + SIZE0 - 4, 4),
			 f->buf + SIZE0 - 4);
}

static void test_translate_outside_memory_is_null(void **state)
{
	struct fixture *f = *state;

	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, 0, 1));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 - 1, 1));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 - 1, 2));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 + 2 * SIZE0, 1));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 + 2 * SIZE0 - 1, 2));
}

static void test_translate_range_crossing_regions_is_null(void **state)
{
	struct fixture *f = *state;

	/* GPA-contiguous, but the ranges must lie in ONE region. */
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 + SIZE0 - 1, 2));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0, 2 * SIZE0));
}

static void test_translate_len_zero_is_treated_as_one(void **state)
{
	struct fixture *f = *state;

	assert_ptr_equal(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 + SIZE0 - 1, 0),
			 f->buf + SIZE0 - 1);
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 + 2 * SIZE0, 0));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 - 1, 0));
}

static void test_translate_overflowing_range_is_null(void **state)
{
	struct fixture *f = *state;

	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 + 16, UINT64_MAX));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0 + 16, UINT64_MAX - 15));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0, UINT64_MAX - GPA0 + 1));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, UINT64_MAX, 1));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, UINT64_MAX, 2));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, UINT64_MAX - 0xfff, 0x2000));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, GPA0, 0xffffffffull));
}

static void test_translate_uva_space_uses_uva(void **state)
{
	struct fixture *f = *state;

	assert_ptr_equal(guest_mem_translate(&f->mem, GUEST_ADDR_UVA, UVA0 + 0x40, 0x40),
			 f->buf + 0x40);
	assert_ptr_equal(guest_mem_translate(&f->mem, GUEST_ADDR_UVA, UVA0 + 0x100000 + 1, 1),
			 f->buf + SIZE0 + 1);
	/* A GPA is not a UVA and vice versa. */
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_UVA, GPA0, 1));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_GPA, UVA0, 1));
	assert_null(guest_mem_translate(&f->mem, GUEST_ADDR_UVA, UVA0 + SIZE0 - 1, 2));
}

/* ---- guest_mem_translate_iov(): buffers may straddle adjacent regions ---- */

static void test_translate_iov_inside_one_region_is_one_iovec(void **state)
{
	struct fixture *f = *state;
	struct iovec iov[4];

	assert_int_equal(
	    guest_mem_translate_iov(&f->mem, GUEST_ADDR_GPA, GPA0 + 0x10, 0x100, iov, 4), 1);
	assert_ptr_equal(iov[0].iov_base, f->buf + 0x10);
	assert_int_equal(iov[0].iov_len, 0x100);
	/* Up to the exact end of a region is still one. */
	assert_int_equal(guest_mem_translate_iov(&f->mem, GUEST_ADDR_GPA, GPA0, SIZE0, iov, 4), 1);
	assert_int_equal(iov[0].iov_len, SIZE0);
	assert_int_equal(guest_mem_translate_iov(&f->mem, GUEST_ADDR_GPA, GPA0, 0, iov, 4), 0);
}

static void test_translate_iov_splits_at_adjacent_region_boundary(void **state)
{
	struct fixture *f = *state;
	struct iovec iov[4];

	assert_int_equal(
	    guest_mem_translate_iov(&f->mem, GUEST_ADDR_GPA, GPA0 + SIZE0 - 4, 16, iov, 4), 2);
	assert_ptr_equal(iov[0].iov_base, f->buf + SIZE0 - 4);
	assert_int_equal(iov[0].iov_len, 4);
	assert_ptr_equal(iov[1].iov_base, f->buf + SIZE0);
	assert_int_equal(iov[1].iov_len, 12);
	/* Both regions whole. */
	assert_int_equal(guest_mem_translate_iov(&f->mem, GUEST_ADDR_GPA, GPA0, 2 * SIZE0, iov, 4),
			 2);
	assert_int_equal(iov[0].iov_len, SIZE0);
	assert_int_equal(iov[1].iov_len, SIZE0);
}

static void test_translate_iov_pieces_map_to_each_regions_own_memory(void **state)
{
	static uint8_t a[32], b[16], c[64];
	struct guest_mem mem;
	struct guest_mem_region r = {.gpa = 0x1000, .uva = 0x9000, .size = sizeof(a), .host = a};
	struct iovec iov[3];

	(void)state;
	memset(&mem, 0, sizeof(mem));
	assert_int_equal(guest_mem_add(&mem, &r), 0);
	r = (struct guest_mem_region){.gpa = 0x1020, .uva = 0x5000, .size = sizeof(b), .host = b};
	assert_int_equal(guest_mem_add(&mem, &r), 0);
	r = (struct guest_mem_region){.gpa = 0x1030, .uva = 0x7000, .size = sizeof(c), .host = c};
	assert_int_equal(guest_mem_add(&mem, &r), 0);
	/* 0x101e .. 0x1034: 2 bytes of a, all of b, 4 bytes of c. */
	assert_int_equal(guest_mem_translate_iov(&mem, GUEST_ADDR_GPA, 0x101e, 22, iov, 3), 3);
	assert_ptr_equal(iov[0].iov_base, a + 30);
	assert_int_equal(iov[0].iov_len, 2);
	assert_ptr_equal(iov[1].iov_base, b);
	assert_int_equal(iov[1].iov_len, 16);
	assert_ptr_equal(iov[2].iov_base, c);
	assert_int_equal(iov[2].iov_len, 4);
	/* The same bytes in UVA space are not adjacent: refused. */
	assert_int_equal(guest_mem_translate_iov(&mem, GUEST_ADDR_UVA, 0x901e, 22, iov, 3),
			 GUEST_MEM_BAD_ADDR);
	/* More pieces than iovecs. */
	assert_int_equal(guest_mem_translate_iov(&mem, GUEST_ADDR_GPA, 0x101e, 22, iov, 2),
			 GUEST_MEM_IOV_FULL);
	assert_int_equal(guest_mem_translate_iov(&mem, GUEST_ADDR_GPA, 0x1000, 1, iov, 0),
			 GUEST_MEM_IOV_FULL);
	guest_mem_unmap_all(&mem);
}

static void test_translate_iov_outside_or_into_a_gap_is_bad_addr(void **state)
{
	struct fixture *f = *state;
	struct iovec iov[4];

	assert_int_equal(guest_mem_translate_iov(&f->mem, GUEST_ADDR_GPA, GPA0 - 1, 2, iov, 4),
			 GUEST_MEM_BAD_ADDR);
	assert_int_equal(
	    guest_mem_translate_iov(&f->mem, GUEST_ADDR_GPA, GPA0 + 2 * SIZE0 - 1, 2, iov, 4),
	    GUEST_MEM_BAD_ADDR);
	assert_int_equal(guest_mem_translate_iov(&f->mem, GUEST_ADDR_GPA, 0, 1, iov, 4),
			 GUEST_MEM_BAD_ADDR);
	/* UVA: the regions are 1 MiB apart, so crossing the end of the first is a gap. */
	assert_int_equal(
	    guest_mem_translate_iov(&f->mem, GUEST_ADDR_UVA, UVA0 + SIZE0 - 1, 2, iov, 4),
	    GUEST_MEM_BAD_ADDR);
}

static void test_translate_iov_overflowing_range_is_bad_addr(void **state)
{
	struct fixture *f = *state;
	struct iovec iov[4];

	assert_int_equal(
	    guest_mem_translate_iov(&f->mem, GUEST_ADDR_GPA, GPA0 + 16, UINT64_MAX, iov, 4),
	    GUEST_MEM_BAD_ADDR);
	assert_int_equal(guest_mem_translate_iov(&f->mem, GUEST_ADDR_GPA, UINT64_MAX, 2, iov, 4),
			 GUEST_MEM_BAD_ADDR);
	assert_int_equal(
	    guest_mem_translate_iov(&f->mem, GUEST_ADDR_GPA, GPA0, 0xffffffffull, iov, 4),
	    GUEST_MEM_BAD_ADDR);
}

static void test_empty_table_translates_nothing(void **state)
{
	struct guest_mem mem;

	(void)state;
	memset(&mem, 0, sizeof(mem));
	assert_null(guest_mem_translate(&mem, GUEST_ADDR_GPA, 0, 1));
	assert_null(guest_mem_translate(&mem, GUEST_ADDR_GPA, GPA0, 1));
}

static void test_add_rejects_empty_region(void **state)
{
	struct fixture *f = *state;
	struct guest_mem_region r = {.gpa = 0x100000, .uva = 0x200000, .size = 0, .host = f->buf};

	assert_int_equal(guest_mem_add(&f->mem, &r), -1);
	assert_int_equal(f->mem.nregions, 2);
}

static void test_add_rejects_overlapping_region(void **state)
{
	struct fixture *f = *state;
	struct guest_mem_region r = {
	    .gpa = GPA0 + SIZE0 - 1, .uva = 0x900000000ull, .size = 16, .host = f->buf};

	assert_int_equal(guest_mem_add(&f->mem, &r), -1);
	r.gpa = GPA0 - 8;
	assert_int_equal(guest_mem_add(&f->mem, &r), -1);
	r.gpa = GPA0 + 0x100; /* wholly inside */
	assert_int_equal(guest_mem_add(&f->mem, &r), -1);
	assert_int_equal(f->mem.nregions, 2);
	/* Adjacent is fine. */
	r.gpa = GPA0 + 2 * SIZE0;
	assert_int_equal(guest_mem_add(&f->mem, &r), 0);
	assert_int_equal(f->mem.nregions, 3);
}

static void test_add_rejects_more_than_max_regions(void **state)
{
	struct guest_mem mem;
	static uint8_t backing[GUEST_MEM_MAX_REGIONS + 1][64];
	struct guest_mem_region r = {0};

	(void)state;
	memset(&mem, 0, sizeof(mem));
	for (unsigned i = 0; i < GUEST_MEM_MAX_REGIONS; i++) {
		r.gpa = 0x1000ull * (i + 1);
		r.uva = 0x100000ull * (i + 1);
		r.size = 64;
		r.host = backing[i];
		assert_int_equal(guest_mem_add(&mem, &r), 0);
		if (i == 0) /* a small table has small arrays: they grow with it */
			assert_true(mem.cap >= 1 && mem.cap <= 8);
	}
	assert_int_equal(mem.cap, GUEST_MEM_MAX_REGIONS);
	r.gpa = 0x1000ull * (GUEST_MEM_MAX_REGIONS + 1);
	r.uva = 0x100000ull * (GUEST_MEM_MAX_REGIONS + 1);
	r.host = backing[GUEST_MEM_MAX_REGIONS];
	assert_int_equal(guest_mem_add(&mem, &r), -1);
	assert_int_equal(mem.nregions, GUEST_MEM_MAX_REGIONS);
	/* Every region added still translates to its own backing. */
	for (unsigned i = 0; i < GUEST_MEM_MAX_REGIONS; i++)
		assert_ptr_equal(
		    guest_mem_translate(&mem, GUEST_ADDR_GPA, 0x1000ull * (i + 1) + 63, 1),
		    &backing[i][63]);
	guest_mem_unmap_all(&mem);
	assert_true(mem.cap == 0 && mem.regions == NULL); /* freed: all zero again */
}

static void test_unmap_all_empties_table_and_unmaps_owned(void **state)
{
	struct guest_mem mem;
	struct guest_mem_region r = {0};
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char vec;
	void *map;
	static uint8_t not_owned[64];

	(void)state;
	memset(&mem, 0, sizeof(mem));
	map = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	r.gpa = 0;
	r.uva = 0x10000;
	r.size = page;
	r.host = map;
	r.mmap_base = map;
	r.mmap_len = page;
	assert_int_equal(guest_mem_add(&mem, &r), 0);
	memset(&r, 0, sizeof(r));
	r.gpa = 0x100000;
	r.uva = 0x200000;
	r.size = sizeof(not_owned);
	r.host = not_owned;
	assert_int_equal(guest_mem_add(&mem, &r), 0);

	guest_mem_unmap_all(&mem);
	assert_int_equal(mem.nregions, 0);
	assert_null(guest_mem_translate(&mem, GUEST_ADDR_GPA, 0, 1));
	/* mincore() fails with ENOMEM on an unmapped page. */
	assert_int_equal(mincore(map, page, &vec), -1);
	not_owned[0] = 1; /* memory we did not own is still ours */
}

/* ---- many regions (CONFIGURE_MEM_SLOTS): sorted table, binary-search lookups ---- */

#define MANY GUEST_MEM_MAX_REGIONS
#define MANY_SIZE 256u

/* Region i: gpa i * 4 KiB (a gap after each), uva in reverse order, host in a shuffled order. */
static struct guest_mem_region many_region(uint8_t *backing, const unsigned *slot, unsigned i)
{
	struct guest_mem_region r = {0};

	r.gpa = 0x1000ull * (i + 1);
	r.uva = 0x7f0000000000ull - 0x10000ull * (i + 1);
	r.size = MANY_SIZE + i; /* region MANY - 1 is the largest */
	r.host = backing + (size_t)slot[i] * 1024;
	return r;
}

static void many_check(const struct guest_mem *mem, uint8_t *backing, const unsigned *slot,
		       const uint8_t *present)
{
	unsigned n = 0;

	for (unsigned i = 0; i < MANY; i++) {
		struct guest_mem_region r = many_region(backing, slot, i);
		const struct guest_mem_region *h;
		uint64_t off = 0;
		struct iovec iov;

		if (!present[i]) {
			assert_null(guest_mem_translate(mem, GUEST_ADDR_GPA, r.gpa, 1));
			assert_null(guest_mem_translate(mem, GUEST_ADDR_UVA, r.uva + r.size - 1, 1));
			continue;
		}
		n++;
		assert_ptr_equal(guest_mem_translate(mem, GUEST_ADDR_GPA, r.gpa, r.size), r.host);
		assert_ptr_equal(guest_mem_translate(mem, GUEST_ADDR_GPA, r.gpa + r.size - 1, 1),
				 r.host + r.size - 1);
		assert_null(guest_mem_translate(mem, GUEST_ADDR_GPA, r.gpa + r.size, 1)); /* gap */
		assert_null(guest_mem_translate(mem, GUEST_ADDR_GPA, r.gpa, r.size + 1));
		assert_ptr_equal(guest_mem_translate(mem, GUEST_ADDR_UVA, r.uva + 5, 1), r.host + 5);
		assert_int_equal(guest_mem_translate_iov(mem, GUEST_ADDR_GPA, r.gpa + 1, r.size - 1,
							 &iov, 1),
				 1);
		assert_ptr_equal(iov.iov_base, r.host + 1);
		h = guest_mem_find_host(mem, r.host + 7, &off);
		assert_non_null(h);
		assert_true(h->gpa == r.gpa && off == 7);
		assert_non_null(guest_mem_find_exact(mem, r.gpa, r.size, r.uva));
		assert_null(guest_mem_find_exact(mem, r.gpa, r.size - 1, r.uva));
		assert_null(guest_mem_find_exact(mem, r.gpa, r.size, r.uva + 1));
	}
	assert_int_equal(mem->nregions, n);
	for (unsigned i = 1; i < mem->nregions; i++)
		assert_true(mem->regions[i - 1].gpa < mem->regions[i].gpa);
}

static void test_many_regions_add_lookup_remove(void **state)
{
	static struct guest_mem mem;
	static uint8_t backing[MANY * 1024];
	static unsigned slot[MANY], order[MANY];
	static uint8_t present[MANY];
	struct guest_mem_region r, gone;
	unsigned seed = 12345;

	(void)state;
	memset(&mem, 0, sizeof(mem));
	memset(present, 0, sizeof(present));
	for (unsigned i = 0; i < MANY; i++)
		slot[i] = order[i] = i;
	for (unsigned i = MANY - 1; i > 0; i--) { /* shuffle host slots and the insertion order */
		unsigned j, t;

		seed = seed * 1103515245u + 12345u;
		j = (seed >> 8) % (i + 1);
		t = slot[i], slot[i] = slot[j], slot[j] = t;
		seed = seed * 1103515245u + 12345u;
		j = (seed >> 8) % (i + 1);
		t = order[i], order[i] = order[j], order[j] = t;
	}
	for (unsigned k = 0; k < MANY; k++) {
		r = many_region(backing, slot, order[k]);
		assert_int_equal(guest_mem_add(&mem, &r), 0);
		present[order[k]] = 1;
	}
	many_check(&mem, backing, slot, present);
	assert_true(mem.hot.gpa == many_region(backing, slot, MANY - 1).gpa); /* the largest */

	/* Full: the 510th is refused, whatever it is. */
	r = (struct guest_mem_region){.gpa = 1ull << 40, .uva = 1ull << 41, .size = 1, .host = backing};
	assert_int_equal(guest_mem_check(&mem, &r), -1);
	assert_int_equal(guest_mem_add(&mem, &r), -1);

	/* Remove every third; the rest still translate, the removed do not. */
	for (unsigned i = 0; i < MANY; i += 3) {
		r = many_region(backing, slot, i);
		assert_int_equal(guest_mem_remove(&mem, r.gpa, r.size + 1, r.uva, &gone), -1);
		assert_int_equal(guest_mem_remove(&mem, r.gpa, r.size, r.uva, &gone), 0);
		assert_true(gone.gpa == r.gpa && gone.host == r.host);
		assert_int_equal(guest_mem_remove(&mem, r.gpa, r.size, r.uva, &gone), -1);
		present[i] = 0;
	}
	many_check(&mem, backing, slot, present);
	/* The largest (508 = 3 * 169 + 1) stays hot; removing it picks the next left (506). */
	r = many_region(backing, slot, MANY - 1);
	assert_int_equal(guest_mem_remove(&mem, r.gpa, r.size, r.uva, &gone), 0);
	present[MANY - 1] = 0;
	assert_true(mem.hot.gpa == many_region(backing, slot, MANY - 3).gpa);

	/* Overlaps are refused in either space, next to regions added in any order. */
	r = many_region(backing, slot, 10);
	r.gpa += r.size - 1; /* last byte of region 10 */
	r.uva = 1ull << 45;
	assert_int_equal(guest_mem_add(&mem, &r), -1);
	r = many_region(backing, slot, 10);
	r.gpa = 1ull << 45;
	r.uva -= 1; /* one byte before region 10 in uva: overlaps its first byte */
	r.size = 2;
	assert_int_equal(guest_mem_add(&mem, &r), -1);
	/* A removed region's place is free again; so is a gap between two regions. */
	r = many_region(backing, slot, 9);
	assert_int_equal(guest_mem_add(&mem, &r), 0);
	present[9] = 1;
	r = many_region(backing, slot, 20);
	r.gpa += r.size;
	r.uva = 1ull << 46;
	r.size = 0x1000 - (MANY_SIZE + 20); /* exactly fills the gap up to region 21 */
	assert_int_equal(guest_mem_add(&mem, &r), 0);
	assert_ptr_equal(guest_mem_translate(&mem, GUEST_ADDR_GPA, r.gpa + r.size - 1, 1),
			 r.host + r.size - 1);
	assert_int_equal(guest_mem_remove(&mem, r.gpa, r.size, r.uva, &gone), 0);
	many_check(&mem, backing, slot, present);

	guest_mem_unmap_all(&mem);
	assert_int_equal(mem.nregions, 0);
	assert_true(mem.hot.size == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_many_regions_add_lookup_remove),
	    cmocka_unit_test_setup_teardown(test_translate_inside_region_returns_host_pointer,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_translate_whole_region_and_exact_end, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_translate_outside_memory_is_null, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_translate_range_crossing_regions_is_null, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_translate_len_zero_is_treated_as_one, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_translate_overflowing_range_is_null, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_translate_uva_space_uses_uva, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_translate_iov_inside_one_region_is_one_iovec,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_translate_iov_splits_at_adjacent_region_boundary,
					    setup, teardown),
	    cmocka_unit_test(test_translate_iov_pieces_map_to_each_regions_own_memory),
	    cmocka_unit_test_setup_teardown(test_translate_iov_outside_or_into_a_gap_is_bad_addr,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_translate_iov_overflowing_range_is_bad_addr, setup,
					    teardown),
	    cmocka_unit_test(test_empty_table_translates_nothing),
	    cmocka_unit_test_setup_teardown(test_add_rejects_empty_region, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_add_rejects_overlapping_region, setup, teardown),
	    cmocka_unit_test(test_add_rejects_more_than_max_regions),
	    cmocka_unit_test(test_unmap_all_empties_table_and_unmaps_owned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
