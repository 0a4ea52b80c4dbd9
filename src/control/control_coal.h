/* SPDX-License-Identifier: MIT */
/* control_coal.h - the control socket's coalescing commands: coalesce, stall-guard. */
#ifndef VNETD_CONTROL_COAL_H
#define VNETD_CONTROL_COAL_H

#include "control/control_cmd.h"

/* control_coal_coalesce() - "coalesce": host values per queue or kind, adaptive on/off. */
json_t *control_coal_coalesce(const struct control_call *call, json_t *req);

/* control_coal_stall_guard() - "stall-guard": the port's early-notification guard. */
json_t *control_coal_stall_guard(const struct control_call *call, json_t *req);

#endif
