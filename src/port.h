/* SPDX-License-Identifier: MIT */
/* port.h - one vnetd port: vhost-user listener + connection, device model, backend, timers. */
#ifndef VNETD_PORT_H
#define VNETD_PORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/un.h>

#include "vhost_user.h"
#include "vnet_dev.h"

#define VNETD_MAX_PORTS 1024 /* fits ev_ref.port (16 bits) */

enum port_backend_kind { PORT_BACKEND_TAP, PORT_BACKEND_SWITCH };

/* A port as the command line describes it. */
struct port_config {
	char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	enum port_backend_kind backend;
	char tap_name[16];
	bool client;    /* vhost-user client: connect to socket_path (and reconnect) */
	bool mac_given; /* mac= was in the spec (else derived from index and socket) */
	int worker;     /* worker= (0..), or -1: the worker with the fewest ports */
	uint64_t max_mem; /* max-mem=: guest memory the frontend may map (mem_cap.h); 0 default */
	struct vnet_dev_params dev;
	unsigned max_macs;   /* switch: max-macs=, MACs the port may hold in the FDB (0: default) */
	unsigned learn_rate; /* switch: learn-rate=, new MACs a second (0: no limit) */
};

struct port; /* opaque; defined in port.c */

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
/* port_switch_counters() - a switch port's counters (any thread); false for a tap port. */
bool port_switch_counters(const struct port *p, struct switch_port_counters *out);

#endif
