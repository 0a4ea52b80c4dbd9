/* SPDX-License-Identifier: MIT */
/* vhost_user_mem.c - a connection's guest memory: tables and single regions checked, admitted, mapped. */
#include "vhost/vhost_user_mem.h"

#include <inttypes.h>
#include <string.h>

#include "mem/mem.h"
#include "lib/log.h"
#include "vhost/vhost_user_io.h"

/**
 * vu_mem_table_bytes() - the address space a table's own mappings take.
 * @mem: the table
 *
 * Return: the sum of its regions' mapping lengths (what mem_cap counts).
 */
uint64_t vu_mem_table_bytes(const struct guest_mem *mem)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < mem->nregions; i++)
		if (mem->regions[i].mmap_base)
			n += mem->regions[i].mmap_len;
	return n;
}

/**
 * vu_mem_unmap_table() - unmap a table, first taking its mappings off the SIGBUS watch list.
 * @mem: the table; empty afterwards
 *
 * Return: nothing; its bytes are given back to the daemon-wide cap.
 */
void vu_mem_unmap_table(struct guest_mem *mem)
{
	uint64_t bytes = vu_mem_table_bytes(mem);

	for (unsigned i = 0; i < mem->nregions; i++)
		if (mem->regions[i].mmap_base)
			guest_fault_unwatch(mem->regions[i].mmap_base);
	guest_mem_unmap_all(mem);
	mem_cap_uncharge(bytes);
}

_Static_assert(GUEST_FAULT_PORT_MAPS >= GUEST_MEM_MAX_REGIONS + VU_MAX_REGIONS + 1,
	       "the SIGBUS table holds a port's regions at its largest cap, a new SET_MEM_TABLE "
	       "beside them and its dirty log");
_Static_assert(MEM_CAP_SLOTS_DEFAULT >= 1 && MEM_CAP_SLOTS_DEFAULT <= GUEST_MEM_MAX_REGIONS,
	       "the default slot cap is one the table can hold");

/**
 * vu_mem_max_slots() - the memory regions a connection may map: its port's max-mem-slots=.
 * @c: the connection (its owner's mem_slots() gives the cap)
 *
 * What GET_MAX_MEM_SLOTS answers, and what SET_MEM_TABLE and ADD_MEM_REG are held to. With the
 * dirty log, the connection holds at most this + 1 mappings in the daemon-wide SIGBUS table
 * (this + 9 while a SET_MEM_TABLE replaces its table), so no set of ports within their caps
 * can fill it (guest_fault.h).
 *
 * Return: 1..GUEST_MEM_MAX_REGIONS; MEM_CAP_SLOTS_DEFAULT when the owner does not say.
 */
unsigned vu_mem_max_slots(const struct vu_conn *c)
{
	unsigned n = c->ops && c->ops->mem_slots ? c->ops->mem_slots(c->ctx) : 0;

	if (n == 0)
		return MEM_CAP_SLOTS_DEFAULT;
	return n < GUEST_MEM_MAX_REGIONS ? n : GUEST_MEM_MAX_REGIONS;
}

/**
 * vu_mem_maps() - the guest mappings a connection holds: its table's regions and its dirty log.
 * @c: the connection
 *
 * Each is one entry in the daemon-wide SIGBUS table (vu_map_fd()).
 *
 * Return: the count.
 */
unsigned vu_mem_maps(const struct vu_conn *c)
{
	unsigned n = c->log.mmap_base != NULL;

	for (unsigned i = 0; i < c->mem.nregions; i++)
		n += c->mem.regions[i].mmap_base != NULL;
	return n;
}

static uint64_t conn_mem_cap(const struct vu_conn *c)
{
	uint64_t cap = c->ops && c->ops->mem_cap ? c->ops->mem_cap(c->ctx) : 0;

	return cap ? cap : MEM_CAP_PORT_DEFAULT;
}

/**
 * vu_mem_admit() - admit `bytes` more guest mappings for connection c against the caps.
 * @c: the connection (its owner's mem_cap() gives the port's max-mem=)
 * @what: the request, for the log line
 * @bytes: address space the new mapping takes
 * @kept: what the connection keeps mapped besides it
 *
 * Return: 0 with `bytes` charged to the daemon-wide cap, or -1 (logged, naming the cap).
 */
