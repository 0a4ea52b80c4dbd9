/* SPDX-License-Identifier: MIT */
/* control_client.h - the control socket's connections: listener, accept, line buffers, replies. */
#ifndef VNETD_CONTROL_CLIENT_H
#define VNETD_CONTROL_CLIENT_H

#include <stdint.h>

#include "loop/loop.h"
#include "port/port.h"

#define CONTROL_MAX_CLIENTS 32		     /* connections at once; one more is refused */
#define CONTROL_MAX_LINE (64 * 1024)	     /* longest request line */
#define CONTROL_MAX_OUTBUF (8 * 1024 * 1024) /* unsent replies kept per client before dropping it */

struct control_clients; /* opaque: the listening socket and its client slots */

/*
 * control_client_open() - listen at path (unix stream, mode 0600; a stale socket there is
 * removed) and register the listener in epfd (EV_CONTROL_LISTEN). Call before sandbox_enter().
 * NULL on error (logged).
 */
struct control_clients *control_client_open(const char *path, int epfd);

/*
 * control_client_event() - handle an EV_CONTROL_* event: accept a client, or read its
 * requests, run them (control_execute) and send the replies; never blocks.
 */
void control_client_event(struct control_clients *cc, struct ev_ref ref, uint32_t events,
			  struct port *const *ports, unsigned nports);

/* control_client_close() - close every client and the listener, remove the socket; NULL ok. */
void control_client_close(struct control_clients *cc);

#endif
