/* SPDX-License-Identifier: MIT */
/* net_rss.h - the device's RSS and hash settings: in effect, restored (hostile), read back. */
#ifndef VNETD_NET_RSS_H
#define VNETD_NET_RSS_H

#include <stdbool.h>

#include "dev/rss/rss_cmd.h"

struct vnet_dev;

/*
 * Inside the device model: net_ctrl.c (the commands), migration_stream.c (migration), vnet_dev.c
 * (reset, features). vnet_dev_rss() and vnet_dev_restore_rss() of the device's public API
 * are defined in net_rss.c; vnet_dev.h includes this header for them.
 */

/*
 * vnet_dev_rss_read() - vnet_dev_rss() and the negotiated RSS features, from any thread
 * without a lock (a seqcount copy): what vnetctl stats and the metrics read while the workers
 * run.
 */
void vnet_dev_rss_read(const struct vnet_dev *dev, struct rss_view *out);

/* vnet_dev_rss() - the driver's RSS / hash settings; whether they steer and are reported. */
const struct rss_config *vnet_dev_rss(const struct vnet_dev *dev, bool *steering, bool *reporting);

/*
 * vnet_dev_restore_rss() - RSS settings kept by a state file (hostile: checked), in effect
 * again once the features are negotiated; an RSS_CONFIG's max_tx_vq back as the active pairs.
 * 0, or -1 with *why set and nothing changed.
 */
int vnet_dev_restore_rss(struct vnet_dev *dev, const struct rss_config *c, bool steer,
			 const char **why);

#endif
