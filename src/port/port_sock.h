/* SPDX-License-Identifier: MIT */
/* port_sock.h - a port's vhost-user socket: listener, accept, client connect, (dis)connection. */
#ifndef VNETD_PORT_SOCK_H
#define VNETD_PORT_SOCK_H

struct port;

/* For the port's own files (port.c): the frontend side of struct port. */

/* port_sock_open() - listen at socket=, or (client=) start connecting to it; 0 or -1 (logged). */
int port_sock_open(struct port *p);

/* port_sock_close() - close the listener (removing its socket) or the client's fds. */
void port_sock_close(struct port *p);

/* port_sock_accept() - the listener is readable: take every pending frontend. */
void port_sock_accept(struct port *p);

/* port_sock_connect() - client mode, the reconnect timer fired: connect again, or time out. */
void port_sock_connect(struct port *p);

/* port_sock_connect_ready() - client mode: the connect() in progress has an answer. */
void port_sock_connect_ready(struct port *p);

/* port_sock_disconnect() - drop the frontend (client mode: reconnect soon); none: no-op. */
void port_sock_disconnect(struct port *p);

#endif
