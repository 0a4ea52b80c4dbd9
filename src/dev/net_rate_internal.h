/* SPDX-License-Identifier: MIT */
/* net_rate_internal.h - the device's rate limits inside the device model (net_rate.c): init, admits, refills. */
#ifndef VNETD_NET_RATE_INTERNAL_H
#define VNETD_NET_RATE_INTERNAL_H

#include "dev/net_rate.h"

/* net_rate_init() - a new device's buckets from its parameters (vnet_dev_create()). */
void net_rate_init(struct vnet_dev *dev);

/* net_rate_rx_admit() - RX limit on: may a frame of len bytes go to q? False: dropped, counted. */
bool net_rate_rx_admit(struct vnet_dev *dev, struct vnet_queue *q, uint64_t len);

/* net_rate_rx_refill() - RX limit on: refill the bucket once per round (vnet_dev_rx_flush()). */
void net_rate_rx_refill(struct vnet_dev *dev);

/*
 * net_rate_tx_admit() - TX limit on: may the chain of read_len bytes (header included) go now?
 * False: none may until q->rate_deadline_ns, for which the queue's timer is armed.
 */
bool net_rate_tx_admit(struct vnet_dev *dev, struct vnet_queue *q, uint64_t read_len);

/* net_rate_tx_refill() - TX limit on: refill the bucket at the start of a run. */
void net_rate_tx_refill(struct vnet_dev *dev);

#endif
