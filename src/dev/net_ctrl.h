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

/* net_ctrl_execute() - vnet_dev_ctrl_execute(): run one control command. */
uint8_t net_ctrl_execute(struct vnet_dev *dev, const uint8_t *in, size_t in_len, uint8_t *out,
			 size_t out_len, size_t *out_written);

/* net_ctrl_restore_rx() - vnet_dev_restore_rx(): what CTRL_RX / CTRL_MAC set, put back. */
int net_ctrl_restore_rx(struct vnet_dev *dev, const struct vnet_rx_filter *f, const uint8_t *mac);

#endif
