/* SPDX-License-Identifier: MIT */
/* switch_test_stats.h - the switch unit tests' per-port counters, one at a time. */
#ifndef VNETD_SWITCH_TEST_STATS_H
#define VNETD_SWITCH_TEST_STATS_H

#include <stdint.h>

#include "backend/switch/switch.h"

/* switch_port_stats() one counter at a time: 0 forwarded, 1 flooded, 2 dropped. */
static inline uint64_t port_stat_of(const struct vnet_backend *be, int which)
{
	uint64_t v[3];

	switch_port_stats(be, &v[0], &v[1], &v[2]);
	return v[which];
}

/* The counters of a test port p (anything with a `be` member). */
#define forwarded(p) port_stat_of((p)->be, 0)
#define flooded(p) port_stat_of((p)->be, 1)
#define dropped(p) port_stat_of((p)->be, 2)

#endif
