/* SPDX-License-Identifier: MIT */
/* guest_mem.h - guest memory region table and the one checked guest-address lookup. */
#ifndef VNETD_GUEST_MEM_H
#define VNETD_GUEST_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define GUEST_MEM_MAX_REGIONS 8

/* One contiguous region of guest memory, mapped into our address space. */
struct guest_mem_region {
	uint64_t gpa;       /* guest physical address of the first byte */
	uint64_t uva;       /* frontend's user virtual address of the first byte */
	uint64_t size;      /* bytes; never 0 in a valid table */
	uint8_t *host;      /* our pointer to the first byte */
	void *mmap_base;    /* what to munmap (NULL for memory we do not own) */
	size_t mmap_len;
};

struct guest_mem {
	unsigned nregions;
	struct guest_mem_region regions[GUEST_MEM_MAX_REGIONS];
};

/* Which address space a guest address is expressed in. */
enum guest_addr_space {
	GUEST_ADDR_GPA, /* guest physical: descriptors */
	GUEST_ADDR_UVA, /* frontend user virtual: vhost-user ring addresses */
};

/*
 * guest_mem_translate() - turn a guest range that must be contiguous in host memory (rings,
 * indirect descriptor tables) into a host pointer. Returns a pointer to [addr, addr + len) if
 * that whole range lies inside ONE region, else NULL. len 0 is treated as 1 (the address itself
 * must be inside a region). Overflow-safe.
 */
void *guest_mem_translate(const struct guest_mem *mem, enum guest_addr_space space, uint64_t addr,
			  uint64_t len);

/* guest_mem_translate_iov() failures. */
#define GUEST_MEM_BAD_ADDR (-1) /* some byte of the range is in no region */
#define GUEST_MEM_IOV_FULL (-2) /* the range needs more than max_iov iovecs */

/*
 * guest_mem_translate_iov() - turn a guest buffer into host iovecs: one per region the range
 * runs through, so a buffer straddling adjacent regions (as DPDK's and Linux's vhost allow) is
 * split instead of refused. Same region lookup as guest_mem_translate(). Returns the iovecs
 * used (never an empty one; 0 for len 0), GUEST_MEM_BAD_ADDR or GUEST_MEM_IOV_FULL (iov
 * contents then undefined). Overflow-safe. Inline for the common case (one region holds it);
 * guest_mem_translate_iov_slow() is the general one.
 */
int guest_mem_translate_iov_slow(const struct guest_mem *mem, enum guest_addr_space space,
				 uint64_t addr, uint64_t len, struct iovec *iov, unsigned max_iov);

static inline int guest_mem_translate_iov(const struct guest_mem *mem, enum guest_addr_space space,
					  uint64_t addr, uint64_t len, struct iovec *iov,
					  unsigned max_iov)
{
	/* Fast path: the whole buffer inside the first region (unsigned: addr < base wraps). */
	if (mem->nregions && len && max_iov) {
		const struct guest_mem_region *r = &mem->regions[0];
		uint64_t off = addr - (space == GUEST_ADDR_GPA ? r->gpa : r->uva);

		if (off < r->size && len <= r->size - off) {
			iov->iov_base = r->host + off;
			iov->iov_len = (size_t)len;
			return 1;
		}
	}
	return guest_mem_translate_iov_slow(mem, space, addr, len, iov, max_iov);
}

/* guest_mem_add() - append a region (no mmap); returns 0, or -1 if full, empty or overlapping. */
int guest_mem_add(struct guest_mem *mem, const struct guest_mem_region *region);

/* guest_mem_unmap_all() - munmap every owned region and empty the table. */
void guest_mem_unmap_all(struct guest_mem *mem);

#endif
