/* SPDX-License-Identifier: MIT */
/* guest_mem.c - guest memory region table and the one checked guest-address lookup. */
#include "guest_mem.h"

#include <sys/mman.h>

static uint64_t region_base(const struct guest_mem_region *r, enum guest_addr_space space)
{
	return space == GUEST_ADDR_GPA ? r->gpa : r->uva;
}

/* The region holding guest address addr, and addr's offset in it (< size); NULL if none. */
static const struct guest_mem_region *region_find(const struct guest_mem *mem,
						  enum guest_addr_space space, uint64_t addr,
						  uint64_t *off)
{
	for (unsigned i = 0; i < mem->nregions; i++) {
		const struct guest_mem_region *r = &mem->regions[i];
		uint64_t base = region_base(r, space);

		if (addr < base || addr - base >= r->size)
			continue;
		*off = addr - base;
		return r; /* regions never overlap (guest_mem_add): the only one */
	}
	return NULL;
}

/**
 * guest_mem_translate() - a host pointer to a guest range that must be contiguous in host memory.
 * @mem: the region table
 * @space: whether @addr is guest physical (descriptors) or frontend virtual (ring addresses)
 * @addr: the range's first byte
 * @len: its length; 0 is treated as 1 (the address itself must be inside a region)
 *
 * For rings and indirect descriptor tables: the whole range must lie inside ONE region.
 * Overflow-safe.
 *
 * Return: the host address of @addr, or NULL.
 */
void *guest_mem_translate(const struct guest_mem *mem, enum guest_addr_space space, uint64_t addr,
			  uint64_t len)
{
	uint64_t off = 0;
	const struct guest_mem_region *r = region_find(mem, space, addr, &off);

	if (len == 0)
		len = 1;
	/* off < size and len <= size - off: no addition, so no overflow. */
	if (!r || len > r->size - off)
		return NULL;
	return r->host + off;
}

/**
 * guest_mem_translate_iov_slow() - turn a guest buffer into host iovecs, one per region it spans.
 * @mem: the region table
 * @space: the address space of @addr
 * @addr: the buffer's first byte
 * @len: its length
 * @iov: out: the iovecs (contents undefined on failure)
 * @max_iov: room in @iov
 *
 * The general case of guest_mem_translate_iov() (inline, for a buffer inside the first region): a
 * buffer straddling adjacent regions, as DPDK's and Linux's vhost allow, is split instead of
 * refused. Overflow-safe.
 *
 * Return: the iovecs used (never an empty one; 0 for @len 0), GUEST_MEM_BAD_ADDR when a byte is in
 * no region, GUEST_MEM_IOV_FULL when @max_iov is not enough.
 */
int guest_mem_translate_iov_slow(const struct guest_mem *mem, enum guest_addr_space space,
				 uint64_t addr, uint64_t len, struct iovec *iov, unsigned max_iov)
{
	unsigned n = 0;

	while (len) {
		uint64_t off = 0, take;
		const struct guest_mem_region *r = region_find(mem, space, addr, &off);

		if (!r)
			return GUEST_MEM_BAD_ADDR;
		if (n == max_iov)
			return GUEST_MEM_IOV_FULL;
		take = r->size - off; /* >= 1: off < size */
		if (take > len)
			take = len;
		iov[n].iov_base = r->host + off;
		iov[n++].iov_len = (size_t)take; /* fits: a region is memory we have mapped */
		len -= take;
		/*
		 * No wrap: addr + take <= base + size, and guest_mem_add() refuses regions that
		 * wrap. With len left, the next lookup finds the region that follows, or none.
		 */
		addr += take;
	}
	return (int)n;
}

static int ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/**
 * guest_mem_add() - append a region to the table (the caller has mapped it).
 * @mem: the region table
 * @region: the region, copied
 *
 * Return: 0, or -1 when the table is full, the region is empty, has no host pointer, wraps around
 * or overlaps another region in either address space.
 */
int guest_mem_add(struct guest_mem *mem, const struct guest_mem_region *region)
{
	if (mem->nregions >= GUEST_MEM_MAX_REGIONS || region->size == 0 || !region->host)
		return -1;
	if (region->gpa + region->size < region->gpa || region->uva + region->size < region->uva)
		return -1;
	for (unsigned i = 0; i < mem->nregions; i++) {
		const struct guest_mem_region *r = &mem->regions[i];

		if (ranges_overlap(r->gpa, r->size, region->gpa, region->size) ||
		    ranges_overlap(r->uva, r->size, region->uva, region->size))
			return -1;
	}
	mem->regions[mem->nregions++] = *region;
	return 0;
}

/**
 * guest_mem_unmap_all() - munmap every region the table owns (mmap_base set) and empty it.
 * @mem: the region table
 */
void guest_mem_unmap_all(struct guest_mem *mem)
{
	for (unsigned i = 0; i < mem->nregions; i++) {
		struct guest_mem_region *r = &mem->regions[i];

		if (r->mmap_base)
			munmap(r->mmap_base, r->mmap_len);
	}
	mem->nregions = 0;
}
