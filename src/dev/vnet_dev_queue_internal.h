/* SPDX-License-Identifier: MIT */
/* vnet_dev_queue_internal.h - the device's queues inside the model (vnet_dev_queue.c): init, kinds, reset. */
#ifndef VNETD_VNET_DEV_QUEUE_INTERNAL_H
#define VNETD_VNET_DEV_QUEUE_INTERNAL_H

#include "dev/vnet_dev_queue.h"

/* vnet_dev_queue_assign_kinds() - every queue's role under the negotiated features (published). */
void vnet_dev_queue_assign_kinds(struct vnet_dev *dev);

/* vnet_dev_queue_init_all() - a new device's queues: index, chain scratch, break callback, kind. */
void vnet_dev_queue_init_all(struct vnet_dev *dev);

/* vnet_dev_queue_reset() - queue q back to its reset state (after vnet_dev_reset() stopped it). */
void vnet_dev_queue_reset(struct vnet_dev *dev, struct vnet_queue *q);

#endif
