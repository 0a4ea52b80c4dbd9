/* SPDX-License-Identifier: MIT */
/* net_tx.h - the transmit path's entry point (net_tx.c). */
#ifndef VNETD_NET_TX_H
#define VNETD_NET_TX_H

#include <stdbool.h>

struct vnet_dev;
struct vnet_queue;

/*
 * net_tx_process() - move the driver's TX chains to the backend (kick, timer or resume), at most
 * one budget (VNET_BUDGET_PACKETS / _BYTES). True: stopped at the budget with chains left, or
 * polls (poll mode: kicks stay off, q->polling).
 */
bool net_tx_process(struct vnet_dev *dev, struct vnet_queue *q);

#endif
