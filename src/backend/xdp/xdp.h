/* SPDX-License-Identifier: MIT */
/* xdp.h - AF_XDP backend: a port's packets go through AF_XDP sockets on a NIC's queues. */
#ifndef VNETD_XDP_H
#define VNETD_XDP_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/dev.h"

struct vnet_dev;

#define XDP_PORT_MAX_QUEUES 16 /* NIC queues (sockets) of one port: its queue pairs */
/* The largest frame either way: a 4 KiB UMEM frame less the kernel's 256 bytes of headroom. */
#define XDP_PORT_MAX_FRAME (4096 - 256)

/*
 * What the backend needs from its owner (the port). The owner registers every
 * xdp_backend_fd(be, i), i < xdp_backend_nfds(be), with EPOLLIN right after xdp_backend_open()
 * and passes each event of socket i to xdp_backend_handle_events(be, i, events).
 */
struct xdp_owner_ops {
	/* Change the events socket i's fd is registered for (the full new mask, or 0). */
	void (*set_events)(void *ctx, unsigned i, int fd, uint32_t epoll_events);
	/* The interface is gone (or its socket broke): the owner unregisters every fd. */
	void (*failed)(void *ctx);
	/* Call xdp_backend_flush() once this round of events is done (transmits to kick). */
	void (*want_flush)(void *ctx);
};

/*
 * xdp_backend_open() - an XDP program on `ifname` redirecting NIC queues queue..queue+nq-1 to
 * AF_XDP sockets that share one UMEM (zero-copy when the driver can, else copy mode). Needs
 * CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF (or CAP_SYS_ADMIN) and no seccomp filter yet: set up
 * before the sandbox. NULL on failure (logged with the reason).
 */
struct vnet_backend *xdp_backend_open(const char *ifname, unsigned queue, unsigned nq,
				      struct vnet_dev *dev, const struct xdp_owner_ops *owner,
				      void *owner_ctx);

/* xdp_backend_nfds() - how many sockets (fds) the backend has. */
unsigned xdp_backend_nfds(const struct vnet_backend *be);

/* xdp_backend_fd() - socket i's fd, for the owner's epoll loop. */
int xdp_backend_fd(const struct vnet_backend *be, unsigned i);

/* xdp_backend_zero_copy() - whether the sockets run in zero-copy mode. */
bool xdp_backend_zero_copy(const struct vnet_backend *be);

/*
 * xdp_backend_handle_events() - socket i reported `events`: EPOLLIN delivers a bounded batch
 * to the guest, EPOLLOUT resumes a blocked transmit, EPOLLERR/HUP fails the backend.
 */
void xdp_backend_handle_events(struct vnet_backend *be, unsigned i, uint32_t events);

/* xdp_backend_flush() - submit and kick the transmits of this round (want_flush()). */
void xdp_backend_flush(struct vnet_backend *be);

/* xdp_backend_close() - detach the XDP program, close the sockets, free; fds unregistered first. */
void xdp_backend_close(struct vnet_backend *be);

/* Ops table of AF_XDP backends ("xdp"); use with vnet_dev_attach_backend(). */
extern const struct vnet_backend_ops xdp_backend_ops;

#endif
