/* SPDX-License-Identifier: MIT */
/* port.h - one vnetd port: vhost-user listener + connection, device model, backend, timers. */
#ifndef VNETD_PORT_H
#define VNETD_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include "config/port_config.h"
#include "vhost/vhost_user.h"
#include "dev/vnet_dev.h"

struct port; /* opaque; defined in port_core.h, which only the port*.c files include */

/* port_name() - "p0", "p1", ... by index. */
const char *port_name(const struct port *p);
/* port_index() - position in the daemon's port table. */
unsigned port_index(const struct port *p);
/* port_config() - the configuration the port was created with. */
const struct port_config *port_config(const struct port *p);
/* port_dev() - the port's device model (always present). */
struct vnet_dev *port_dev(struct port *p);
/* port_connected() - whether a frontend is connected now. */
bool port_connected(const struct port *p);
/* port_worker() - the worker (event-loop thread) that owns the port. */
unsigned port_worker(const struct port *p);

/* port_connections() - frontends accepted so far. */
uint64_t port_connections(const struct port *p);
/* port_dirty_logging() - whether the frontend has vnetd log its writes now (live migration). */
bool port_dirty_logging(const struct port *p);
/* port_dirty_log_dropped() - pages written outside the frontend's dirty log (log too small). */
uint64_t port_dirty_log_dropped(const struct port *p);
/* port_rarps() - SEND_RARP announcements sent for the current frontend. */
uint64_t port_rarps(const struct port *p);

struct switch_port_counters;
/*
 * port_switch_frames() - a switch port's frame counters, its lanes' included: out[0] forwarded,
 * [1] flooded, [2] dropped, [3] crossed to another worker. On its workers' threads or with them
 * parked; false (out untouched) for a tap port.
 */
bool port_switch_frames(const struct port *p, uint64_t out[4]);

/* port_switch_counters() - a switch port's counters (any thread); false for a tap port. */
bool port_switch_counters(const struct port *p, struct switch_port_counters *out);

struct tap_queue_stats;
/*
 * port_tap_queues() - a tap port's queue fds (queues=N > 1: N, IFF_MULTI_QUEUE); 1 for a
 * single-queue tap, 0 for other backends.
 */
unsigned port_tap_queues(const struct port *p);
/* port_tap_queue_stats() - tap queue i's counters (any thread); false: no such tap queue. */
bool port_tap_queue_stats(const struct port *p, unsigned i, struct tap_queue_stats *out);

#endif
