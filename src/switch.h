/* switch.h - switch backend: an L2 learning switch between the ports of one vnetd. */
#ifndef VNETD_SWITCH_H
#define VNETD_SWITCH_H

#include <stdint.h>

#include "backend.h"

struct vnet_dev;
struct vnet_switch; /* opaque */

#define SWITCH_MAX_PORTS 1024
#define SWITCH_FDB_SIZE 4096	      /* learned MAC addresses, all ports together */
#define SWITCH_FDB_PORT_MAX 256	      /* learned MAC addresses one port may hold */
#define SWITCH_FDB_AGE_SEC 300	      /* a MAC not seen as a source for this long is forgotten */
#define SWITCH_QUEUE_PACKETS 256      /* packets waiting for one port's guest RX buffers */
#define SWITCH_QUEUE_BYTES (4u << 20) /* ... and their bytes */

/* switch_create() - an empty switch; NULL if out of memory (logged). */
struct vnet_switch *switch_create(void);

/*
 * switch_tick() - read the clock learning and aging use (CLOCK_MONOTONIC_COARSE) once, for
 * every frame until the next tick: the daemon ticks once per event-loop round, so frames pay
 * no clock read. switch_set_clock() sets that time explicitly (tests).
 */
void switch_tick(struct vnet_switch *sw);
void switch_set_clock(struct vnet_switch *sw, uint64_t now_ns);

/* switch_destroy() - free the switch; ports still attached are detached first. */
void switch_destroy(struct vnet_switch *sw);

/*
 * switch_attach() - add a port delivering to `dev` (which must outlive the port); `name` is
 * for logs. Returns the port's backend handle for switch_backend_ops, NULL if the switch is
 * full or out of memory (logged).
 */
struct vnet_backend *switch_attach(struct vnet_switch *sw, struct vnet_dev *dev, const char *name);

/* switch_detach() - remove a port: forget its MACs, drop its queued packets, free it. */
void switch_detach(struct vnet_backend *be);

/*
 * switch_port_stats() - the port's counters (any pointer may be NULL):
 * forwarded - frames the port sent to one known port;
 * flooded   - frames the port sent to every other port (broadcast, multicast, unknown);
 * dropped   - frames the port sent that were malformed, plus frames for the port that its
 *             full queue could not take.
 */
void switch_port_stats(const struct vnet_backend *be, uint64_t *forwarded, uint64_t *flooded,
		       uint64_t *dropped);

/* switch_port_queued() - packets waiting in the port's queue for guest RX buffers. */
unsigned switch_port_queued(const struct vnet_backend *be);

/* Ops table of switch ports ("switch"); use with vnet_dev_attach_backend(). */
extern const struct vnet_backend_ops switch_backend_ops;

#endif