int vu_mem_admit(struct vu_conn *c, const char *what, uint64_t bytes, uint64_t kept)
{
	char a[MEM_CAP_STR_LEN], b[MEM_CAP_STR_LEN], u[MEM_CAP_STR_LEN];
	uint64_t cap = conn_mem_cap(c);

	if (bytes > cap || kept > cap - bytes) {
		log_guest("vhost-user: %s: refused %s of guest memory (%s mapped besides): over "
			  "the port's max-mem=%s", what, mem_cap_format(bytes, a),
			  mem_cap_format(kept, u), mem_cap_format(cap, b));
		return -1;
	}
	if (mem_cap_charge(bytes) < 0) {
		log_guest("vhost-user: %s: refused %s of guest memory: over vnetd's "
			  "--max-guest-mem=%s (%s mapped for all ports)", what,
			  mem_cap_format(bytes, a), mem_cap_format(mem_cap_daemon(), b),
			  mem_cap_format(mem_cap_in_use(), u));
		return -1;
	}
	return 0;
}

/*
 * region_len() - check one region's numbers (what: the request, for the log) and give the
 * length to map (from the start of the file, so mmap_offset need not be page-aligned); 0, or
 * -1 (logged).
 */
static int region_len(const struct vu_mem_region *r, const char *what, uint64_t *len)
{
	if (r->memory_size == 0) {
		log_guest("vhost-user: %s: empty region", what);
		return -1;
	}
	if (r->mmap_offset > UINT64_MAX - r->memory_size ||
	    r->guest_phys_addr > UINT64_MAX - (r->memory_size - 1) ||
	    r->userspace_addr > UINT64_MAX - (r->memory_size - 1)) {
		log_guest("vhost-user: %s: region wraps around", what);
		return -1;
	}
	*len = r->memory_size + r->mmap_offset;
	if (*len > SIZE_MAX) {
		log_guest("vhost-user: %s: region too large", what);
		return -1;
	}
	return 0;
}

/* map_region() - mmap one checked region (len from region_len()); 0, or -1 (logged, unmapped). */
static int map_region(struct vu_conn *c, const struct vu_mem_region *r, uint64_t len, int fd,
		      const char *what, struct guest_mem_region *out)
{
	int64_t size;
	void *base;

	/* A file shorter than the region would SIGBUS us on first touch. */
	if (vu_fd_short(fd, len, &size) == 1) {
		log_guest("vhost-user: %s: file of %jd bytes, region needs %" PRIu64, what,
			  (intmax_t)size, len);
		return -1;
	}
	if (!(base = vu_map_fd(fd, len, &c->mem_fault, what)))
		return -1;
	memset(out, 0, sizeof(*out));
	out->gpa = r->guest_phys_addr;
	out->uva = r->userspace_addr;
	out->size = r->memory_size;
	out->host = (uint8_t *)base + r->mmap_offset;
	out->mmap_base = base;
	out->mmap_len = (size_t)len;
	return 0;
}

/**
 * vu_mem_map_table() - map a new memory table completely, without touching the current one.
 * @c: the connection (its caps, its dirty log's size, its SIGBUS flag)
 * @t: SET_MEM_TABLE's payload (vu_msg_parse() checked the region count against the fds)
 * @fds: one fd per region; the caller keeps and closes them
 * @out: the new table
 *
 * Before anything is mapped, the whole table is admitted against the caps: its regions against
 * the port's max-mem-slots= (vu_mem_max_slots()); in bytes (vu_mem_admit()), the new table and
 * the dirty log against the port's max-mem= (the old table goes), and the new table against the
 * daemon-wide cap (which still holds the old one until it is unmapped).
 *
 * Return: 0 with *out mapped and charged, or -1 (logged; nothing mapped, nothing charged).
 */
int vu_mem_map_table(struct vu_conn *c, const struct vu_mem_table *t, const int *fds,
		     struct guest_mem *out)
{
	uint64_t len[VU_MAX_REGIONS], total = 0;

	_Static_assert(VU_MAX_REGIONS <= GUEST_MEM_MAX_REGIONS, "a table fits guest_mem");
	if (t->nregions > vu_mem_max_slots(c)) {
		log_guest("vhost-user: SET_MEM_TABLE: refused %u regions: over the port's "
			  "max-mem-slots=%u", t->nregions, vu_mem_max_slots(c));
		return -1;
	}
	for (unsigned i = 0; i < t->nregions; i++) {
		if (region_len(&t->regions[i], "SET_MEM_TABLE", &len[i]) < 0)
			return -1;
		total = len[i] > UINT64_MAX - total ? UINT64_MAX : total + len[i];
	}
	if (vu_mem_admit(c, "SET_MEM_TABLE", total, c->log.mmap_len) < 0)
		return -1;

	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < t->nregions; i++) {
		struct guest_mem_region reg;

		if (map_region(c, &t->regions[i], len[i], fds[i], "SET_MEM_TABLE", &reg) < 0)
			goto fail;
		if (guest_mem_add(out, &reg) < 0) {
			log_guest("vhost-user: SET_MEM_TABLE: region %u overlaps another", i);
			vu_unmap_fd(reg.mmap_base, reg.mmap_len);
			goto fail;
		}
	}
	return 0;

