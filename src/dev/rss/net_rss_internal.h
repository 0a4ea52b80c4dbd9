/* SPDX-License-Identifier: MIT */
/* net_rss_internal.h - the RSS settings inside the device model (net_rss.c): set, restore, publish, limits. */
#ifndef VNETD_NET_RSS_INTERNAL_H
#define VNETD_NET_RSS_INTERNAL_H

#include "dev/rss/net_rss.h"

/* net_rss_features() - after a feature change: hash reporting follows HASH_REPORT. */
void net_rss_features(struct vnet_dev *dev);

/* net_rss_limits() - what the device's RSS settings may be (its config space). */
struct rss_limits net_rss_limits(const struct vnet_dev *dev);

/* net_rss_publish() - publish the RSS state (vnet_dev_rss_read()); net_rss.c calls it. */
void net_rss_publish(struct vnet_dev *dev);

/* net_rss_restore() - saved RSS settings checked (hostile), then in effect; 0 or -1. */
int net_rss_restore(struct vnet_dev *dev, const struct rss_config *c, bool steer,
		    const char **why);

/* net_rss_set() - RSS / hash settings into effect (NULL: off); steer: the table picks. */
void net_rss_set(struct vnet_dev *dev, const struct rss_config *c, bool steer);

#endif
