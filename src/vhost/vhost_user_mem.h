/* SPDX-License-Identifier: MIT */
/* vhost_user_mem.h - a connection's guest memory: SET_MEM_TABLE, ADD/REM_MEM_REG, the memory caps. */
#ifndef VNETD_VHOST_USER_MEM_H
#define VNETD_VHOST_USER_MEM_H

#include <stdbool.h>
#include <stdint.h>

#include "mem/mem.h"
#include "vhost/vhost_user_conn.h"

/*
 * vu_mem_admit() - may the connection map `bytes` more of guest memory (mem_cap.h), `kept`
 * being what it keeps mapped besides (the table for a new log, the log for a new table)?
 * Checks the port's max-mem= and charges the daemon-wide cap: 0, or -1 (logged, naming the
 * cap, nothing charged). The caller gives the bytes back (mem_cap_uncharge()) when it unmaps.
 */
int vu_mem_admit(struct vu_conn *c, const char *what, uint64_t bytes, uint64_t kept);

/*
 * vu_mem_max_slots() - the memory regions the connection may map (its port's max-mem-slots=,
 * 1..GUEST_MEM_MAX_REGIONS, default MEM_CAP_SLOTS_DEFAULT): what GET_MAX_MEM_SLOTS answers and
 * what SET_MEM_TABLE and ADD_MEM_REG are held to.
 */
unsigned vu_mem_max_slots(const struct vu_conn *c);

/* vu_mem_maps() - the mappings the connection holds (regions and dirty log; guest_fault.h). */
unsigned vu_mem_maps(const struct vu_conn *c);

/* vu_mem_table_bytes() - the address space a table's own mappings take (what mem_cap counts). */
uint64_t vu_mem_table_bytes(const struct guest_mem *mem);

/*
 * vu_mem_map_table() - check, admit (against the caps: max-mem-slots= for its regions, bytes
 * beside the connection's dirty log) and map a SET_MEM_TABLE table into *out, one fd per
 * region. 0, or -1 (logged; nothing stays mapped or charged). The connection's own table is
 * not touched.
 */
int vu_mem_map_table(struct vu_conn *c, const struct vu_mem_table *t, const int *fds,
		     struct guest_mem *out);

/* vu_mem_unmap_table() - unmap a table (off the SIGBUS watch list first); its bytes are free. */
void vu_mem_unmap_table(struct guest_mem *mem);

/*
 * vu_mem_add_region() - ADD_MEM_REG: check (a slot free of max-mem-slots=, no overlap), admit
 * against the caps and map one region into the connection's table; 0, or -1 (logged; nothing
 * changed).
 */
int vu_mem_add_region(struct vu_conn *c, const struct vu_mem_region *r, int fd);

/*
 * vu_mem_has_region() - the table holds a region of r's guest address, size and user address.
 */
bool vu_mem_has_region(const struct vu_conn *c, const struct vu_mem_region *r);

/*
 * vu_mem_remove_region() - REM_MEM_REG: unmap the region matching r (guest address, size, user
 * address; queues into it already stopped); 0, or -1 (logged) when there is none.
 */
int vu_mem_remove_region(struct vu_conn *c, const struct vu_mem_region *r);

#endif
