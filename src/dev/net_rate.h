/* SPDX-License-Identifier: MIT */
/* net_rate.h - the port's rate limits on the device (net_rate.c): settings, TX waits, RX drops. */
#ifndef VNETD_NET_RATE_H
#define VNETD_NET_RATE_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/rate_limit.h"

/*
 * vnet_dev_set_rate() and vnet_dev_rate() of the device's public API are defined in net_rate.c;
 * vnet_dev.h includes this header for them.
 */

struct vnet_dev;
struct vnet_queue;

/* The two directions a port limits: what the guest sends, and what it receives. */
enum vnet_rate_dir { VNET_RATE_TX, VNET_RATE_RX };

/*
 * vnet_dev_set_rate() - a new limit for one direction (mbit 0: none), in effect at once; the
 * bucket starts full. TX queues waiting for tokens run again.
 */
void vnet_dev_set_rate(struct vnet_dev *dev, enum vnet_rate_dir dir, const struct rate_params *p);

/* vnet_dev_rate() - the limit of one direction as in effect (values clamped to the maximum). */
const struct rate_params *vnet_dev_rate(const struct vnet_dev *dev, enum vnet_rate_dir dir);

/* ---- For the device model's own files ---- */

#endif
