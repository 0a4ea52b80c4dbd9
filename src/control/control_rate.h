/* SPDX-License-Identifier: MIT */
/* control_rate.h - the control socket's rate-limit command: rate. */
#ifndef VNETD_CONTROL_RATE_H
#define VNETD_CONTROL_RATE_H

#include "control/control_cmd.h"

/* control_rate_set() - "rate": a port's guest TX or RX limit (Mbit/s, burst KiB), or both shown. */
json_t *control_rate_set(const struct control_call *call, json_t *req);

#endif
