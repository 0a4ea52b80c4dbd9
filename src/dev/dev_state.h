/* SPDX-License-Identifier: MIT */
/* dev_state.h - the device-state stream of a live migration, and the announce (dev_state.c). */
#ifndef VNETD_DEV_STATE_H
#define VNETD_DEV_STATE_H

#include <stddef.h>
#include <stdint.h>

struct vnet_dev;

#endif
