/* SPDX-License-Identifier: MIT */
/* tap.h - tap backend: a port's packets go through a Linux tap interface (IFF_VNET_HDR). */
#ifndef VNETD_TAP_H
#define VNETD_TAP_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/tap/tap_open.h" /* tap_open_tun_dir(), for the daemon */
#include "dev/dev.h"

struct vnet_dev;
struct virtio_net_hdr_v1;

/*
 * What the tap needs from its owner (the port). The owner registers each queue's fd
 * (tap_backend_queue_fd(), queues 0..tap_backend_nqueues() - 1) in its epoll loop with EPOLLIN
 * right after tap_backend_open() and passes every event of queue i's fd to
 * tap_backend_handle_events(be, i, events).
 */
struct tap_owner_ops {
	/*
	 * Change the events queue's fd is registered for (the full new mask: EPOLLIN, EPOLLOUT or
	 * both, or 0). EPOLLIN goes off while a received packet waits for guest buffers; EPOLLOUT
	 * is on while a transmit waits for room.
	 */
	void (*set_events)(void *ctx, unsigned queue, int fd, uint32_t epoll_events);
	/*
	 * Optional (may be NULL): the tap is gone for good (the interface was deleted), and epoll
	 * keeps reporting EPOLLERR for its fds. The owner should unregister every queue's fd; it
	 * may then close the backend at any time after this call returns.
	 */
	void (*failed)(void *ctx);
	/*
	 * Optional: reading straight into guest memory faulted (EFAULT: the frontend shrank or
	 * unmapped it). The owner should drop the frontend, as it does after a SIGBUS.
	 */
	void (*guest_fault)(void *ctx);
	/*
	 * Optional (NULL: queues are never detached): a multi-queue tap detached queue's fd
	 * from the interface (IFF_DETACH_QUEUE: the driver uses fewer pairs; a detached tun fd
	 * reports EPOLLERR, so the owner unregisters it), or attached it again (register it with
	 * epoll_events).
	 */
	void (*queue_attached)(void *ctx, unsigned queue, int fd, bool attached,
			       uint32_t epoll_events);
};

/* Most queues a tap opens (one per queue pair of its port). */
#define TAP_MAX_QUEUES 16

/* A tap queue's counters (tap_backend_queue_stats()). */
struct tap_queue_stats {
	uint64_t rx_packets; /* read from this queue's fd */
	uint64_t tx_packets; /* written to it (multi-queue taps only; else 0) */
};

/*
 * tap_backend_handle_events() - queue i's fd reported `events`: EPOLLIN reads up to a bounded
 * batch of packets into the guest, EPOLLOUT resumes a blocked transmit.
 */
void tap_backend_handle_events(struct vnet_backend *be, unsigned i, uint32_t events);

/*
 * A tap trunk's owner (tap_backend_set_trunk()): rx() gets each VLAN-tagged frame read from
 * the tap (len bytes, tag included; the buffer is the tap's, writable, valid during the call),
 * on the port's worker's thread.
 */
struct tap_trunk_ops {
	/* frame: len bytes, tagged, writable; hdr: the tap's virtio-net header of it */
	void (*rx)(void *ctx, const struct virtio_net_hdr_v1 *hdr, uint8_t *frame, size_t len);
};

/*
 * tap_backend_send_tagged() - write a frame (len bytes at byte off of iov, untagged) to the tap
 * with an 802.1Q tag of VLAN vid inserted and virtio-net header hdr (its offsets counted in the
 * tagged frame); 0, or a negative errno (dropped, never blocks).
 */
int tap_backend_send_tagged(struct vnet_backend *be, uint16_t vid,
			    const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
			    unsigned iovcnt, size_t off, size_t len);

/* Ops table of single-queue tap backends ("tap"); tap_backend_ops_of() picks the right one. */
extern const struct vnet_backend_ops tap_backend_ops;

/* A tap's queue fds (tap_queues.c): open (IFF_MULTI_QUEUE), close, per-queue handles, counters. */
/*
 * tap_backend_open() - attach to tap interface `ifname` (created if it does not exist, or an
 * existing persistent tap we may use), non-blocking, with the 12-byte virtio_net_hdr_v1 in
 * front of every packet. nqueues 1: one fd, no IFF_MULTI_QUEUE; 2..TAP_MAX_QUEUES: one
 * IFF_MULTI_QUEUE fd per queue pair. The interface is not configured or brought up. Received
 * packets go to `dev`, which must outlive the backend. NULL on failure (logged with the
 * interface's name).
 */
struct vnet_backend *tap_backend_open(const char *ifname, unsigned nqueues, struct vnet_dev *dev,
				      const struct tap_owner_ops *owner, void *owner_ctx);

/* tap_backend_nqueues() - how many queue fds the tap has (1 unless multi-queue). */
unsigned tap_backend_nqueues(const struct vnet_backend *be);

/* tap_backend_queue_fd() - queue i's fd, for the owner's epoll loop. */
int tap_backend_queue_fd(const struct vnet_backend *be, unsigned i);

/*
 * tap_backend_queue() - queue i's own backend handle: transmits through it go out on queue
 * i's fd (vnet_dev_attach_queue_backend()). Queue 0's is be itself.
 */
struct vnet_backend *tap_backend_queue(struct vnet_backend *be, unsigned i);

/* tap_backend_queue_stats() - queue i's counters, from any thread; false: no such queue. */
bool tap_backend_queue_stats(const struct vnet_backend *be, unsigned i, struct tap_queue_stats *out);

/* tap_backend_ops_of() - the ops table for this tap (multi-queue taps count per queue). */
const struct vnet_backend_ops *tap_backend_ops_of(const struct vnet_backend *be);

/* tap_backend_name() - the interface's name as the kernel reports it. */
const char *tap_backend_name(const struct vnet_backend *be);

/* tap_backend_close() - close every queue fd and free the backend; unregister the fds first. */
void tap_backend_close(struct vnet_backend *be);

/* tap_backend_set_trunk() - tagged frames read go to ops->rx(); untagged ones to the guest. */
void tap_backend_set_trunk(struct vnet_backend *be, const struct tap_trunk_ops *ops, void *ctx);

#endif
