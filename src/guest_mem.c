/* guest_mem.c - guest memory region table and the one checked guest-address translation. */
#include "guest_mem.h"

#include <sys/mman.h>

static uint64_t region_base(const struct guest_mem_region *r, enum guest_addr_space space)
{
	return space == GUEST_ADDR_GPA ? r->gpa : r->uva;
}

void *guest_mem_translate(const struct guest_mem *mem, enum guest_addr_space space, uint64_t addr,
			  uint64_t len)
{
	if (len == 0)
		len = 1;
	for (unsigned i = 0; i < mem->nregions; i++) {
		const struct guest_mem_region *r = &mem->regions[i];
		uint64_t base = region_base(r, space);
		uint64_t off;

		if (addr < base)
			continue;
		off = addr - base;
		/* off < size and len <= size - off: no addition, so no overflow. */
		if (off >= r->size || len > r->size - off)
			continue;
		return r->host + off;
	}
	return NULL;
}

static int ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

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

void guest_mem_unmap_all(struct guest_mem *mem)
{
	for (unsigned i = 0; i < mem->nregions; i++) {
		struct guest_mem_region *r = &mem->regions[i];

		if (r->mmap_base)
			munmap(r->mmap_base, r->mmap_len);
	}
	mem->nregions = 0;
}
