/* SPDX-License-Identifier: MIT */
/* control.h - the control plane's API: socket requests (one JSON line in, one out), metrics. */
#ifndef VNETD_CONTROL_H
#define VNETD_CONTROL_H

#include "control/control_cmd.h"
#include "port/port.h"

/*
 * control_execute() - run one request (a JSON object, no newline) and return the reply as
 * malloc'd compact JSON without a trailing newline; free() it. Never fails on bad input
 * (that gets an {"ok":false,...} reply); NULL only when out of memory.
 */
char *control_execute(struct port *const *ports, unsigned nports, const char *line);

/* control_set_port_ops() - enable port-add/port-del (struct control_port_ops, control_cmd.h). */
void control_set_port_ops(const struct control_port_ops *ops, void *ctx);

/* What the daemon does around a request that must not run beside the other workers. */
struct control_sync_ops {
	void (*enter)(void *ctx); /* park the other workers */
	void (*leave)(void *ctx); /* e.g. keep changed state for a restart, then let them go */
};

/*
 * control_set_sync_ops() - wrap every request except "stats" (which reads lock-free through
 * stats.c) in enter/leave. Without it requests run as they come (one thread).
 */
void control_set_sync_ops(const struct control_sync_ops *ops, void *ctx);

/* The rest of the folder's API: the socket's connections, the Prometheus endpoint. */
#include "control/control_client.h"
#include "control/metrics.h"

#endif