fail:
	/* What was admitted but never mapped; vu_mem_unmap_table() gives back the rest. */
	mem_cap_uncharge(total - vu_mem_table_bytes(out));
	vu_mem_unmap_table(out);
	return -1;
}

/**
 * vu_mem_add_region() - ADD_MEM_REG: check, admit and map one more region into the table.
 * @c: the connection; its table grows in place (running queues keep their pointers: no mapping
 *     moves, and the table is only read by the connection's own thread)
 * @r: the region
 * @fd: its file; the caller keeps and closes it
 *
 * Checked before anything is mapped: the numbers (size, wrap-around), a free slot (of the
 * port's max-mem-slots=, vu_mem_max_slots()), no overlap with the table in guest physical or frontend virtual
 * addresses, and the caps: table, new region and dirty log within the port's max-mem=, the new
 * region within the daemon-wide cap (vu_mem_admit()).
 *
 * Return: 0 with the region mapped, charged and in the table, or -1 (logged; nothing changed).
 */
int vu_mem_add_region(struct vu_conn *c, const struct vu_mem_region *r, int fd)
{
	struct guest_mem_region reg = {
	    .gpa = r->guest_phys_addr, .uva = r->userspace_addr, .size = r->memory_size};
	uint64_t len;

	if (region_len(r, "ADD_MEM_REG", &len) < 0)
		return -1;
	if (c->mem.nregions >= vu_mem_max_slots(c)) {
		log_guest("vhost-user: ADD_MEM_REG: all %u memory slots in use (the port's "
			  "max-mem-slots=)", vu_mem_max_slots(c));
		return -1;
	}
	if (guest_mem_check(&c->mem, &reg) < 0) {
		log_guest("vhost-user: ADD_MEM_REG: region at guest address %#" PRIx64 " (%" PRIu64
			  " bytes) overlaps another", r->guest_phys_addr, r->memory_size);
		return -1;
	}
	if (vu_mem_admit(c, "ADD_MEM_REG", len, vu_mem_table_bytes(&c->mem) + c->log.mmap_len) < 0)
		return -1;
	if (map_region(c, r, len, fd, "ADD_MEM_REG", &reg) < 0) {
		mem_cap_uncharge(len);
		return -1;
	}
	if (guest_mem_add(&c->mem, &reg) < 0) { /* checked above: cannot happen */
		vu_unmap_fd(reg.mmap_base, reg.mmap_len);
		mem_cap_uncharge(len);
		return -1;
	}
	return 0;
}

/**
 * vu_mem_remove_region() - REM_MEM_REG: take a region out of the table and unmap it.
 * @c: the connection; the caller has stopped every queue that could point into the region
 * @r: the region: matched by guest address, size and frontend address (not mmap_offset)
 *
 * Return: 0 with the region unmapped and its bytes given back, or -1 (logged) when the table has
 * no such region.
 */
int vu_mem_remove_region(struct vu_conn *c, const struct vu_mem_region *r)
{
	struct guest_mem_region gone;

	if (guest_mem_remove(&c->mem, r->guest_phys_addr, r->memory_size, r->userspace_addr,
			     &gone) < 0) {
		log_guest("vhost-user: REM_MEM_REG: no region at guest address %#" PRIx64
			  " of %" PRIu64 " bytes (user address %#" PRIx64 ")",
			  r->guest_phys_addr, r->memory_size, r->userspace_addr);
		return -1;
	}
	if (gone.mmap_base) {
		vu_unmap_fd(gone.mmap_base, gone.mmap_len);
		mem_cap_uncharge(gone.mmap_len);
	}
	return 0;
}

/**
 * vu_mem_has_region() - does the table hold exactly this region (REM_MEM_REG's match)?
 * @c: the connection
 * @r: the region
 *
 * Return: true if a region has its guest address, size and frontend address.
 */
bool vu_mem_has_region(const struct vu_conn *c, const struct vu_mem_region *r)
{
	return guest_mem_find_exact(&c->mem, r->guest_phys_addr, r->memory_size,
				    r->userspace_addr) != NULL;
}
