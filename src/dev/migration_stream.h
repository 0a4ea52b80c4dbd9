/* SPDX-License-Identifier: MIT */
/* migration_stream.h - the device-state stream of a live migration, and the announce (migration_stream.c). */
#ifndef VNETD_MIGRATION_STREAM_H
#define VNETD_MIGRATION_STREAM_H

#include <stddef.h>
#include <stdint.h>

struct vnet_dev;

#endif
