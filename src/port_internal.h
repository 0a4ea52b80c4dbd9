/* port_internal.h - the port structure and the daemon-facing port functions. */
#ifndef VNETD_PORT_INTERNAL_H
#define VNETD_PORT_INTERNAL_H

#include "event_loop.h"
#include "port.h"

struct vnet_switch;

struct port {
	unsigned index;
	char name[8];
	struct port_config cfg;
	int epfd;
	struct run_queue *rq; /* the daemon's: queues that yielded at their budget */
	int listen_fd;
	bool connected;
	bool tap_failed;
	uint64_t connections;
	struct vu_conn conn;
	struct vnet_dev *dev;
	struct vnet_backend *be;
	int timer_fd[VNET_MAX_QUEUES];
};

/*
 * port_create() - set up a port (backend, listener, timers) in epoll set epfd; queues that
 * yield go on rq. NULL on error.
 */
struct port *port_create(unsigned index, const struct port_config *cfg, int epfd,
			 struct run_queue *rq, struct vnet_switch *sw);

/* port_destroy() - disconnect, close every fd, free. NULL is fine. */
void port_destroy(struct port *p);

/* port_handle_event() - dispatch one epoll event that belongs to this port. */
void port_handle_event(struct port *p, struct ev_ref ref, uint32_t events);

/* port_after_events() - after each batch of events: publish received packets, and drop a
 * frontend whose guest memory faulted (SIGBUS) during the batch. */
void port_after_events(struct port *p);

#endif
