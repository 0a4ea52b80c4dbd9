/* SPDX-License-Identifier: MIT */
/* guest_fault.h - survive SIGBUS from guest memory a frontend truncated after mapping it. */
#ifndef VNETD_GUEST_FAULT_H
#define VNETD_GUEST_FAULT_H

#include <stdatomic.h>
#include <stddef.h>

#include "mem/guest_mem.h"

/*
 * What the watch table holds: every port's mappings at their most, so that no set of tenants
 * within their caps can fill it. A port has one frontend, which maps at most its memory regions
 * (max-mem-slots=, at most GUEST_MEM_MAX_REGIONS) and one dirty log; while a SET_MEM_TABLE
 * replaces its table, up to 8 new regions (VU_MAX_REGIONS) are mapped beside the old ones, and
 * while a SET_LOG_BASE replaces its log, the new log beside the old one. vhost_user_mem.c and
 * port_spec_keys.c check these numbers against VU_MAX_REGIONS and VNETD_MAX_PORTS.
 */
#define GUEST_FAULT_PORTS 1024u
#define GUEST_FAULT_PORT_MAPS (GUEST_MEM_MAX_REGIONS + 8u + 1u)
#define GUEST_FAULT_MAX_MAPS (GUEST_FAULT_PORTS * GUEST_FAULT_PORT_MAPS) /* 530,432 */

/* guest_fault_install() - install the SIGBUS handler (once, before the sandbox); 0 or -1. */
int guest_fault_install(void);

/*
 * guest_fault_watch() - a guest mapping [base, base + len): a SIGBUS inside it replaces the
 * faulting page with a private zero page and sets *flag (an atomic store: the handler runs on
 * whichever thread touched the page), which the owner checks after each event (and then drops
 * the frontend). 0, or -1 when the table is full or the range is empty, wraps or overlaps a
 * watched one. O(log n) in the mappings watched.
 */
int guest_fault_watch(void *base, size_t len, atomic_int *flag);

/* guest_fault_note() - a fault found another way (EFAULT from a syscall): owners look too. */
void guest_fault_note(void);

/*
 * guest_fault_generation() - a counter every fault (and guest_fault_note()) bumps: an owner
 * that sees it change since its last look checks its own flags (each worker thread keeps its
 * own last value).
 */
unsigned guest_fault_generation(void);

/*
 * guest_fault_unwatch() - forget the mapping starting at base (before munmap). Once it returns,
 * no SIGBUS handler is still acting on that mapping or its flag. O(log n).
 */
void guest_fault_unwatch(void *base);

/* guest_fault_watched() - how many mappings are watched now (for tests and statistics). */
size_t guest_fault_watched(void);

#endif
