/* SPDX-License-Identifier: MIT */
/* net_ctrl.h - the control virtqueue's entry points (net_ctrl.c). */
#ifndef VNETD_NET_CTRL_H
#define VNETD_NET_CTRL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vnet_dev;
struct vnet_queue;
struct vnet_rx_filter;

/* net_ctrl_process() - execute pending control commands, at most VNET_BUDGET_CTRL; true: more. */
bool net_ctrl_process(struct vnet_dev *dev, struct vnet_queue *q);

#endif
