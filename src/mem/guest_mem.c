/* SPDX-License-Identifier: MIT */
/* guest_mem.c - guest memory region table and the one checked guest-address lookup. */
#include "mem/guest_mem.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The keys a table is sorted by: regions[] itself by gpa, order[0] by uva, order[1] by host. */
enum key { KEY_GPA, KEY_UVA, KEY_HOST };

static uint64_t region_key(const struct guest_mem_region *r, enum key k)
{
	return k == KEY_GPA ? r->gpa : k == KEY_UVA ? r->uva : (uint64_t)(uintptr_t)r->host;
}

/* The i-th region in k's order. */
static const struct guest_mem_region *nth(const struct guest_mem *mem, enum key k, unsigned i)
{
	return k == KEY_GPA ? &mem->regions[i] : &mem->regions[mem->order[k - 1][i]];
}

/* How many regions in k's order start at or below v (binary search). */
static unsigned rank_le(const struct guest_mem *mem, enum key k, uint64_t v)
{
	unsigned lo = 0, hi = mem->nregions;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (region_key(nth(mem, k, mid), k) <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The region holding address v in k's space, and v's offset in it (< size); NULL if none.
 * Regions never overlap in gpa or uva (guest_mem_add()): the last one starting at or below v is
 * the only candidate. O(log n).
 */
static const struct guest_mem_region *region_find(const struct guest_mem *mem, enum key k,
						  uint64_t v, uint64_t *off)
{
	unsigned i = rank_le(mem, k, v);
	const struct guest_mem_region *r;

	if (i == 0)
		return NULL;
	r = nth(mem, k, i - 1);
	if (v - region_key(r, k) >= r->size)
		return NULL;
	*off = v - region_key(r, k);
	return r;
}

static enum key space_key(enum guest_addr_space space)
{
	return space == GUEST_ADDR_GPA ? KEY_GPA : KEY_UVA;
}

/**
 * guest_mem_translate() - a host pointer to a guest range that must be contiguous in host memory.
 * @mem: the region table
 * @space: whether @addr is guest physical (descriptors) or frontend virtual (ring addresses)
 * @addr: the range's first byte
 * @len: its length; 0 is treated as 1 (the address itself must be inside a region)
 *
 * For rings and indirect descriptor tables: the whole range must lie inside ONE region.
 * Overflow-safe; O(log n) in the number of regions.
 *
 * Return: the host address of @addr, or NULL.
 */
void *guest_mem_translate(const struct guest_mem *mem, enum guest_addr_space space, uint64_t addr,
			  uint64_t len)
{
	uint64_t off = 0;
	const struct guest_mem_region *r = region_find(mem, space_key(space), addr, &off);

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
 * The general case of guest_mem_translate_iov() (inline, for a buffer inside the hot region): a
 * buffer straddling adjacent regions, as DPDK's and Linux's vhost allow, is split instead of
 * refused. Overflow-safe; one O(log n) lookup per piece.
 *
 * Return: the iovecs used (never an empty one; 0 for @len 0), GUEST_MEM_BAD_ADDR when a byte is in
 * no region, GUEST_MEM_IOV_FULL when @max_iov is not enough.
 */
int guest_mem_translate_iov_slow(const struct guest_mem *mem, enum guest_addr_space space,
				 uint64_t addr, uint64_t len, struct iovec *iov, unsigned max_iov)
{
	enum key k = space_key(space);
	unsigned n = 0;

	while (len) {
		uint64_t off = 0, take;
		const struct guest_mem_region *r = region_find(mem, k, addr, &off);

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

/**
 * guest_mem_find_host() - the region whose host memory holds an address (dirty logging).
 * @mem: the region table
 * @host: the address
 * @off: out: @host's offset in the region (< its size); set when found
 *
 * O(log n). Regions' host ranges do not overlap when vnetd mapped them (one mapping each).
 *
 * Return: the region, or NULL.
 */
const struct guest_mem_region *guest_mem_find_host(const struct guest_mem *mem, const void *host,
						   uint64_t *off)
{
	return region_find(mem, KEY_HOST, (uint64_t)(uintptr_t)host, off);
}

/* Does [v, v + len) overlap a region in k's space? Its neighbours in k's order tell. */
static int overlaps(const struct guest_mem *mem, enum key k, uint64_t v, uint64_t len)
{
	unsigned i = rank_le(mem, k, v);
	const struct guest_mem_region *r;

	if (i > 0) {
		r = nth(mem, k, i - 1); /* starts at or below v */
		if (v - region_key(r, k) < r->size)
			return 1;
	}
	if (i < mem->nregions) {
		r = nth(mem, k, i); /* starts above v */
		if (region_key(r, k) - v < len)
			return 1;
	}
	return 0;
}

/**
 * guest_mem_check() - could a region be added to the table?
 * @mem: the region table
 * @region: the candidate (its host pointer is not looked at)
 *
 * Return: 0, or -1 when the table is full, the region is empty, wraps around or overlaps
 * another region in guest physical or frontend virtual addresses.
 */
int guest_mem_check(const struct guest_mem *mem, const struct guest_mem_region *region)
{
	if (mem->nregions >= GUEST_MEM_MAX_REGIONS || region->size == 0)
		return -1;
	if (region->gpa + region->size < region->gpa || region->uva + region->size < region->uva)
		return -1;
	if (overlaps(mem, KEY_GPA, region->gpa, region->size) ||
	    overlaps(mem, KEY_UVA, region->uva, region->size))
		return -1;
	return 0;
}

/* The hot region: a copy of the largest (the first of equals); all zero for an empty table. */
static void pick_hot(struct guest_mem *mem)
{
	const struct guest_mem_region *best = NULL;

	for (unsigned i = 0; i < mem->nregions; i++)
		if (!best || mem->regions[i].size > best->size)
			best = &mem->regions[i];
	if (best)
		mem->hot = *best;
	else
		memset(&mem->hot, 0, sizeof(mem->hot));
}

/* Insert regions[at] (already in place) into order[k - 1] at its sorted position. */
static void order_insert(struct guest_mem *mem, enum key k, unsigned at)
{
	uint16_t *o = mem->order[k - 1];
	unsigned n = mem->nregions - 1; /* entries before this one */
	unsigned pos = 0, hi = n;
	uint64_t v = region_key(&mem->regions[at], k);

	while (pos < hi) {
		unsigned mid = pos + (hi - pos) / 2;

		if (region_key(&mem->regions[o[mid]], k) <= v)
			pos = mid + 1;
		else
			hi = mid;
	}
	memmove(&o[pos + 1], &o[pos], (n - pos) * sizeof(*o));
	o[pos] = (uint16_t)at;
}

/* Drop index at from order[k - 1]; renumber the indexes above it (regions[] closed the gap). */
static void order_remove(struct guest_mem *mem, enum key k, unsigned at)
{
	uint16_t *o = mem->order[k - 1];
	unsigned n = mem->nregions, j = 0;

	for (unsigned i = 0; i < n; i++)
		if (o[i] != at)
			o[j++] = (uint16_t)(o[i] > at ? o[i] - 1 : o[i]);
}

/* Regions the arrays first have room for: a SET_MEM_TABLE's most (VU_MAX_REGIONS). */
#define GUEST_MEM_FIRST_CAP 8u

/*
 * Room for one more region: the arrays (regions, then both orders, one allocation) are made or
 * doubled, up to GUEST_MEM_MAX_REGIONS. 0, or -1 out of memory (the table unchanged).
 */
static int reserve_one(struct guest_mem *mem)
{
	unsigned cap = mem->cap ? 2 * mem->cap : GUEST_MEM_FIRST_CAP;
	struct guest_mem_region *r;
	uint16_t *o;

	if (mem->nregions < mem->cap)
		return 0;
	if (cap > GUEST_MEM_MAX_REGIONS)
		cap = GUEST_MEM_MAX_REGIONS;
	r = malloc(cap * (sizeof(*r) + 2 * sizeof(*o)));
	if (!r)
		return -1;
	o = (uint16_t *)(r + cap);
	if (mem->nregions) {
		memcpy(r, mem->regions, mem->nregions * sizeof(*r));
		memcpy(o, mem->order[0], mem->nregions * sizeof(*o));
		memcpy(o + cap, mem->order[1], mem->nregions * sizeof(*o));
	}
	free(mem->regions);
	mem->regions = r;
	mem->order[0] = o;
	mem->order[1] = o + cap;
	mem->cap = cap;
	return 0;
}

/**
 * guest_mem_add() - insert a region into the table (the caller has mapped it).
 * @mem: the region table
 * @region: the region, copied
 *
 * O(n) (the arrays shift, or grow: reserve_one()); lookups stay O(log n).
 *
 * Return: 0, or -1 when the table is full, the region is empty, has no host pointer, wraps around
 * or overlaps another region in either address space, or there is no memory for the arrays.
 */
int guest_mem_add(struct guest_mem *mem, const struct guest_mem_region *region)
{
	unsigned at;

	if (!region->host || guest_mem_check(mem, region) < 0 || reserve_one(mem) < 0)
		return -1;
	at = rank_le(mem, KEY_GPA, region->gpa);
	memmove(&mem->regions[at + 1], &mem->regions[at],
		(mem->nregions - at) * sizeof(mem->regions[0]));
	mem->regions[at] = *region;
	for (unsigned k = 0; k < 2; k++)
		for (unsigned i = 0; i < mem->nregions; i++)
			if (mem->order[k][i] >= at)
				mem->order[k][i]++;
	mem->nregions++;
	order_insert(mem, KEY_UVA, at);
	order_insert(mem, KEY_HOST, at);
	pick_hot(mem);
	return 0;
}

/**
 * guest_mem_find_exact() - the region with exactly this guest address, size and user address.
 * @mem: the region table
 * @gpa: the region's guest physical address
 * @size: its size
 * @uva: its frontend virtual address
 *
 * REM_MEM_REG's match (the mmap offset is not part of it, as the vhost-user spec says). O(log n).
 *
 * Return: the region, or NULL.
 */
const struct guest_mem_region *guest_mem_find_exact(const struct guest_mem *mem, uint64_t gpa,
						    uint64_t size, uint64_t uva)
{
	uint64_t off = 0;
	const struct guest_mem_region *r = region_find(mem, KEY_GPA, gpa, &off);

	return r && off == 0 && r->size == size && r->uva == uva ? r : NULL;
}

/**
 * guest_mem_remove() - take a region out of the table (REM_MEM_REG).
 * @mem: the region table
 * @gpa: the region's guest physical address
 * @size: its size
 * @uva: its frontend virtual address
 * @out: the region removed, for the caller to unmap
 *
 * The region must match in all three (guest_mem_find_exact()). O(n).
 *
 * Return: 0, or -1 (table unchanged) when no region matches.
 */
int guest_mem_remove(struct guest_mem *mem, uint64_t gpa, uint64_t size, uint64_t uva,
		     struct guest_mem_region *out)
{
	const struct guest_mem_region *r = guest_mem_find_exact(mem, gpa, size, uva);
	unsigned at;

	if (!r)
		return -1;
	at = (unsigned)(r - mem->regions);
	*out = *r;
	memmove(&mem->regions[at], &mem->regions[at + 1],
		(mem->nregions - at - 1) * sizeof(mem->regions[0]));
	order_remove(mem, KEY_UVA, at);
	order_remove(mem, KEY_HOST, at);
	mem->nregions--;
	pick_hot(mem);
	return 0;
}

/**
 * guest_mem_unmap_all() - munmap every region the table owns (mmap_base set), empty it and free
 * its arrays (all zero again).
 * @mem: the region table
 */
void guest_mem_unmap_all(struct guest_mem *mem)
{
	for (unsigned i = 0; i < mem->nregions; i++) {
		struct guest_mem_region *r = &mem->regions[i];

		if (r->mmap_base)
			munmap(r->mmap_base, r->mmap_len);
	}
	free(mem->regions);
	memset(mem, 0, sizeof(*mem));
}
