/* SPDX-License-Identifier: MIT */
/* port_xdp.h - a port on the AF_XDP backend: its sockets in the worker's epoll set, kicks. */
#ifndef VNETD_PORT_XDP_H
#define VNETD_PORT_XDP_H

#include <stdint.h>

struct port;

/* port_xdp_attach() - open the AF_XDP backend of cfg.xdp_name, register its fds; 0 or -1. */
int port_xdp_attach(struct port *p);

/* port_xdp_detach() - unregister the fds, close the backend (the XDP program goes with it). */
void port_xdp_detach(struct port *p);

/* port_xdp_event() - an epoll event of socket i (EV_TAP, queue i). */
void port_xdp_event(struct port *p, unsigned i, uint32_t events);

/* port_xdp_flush() - the end of a round: submit and kick this round's transmits. */
void port_xdp_flush(struct port *p);

#endif
