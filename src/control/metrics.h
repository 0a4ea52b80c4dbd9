/* SPDX-License-Identifier: MIT */
/* metrics.h - Prometheus /metrics over HTTP: a tiny non-blocking server inside the event loop. */
#ifndef VNETD_METRICS_H
#define VNETD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "loop/loop.h"
#include "port/port.h"

#define METRICS_MAX_CLIENTS 8	 /* connections served at once; a new one evicts the oldest */
#define METRICS_MAX_REQUEST 4096 /* request line and headers; longer: 431 and close */
#define METRICS_TIMEOUT_MS 5000	 /* a connection's whole life, request and reply */

/*
 * metrics_http_status() - look at the bytes of a request received so far: 0 while the header
 * is incomplete (and below METRICS_MAX_REQUEST), else the HTTP status to answer: 200 for
 * GET/HEAD /metrics, (*head set for HEAD,
 * whose reply has no body), 400 malformed, 404 other path, 405 other method,
 * 431 too long. Pure: buf need not be NUL-terminated.
 */
int metrics_http_status(const char *buf, size_t len, bool *head);

struct metrics_server; /* opaque: listener, timeout timer, client slots */

/*
 * metrics_open() - listen on spec (see listen_addr_parse()) and register the listener and a
 * timeout timer in epfd (EV_METRICS_*). Call before sandbox_enter(). NULL on error (logged).
 */
struct metrics_server *metrics_open(const char *spec, int epfd);

/* metrics_event() - handle an EV_METRICS_* event; never blocks. */
void metrics_event(struct metrics_server *m, struct ev_ref ref, uint32_t events,
		   struct port *const *ports, unsigned nports);

/* metrics_close() - close every connection, the listener and the timer; NULL is ignored. */
void metrics_close(struct metrics_server *m);

/* metrics_render() - the exposition text of these ports into *body (see metrics_text.h). */
struct textbuf;
void metrics_render(struct textbuf *body, struct port *const *ports, unsigned nports);

#endif
