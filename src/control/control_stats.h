/* SPDX-License-Identifier: MIT */
/* control_stats.h - the control socket's counter commands: stats, reset-stats. */
#ifndef VNETD_CONTROL_STATS_H
#define VNETD_CONTROL_STATS_H

#include "control/control_cmd.h"

/* control_stats_get() - "stats": every port's (or one port's) queue counters, lock-free. */
json_t *control_stats_get(const struct control_call *call, json_t *req);

/* control_stats_reset() - "reset-stats": zero the queue counters of every port or one. */
json_t *control_stats_reset(const struct control_call *call, json_t *req);

#endif
