/* SPDX-License-Identifier: MIT */
/* port_xdp.c - a port on the AF_XDP backend: its sockets in the worker's epoll set, kicks. */
#include "port/port_xdp.h"

#include <sys/epoll.h>

#include "lib/log.h"
#include "port/port_internal.h"
#include "backend/xdp/xdp.h"

/* Backend callbacks. */
static void port_xdp_set_events(void *ctx, unsigned i, int fd, uint32_t events)
{
	struct port *p = ctx;

	event_loop_mod(p->epfd, fd, events, port_ref(p, EV_TAP, i, fd));
}

static void port_xdp_failed(void *ctx)
{
	struct port *p = ctx;

	log_err("%s: xdp %s failed; port has no backend now", p->name, p->cfg.xdp_name);
	for (unsigned i = 0; i < xdp_backend_nfds(p->be); i++)
		event_loop_del(p->epfd, xdp_backend_fd(p->be, i));
	p->tap_failed = true;
}

/* Transmits wait for the end of the round: the flush list calls port_xdp_flush(). */
static void port_xdp_want_flush(void *ctx)
{
	struct port *p = ctx;

	if (!run_queue_push(p->flushq, port_ref(p, EV_PORT_FLUSH, 0, -1)))
		xdp_backend_flush(p->be);
}

static const struct xdp_owner_ops port_xdp_ops = {
	.set_events = port_xdp_set_events,
	.failed = port_xdp_failed,
	.want_flush = port_xdp_want_flush,
};

/**
 * port_xdp_attach() - open the port's AF_XDP backend and register its sockets.
 * @p: the port (cfg.backend PORT_BACKEND_XDP), its device created
 *
 * One socket per queue pair, NIC queues cfg.xdp_queue on. Main thread, before the sandbox
 * (xdp_backend_open() refuses inside it). On failure p->be may be set: port_destroy() cleans up.
 *
 * Return: 0, or -1 (logged).
 */
int port_xdp_attach(struct port *p)
{
	p->be = xdp_backend_open(p->cfg.xdp_name, p->cfg.xdp_queue, p->cfg.dev.queue_pairs, p->dev,
				 &port_xdp_ops, p);
	if (!p->be)
		return -1;
	vnet_dev_attach_backend(p->dev, &xdp_backend_ops, p->be);
	for (unsigned i = 0; i < xdp_backend_nfds(p->be); i++) {
		int fd = xdp_backend_fd(p->be, i);

		if (event_loop_add(p->epfd, fd, EPOLLIN, port_ref(p, EV_TAP, i, fd)) < 0) {
			while (i-- > 0)
				event_loop_del(p->epfd, xdp_backend_fd(p->be, i));
			vnet_dev_attach_backend(p->dev, NULL, NULL);
			xdp_backend_close(p->be);
			p->be = NULL;
			return -1;
		}
	}
	return 0;
}

/**
 * port_xdp_detach() - unregister the sockets and close the backend.
 * @p: the port; p->be is NULL afterwards
 *
 * Main thread, the port's worker parked or stopped.
 */
void port_xdp_detach(struct port *p)
{
	if (!p->be)
		return;
	vnet_dev_attach_backend(p->dev, NULL, NULL);
	if (!p->tap_failed) /* failed(): already unregistered */
		for (unsigned i = 0; i < xdp_backend_nfds(p->be); i++)
			event_loop_del(p->epfd, xdp_backend_fd(p->be, i));
	xdp_backend_close(p->be);
	p->be = NULL;
}

/**
 * port_xdp_event() - pass an epoll event to the backend.
 * @p: the port
 * @i: the socket (the event's queue)
 * @events: the epoll events
 *
 * On the port's worker.
 */
void port_xdp_event(struct port *p, unsigned i, uint32_t events)
{
	if (p->be && !p->tap_failed)
		xdp_backend_handle_events(p->be, i, events);
}

/**
 * port_xdp_flush() - submit and kick the transmits of this round.
 * @p: the port
 *
 * On the port's worker, from the flush list.
 */
void port_xdp_flush(struct port *p)
{
	if (p->be && !p->tap_failed)
		xdp_backend_flush(p->be);
}
