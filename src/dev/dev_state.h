/* SPDX-License-Identifier: MIT */
/* dev_state.h - the device-state stream of a live migration, and the announce (dev_state.c). */
#ifndef VNETD_DEV_STATE_H
#define VNETD_DEV_STATE_H

#include <stddef.h>
#include <stdint.h>

struct vnet_dev;

/* dev_state_save() - vnet_dev_state_save(): serialise the device state into buf. */
size_t dev_state_save(const struct vnet_dev *dev, uint8_t *buf, size_t cap);

/* dev_state_load() - vnet_dev_state_load(): validate the whole stream, then apply it. */
int dev_state_load(struct vnet_dev *dev, const uint8_t *buf, size_t len, const char **why);

/* dev_state_send_rarp() - vnet_dev_send_rarp(): a broadcast RARP for mac through the backend. */
int dev_state_send_rarp(struct vnet_dev *dev, const uint8_t mac[6]);

#endif
