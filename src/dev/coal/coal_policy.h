/* SPDX-License-Identifier: MIT */
/* coal_policy.h - whose coalescing values a queue uses (coal_policy.c). */
#ifndef VNETD_COAL_POLICY_H
#define VNETD_COAL_POLICY_H

#include <stdbool.h>

#include "dev/coal/coalesce.h"
#include "dev/vnet_dev_types.h"

struct vnet_dev;

/* coal_policy_init() - host defaults, adaptive modes and stall guard from the device parameters. */
void coal_policy_init(struct vnet_dev *dev);

/* coal_policy_reset() - device reset: forget every setting (host defaults stay with coal_persist). */
void coal_policy_reset(struct vnet_dev *dev);

/*
 * coal_policy_default() - parameters a queue gets after reset or a virtio re-enable: the last
 * setting for all queues of its kind since reset (guest TX_SET/RX_SET or host), else zero.
 */
void coal_policy_default(const struct vnet_dev *dev, const struct vnet_queue *q,
			 struct coal_params *p, enum coal_setter *who);

/*
 * coal_policy_queue_default() - give a queue (after reset or a virtio re-enable) its default
 * parameters, and the port's adaptive mode unless the guest set that kind since reset.
 */
void coal_policy_queue_default(struct vnet_dev *dev, struct vnet_queue *q);

/* coal_policy_set_kind() - set every RX or TX queue and remember it for queues re-enabled later. */
void coal_policy_set_kind(struct vnet_dev *dev, enum vnet_queue_kind kind,
			  const struct coal_params *p, enum coal_setter who);

/* coal_policy_apply() - set queue parameters and re-check at once (spec: notify if already due). */
void coal_policy_apply(struct vnet_dev *dev, struct vnet_queue *q, const struct coal_params *p,
		       enum coal_setter who);

#endif
