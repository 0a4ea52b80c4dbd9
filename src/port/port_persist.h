/* SPDX-License-Identifier: MIT */
/* port_persist.h - a port's --state-dir glue: load, restore, timed writes of its state file. */
#ifndef VNETD_PORT_PERSIST_H
#define VNETD_PORT_PERSIST_H

#include <stdint.h>

struct port;

/* ---- For the port's own files (port.c, port_sock.c) ---- */

/* port_persist_open() - read the port's state file and watch its write timer; 0 or -1 (logged). */
int port_persist_open(struct port *p);

/* port_persist_close() - close the write timer (the file stays). */
void port_persist_close(struct port *p);

/* port_persist_restore() - the frontend's queues may run again: give back what the file kept. */
void port_persist_restore(struct port *p);

/* port_persist_mark() - the guest may have changed what the file keeps: arm the write timer. */
void port_persist_mark(struct port *p);

/* port_persist_timer() - the write timer fired: write what the guest changed meanwhile. */
void port_persist_timer(struct port *p);

/* ---- Packed ring positions (port_persist.c, its own section) ---- */

/* port_persist_ring_base() - the frontend's SET_VRING_BASE for queue qidx (its own value). */
void port_persist_ring_base(struct port *p, unsigned qidx, uint32_t base);

/*
 * port_persist_ring_starting() - queue qidx is about to start: resume a packed ring where it
 * stopped cleanly when the frontend repeats the base it gave then; the kept position is
 * dropped (written at once: a running ring has none).
 */
void port_persist_ring_starting(struct port *p, unsigned qidx);

/*
 * port_persist_rings_stop() - the frontend is going away: stop each running packed queue
 * cleanly (held completions published, taken chains given back) and keep where it stopped;
 * written at once.
 */
void port_persist_rings_stop(struct port *p);

#endif
