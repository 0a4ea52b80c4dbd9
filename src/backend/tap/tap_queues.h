/* SPDX-License-Identifier: MIT */
/* tap_queues.h - a tap's queue fds: open (IFF_MULTI_QUEUE), close, per-queue handles, counters. */
#ifndef VNETD_TAP_QUEUES_H
#define VNETD_TAP_QUEUES_H

#include <stdbool.h>

#include "backend/tap/tap.h"
#include "backend/tap/tap_open.h"

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
