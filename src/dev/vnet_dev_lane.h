/* SPDX-License-Identifier: MIT */
/* vnet_dev_lane.h - a device's queue pairs run by another worker: per-thread views of one device. */
#ifndef VNETD_VNET_DEV_LANE_H
#define VNETD_VNET_DEV_LANE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "dev/backend.h"
#include "dev/vnet_dev_types.h"

struct vnet_dev;

/*
 * vnet_dev_lane_create() - a view of dev that runs the queues in qmask on another thread: it
 * shares dev's queues, has scratch of its own, and its own owner (env, ctx) and backend handle;
 * dev stops running them. NULL without memory. With every thread of the device parked.
 */
struct vnet_dev *vnet_dev_lane_create(struct vnet_dev *dev, uint64_t qmask,
				      const struct vnet_env_ops *env, void *env_ctx);

/*
 * vnet_dev_lane_sync() - copy dev's device-wide state (features, header length, MAC, pairs,
 * filter, RSS, coalescing settings, stall guard, dirty log) into the lane; its backend is be
 * while dev has one. After any change to dev, with every thread of the device parked.
 */
void vnet_dev_lane_sync(struct vnet_dev *lane, const struct vnet_dev *dev, struct vnet_backend *be);

/* vnet_dev_lane_destroy() - free a lane (its queues go back to dev). NULL is fine. */
void vnet_dev_lane_destroy(struct vnet_dev *lane, struct vnet_dev *dev);

/* vnet_dev_pair_mask() - the queue mask of queue pair `pair` (its RX and TX queue). */
uint64_t vnet_dev_pair_mask(unsigned pair);

/*
 * vnet_dev_rx_pair() - the queue pair a frame for dev goes to: the receive path's pick (RSS
 * table, else the flow hash) with several pairs active, else the sender's TX pair when dev
 * has it usable (from_pair: vnet_dev_tx_pair()), else 0; reads dev only, so a sender's thread may ask it for another worker's port.
 */
unsigned vnet_dev_rx_pair(const struct vnet_dev *dev, unsigned from_pair, const struct iovec *iov,
			  unsigned iovcnt, size_t off, size_t frame_len);

/* vnet_dev_tx_pair() - the pair whose TX queue dev is processing (on dev's thread). */
unsigned vnet_dev_tx_pair(const struct vnet_dev *dev);

#endif
