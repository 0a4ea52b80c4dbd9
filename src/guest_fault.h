/* SPDX-License-Identifier: MIT */
/* guest_fault.h - survive SIGBUS from guest memory a frontend truncated after mapping it. */
#ifndef VNETD_GUEST_FAULT_H
#define VNETD_GUEST_FAULT_H

#include <stdatomic.h>
#include <stddef.h>

/* guest_fault_install() - install the SIGBUS handler (once, before the sandbox); 0 or -1. */
int guest_fault_install(void);

/*
 * guest_fault_watch() - a guest mapping [base, base + len): a SIGBUS inside it replaces the
 * faulting page with a private zero page and sets *flag (an atomic store: the handler runs on
 * whichever thread touched the page), which the owner checks after each event (and then drops
 * the frontend). 0, or -1 when the table is full.
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

/* guest_fault_unwatch() - forget the mapping starting at base (before munmap). */
void guest_fault_unwatch(void *base);

#endif
