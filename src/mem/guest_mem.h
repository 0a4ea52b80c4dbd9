/* SPDX-License-Identifier: MIT */
/* guest_mem.h - guest memory region table and the one checked guest-address lookup. */
#ifndef VNETD_GUEST_MEM_H
#define VNETD_GUEST_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * Regions one table holds: what VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS lets a frontend add
 * (GET_MAX_MEM_SLOTS answers this), the limit rust-vmm's backends use too. SET_MEM_TABLE alone
 * carries at most 8 (VU_MAX_REGIONS).
 */
#define GUEST_MEM_MAX_REGIONS 509

/* One contiguous region of guest memory, mapped into our address space. */
struct guest_mem_region {
	uint64_t gpa;       /* guest physical address of the first byte */
	uint64_t uva;       /* frontend's user virtual address of the first byte */
	uint64_t size;      /* bytes; never 0 in a valid table */
	uint8_t *host;      /* our pointer to the first byte */
	void *mmap_base;    /* what to munmap (NULL for memory we do not own) */
	size_t mmap_len;
};

/*
 * The table. regions[] is sorted by gpa; order[] sorts it by uva and by host address, so each
 * lookup is a binary search. hot is a copy of the largest region (the guest's main RAM), which
 * the inline fast paths try first; size 0 when the table is empty. An all-zero struct is an
 * empty table. Change it only through guest_mem_add(), guest_mem_remove(), _unmap_all().
 *
 * The arrays are one heap allocation with room for cap regions, made by the first
 * guest_mem_add() and doubled as the table grows (up to GUEST_MEM_MAX_REGIONS): a guest's table
 * of a region or two takes 8 entries (~0.4 KB), not the 26 KB of the largest table, in every
 * connection. guest_mem_unmap_all() frees them (the struct is all zero again); a copy of the
 * struct takes them over (vhost-user swaps tables that way).
 */
struct guest_mem {
	struct guest_mem_region hot;
	unsigned nregions;
	unsigned cap;                     /* room in the arrays; 0: none allocated */
	struct guest_mem_region *regions; /* cap of them */
	uint16_t *order[2];               /* [0]: by uva, [1]: by host; indexes; cap each */
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
 * contents then undefined). Overflow-safe. Inline for the common case (the hot region holds
 * it); guest_mem_translate_iov_slow() is the general one.
 */
int guest_mem_translate_iov_slow(const struct guest_mem *mem, enum guest_addr_space space,
				 uint64_t addr, uint64_t len, struct iovec *iov, unsigned max_iov);

static inline int guest_mem_translate_iov(const struct guest_mem *mem, enum guest_addr_space space,
					  uint64_t addr, uint64_t len, struct iovec *iov,
					  unsigned max_iov)
{
	/* Fast path: the whole buffer inside the hot region (size 0 when empty: never taken). */
	if (len && max_iov) {
		const struct guest_mem_region *r = &mem->hot;
		uint64_t off = addr - (space == GUEST_ADDR_GPA ? r->gpa : r->uva);

		if (off < r->size && len <= r->size - off) {
			iov->iov_base = r->host + off;
			iov->iov_len = (size_t)len;
			return 1;
		}
	}
	return guest_mem_translate_iov_slow(mem, space, addr, len, iov, max_iov);
}

/*
 * guest_mem_find_host() - the region whose host memory holds host, with host's offset in it
 * (binary search); NULL if none.
 */
const struct guest_mem_region *guest_mem_find_host(const struct guest_mem *mem, const void *host,
						   uint64_t *off);

/*
 * guest_mem_check() - could region be added (guest_mem_add() without the host pointer)?
 * 0, or -1 when the table is full, the region empty, wrapping or overlapping another in either
 * address space.
 */
int guest_mem_check(const struct guest_mem *mem, const struct guest_mem_region *region);

/*
 * guest_mem_add() - insert a region (no mmap); returns 0, or -1 if full, empty, overlapping or
 * out of memory (the arrays grow).
 */
int guest_mem_add(struct guest_mem *mem, const struct guest_mem_region *region);

/* guest_mem_find_exact() - the region of exactly this gpa, size and uva (O(log n)); or NULL. */
const struct guest_mem_region *guest_mem_find_exact(const struct guest_mem *mem, uint64_t gpa,
						    uint64_t size, uint64_t uva);

/*
 * guest_mem_remove() - take out the region with exactly this gpa, size and uva (no munmap: it
 * is copied to *out for the caller to unmap). 0, or -1 if the table has no such region.
 */
int guest_mem_remove(struct guest_mem *mem, uint64_t gpa, uint64_t size, uint64_t uva,
		     struct guest_mem_region *out);

/* guest_mem_unmap_all() - munmap every owned region, empty the table and free its arrays. */
void guest_mem_unmap_all(struct guest_mem *mem);

#endif
