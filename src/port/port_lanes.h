/* SPDX-License-Identifier: MIT */
/* port_lanes.h - a port's queue pairs on other workers (queue-workers=): lanes, parking, sync. */
#ifndef VNETD_PORT_LANES_H
#define VNETD_PORT_LANES_H

#include <stdbool.h>

#include "loop/loop.h"

struct port;
struct worker_pool;

/*
 * port_lanes_setup() - give the other workers of cfg.queue_workers their pairs of switch port p
 * (created on worker 0, its home): a device view and a switch lane each, the pairs' queue
 * timers moved to their epoll sets. A no-op without queue-workers=. Main thread, the workers
 * parked or not started. 0, or -1 (logged; port_destroy() undoes what was done).
 */
int port_lanes_setup(struct port *p, struct worker_pool *pool);

/* port_lanes_free() - free the lanes' device views (port_destroy(), after the switch port). */
void port_lanes_free(struct port *p);

/*
 * port_lanes_is_home() - whether event ref of p (which has lanes) changes what its lanes read:
 * everything but a data queue's kick, timer or run.
 */
bool port_lanes_is_home(const struct port *p, struct ev_ref ref);

/*
 * port_lanes_park() / port_lanes_unpark() - around such an event of a port with lanes (on its
 * home, the main thread): park the other workers unless they are parked already (a control
 * request), then copy the device's state into the lanes and let them run. park returns whether
 * it parked; pass that to unpark.
 */
bool port_lanes_park(struct port *p);
void port_lanes_unpark(struct port *p, bool parked);

/* port_lanes_flush() - publish lane `lane`'s received packets (its EV_PORT_FLUSH, 1..). */
void port_lanes_flush(struct port *p, unsigned lane);

#endif
