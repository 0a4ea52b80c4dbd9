/* SPDX-License-Identifier: MIT */
/* port_internal.h - the daemon-facing port functions: create, destroy, events, state. */
#ifndef VNETD_PORT_INTERNAL_H
#define VNETD_PORT_INTERNAL_H

#include "loop/event_loop.h"
#include "port/port.h"
#include "port/port_persist.h" /* port_set_state_dir(), port_state_sync() */
#include "port/port_sock.h"    /* port_set_socket_owner() */

struct vnet_switch;

/*
 * port_create() - set up a port (backend, listener, timers) of worker `worker` in its epoll
 * set epfd; queues that yield go on rq, and the port goes on flushq when it has received
 * packets to publish. sw: a switch port's switch (sw[0]), or a trunk tap port's VLAN switches
 * (cfg->n_trunk, in cfg->trunk's order). NULL on error.
 */
struct port *port_create(unsigned index, const struct port_config *cfg, unsigned worker, int epfd,
			 struct run_queue *rq, struct run_queue *flushq,
			 struct vnet_switch *const *sw);

/* port_destroy() - disconnect, close every fd, free. NULL is fine. */
void port_destroy(struct port *p);

/* port_handle_event() - dispatch one epoll event that belongs to this port. */
void port_handle_event(struct port *p, struct ev_ref ref, uint32_t events);

/* port_flush_rx() - publish received packets (the port, or its lane `lane` (1..), asked for it
 * on a flush list: the EV_PORT_FLUSH entry's queue field). */
void port_flush_rx(struct port *p, unsigned lane);

/* port_check_fault() - drop the frontend if its guest memory faulted (SIGBUS). */
void port_check_fault(struct port *p);

#endif
