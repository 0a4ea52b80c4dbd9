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
struct rss_config;

/* net_ctrl_process() - execute pending control commands, at most VNET_BUDGET_CTRL; true: more. */
bool net_ctrl_process(struct vnet_dev *dev, struct vnet_queue *q);

/* net_ctrl_execute() - vnet_dev_ctrl_execute(): run one control command. */
uint8_t net_ctrl_execute(struct vnet_dev *dev, const uint8_t *in, size_t in_len, uint8_t *out,
			 size_t out_len, size_t *out_written);

/* net_ctrl_restore_rx() - vnet_dev_restore_rx(): what CTRL_RX / CTRL_MAC set, put back. */
int net_ctrl_restore_rx(struct vnet_dev *dev, const struct vnet_rx_filter *f, const uint8_t *mac);

/* net_ctrl_rss_set() - RSS / hash settings into effect (NULL: off); steer: the table picks. */
void net_ctrl_rss_set(struct vnet_dev *dev, const struct rss_config *c, bool steer);

/* net_ctrl_rss_restore() - saved RSS settings checked (hostile), then in effect; 0 or -1. */
int net_ctrl_rss_restore(struct vnet_dev *dev, const struct rss_config *c, bool steer,
			 const char **why);

/* net_ctrl_rss_features() - after a feature change: hash reporting follows HASH_REPORT. */
void net_ctrl_rss_features(struct vnet_dev *dev);

#endif
