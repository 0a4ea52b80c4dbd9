/* SPDX-License-Identifier: MIT */
/* vhost_user_mem.h - a connection's guest memory: SET_MEM_TABLE's regions, the memory caps. */
#ifndef VNETD_VHOST_USER_MEM_H
#define VNETD_VHOST_USER_MEM_H

#include <stdint.h>

#include "guest_mem.h"
#include "vhost_user_conn.h"

/*
 * vu_mem_admit() - may the connection map `bytes` more of guest memory (mem_cap.h), `kept`
 * being what it keeps mapped besides (the table for a new log, the log for a new table)?
 * Checks the port's max-mem= and charges the daemon-wide cap: 0, or -1 (logged, naming the
 * cap, nothing charged). The caller gives the bytes back (mem_cap_uncharge()) when it unmaps.
 */
int vu_mem_admit(struct vu_conn *c, const char *what, uint64_t bytes, uint64_t kept);

/* vu_mem_table_bytes() - the address space a table's own mappings take (what mem_cap counts). */
uint64_t vu_mem_table_bytes(const struct guest_mem *mem);

/*
 * vu_mem_map_table() - check, admit (against the caps, beside the connection's dirty log) and
 * map a SET_MEM_TABLE table into *out, one fd per region. 0, or -1 (logged; nothing stays
 * mapped or charged). The connection's own table is not touched.
 */
int vu_mem_map_table(struct vu_conn *c, const struct vu_mem_table *t, const int *fds,
		     struct guest_mem *out);

/* vu_mem_unmap_table() - unmap a table (off the SIGBUS watch list first); its bytes are free. */
void vu_mem_unmap_table(struct guest_mem *mem);

#endif
