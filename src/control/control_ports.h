/* SPDX-License-Identifier: MIT */
/* control_ports.h - the control socket's port commands: ports, port-add, port-del. */
#ifndef VNETD_CONTROL_PORTS_H
#define VNETD_CONTROL_PORTS_H

#include "control/control_cmd.h"

/* control_ports_list() - "ports": every port's configuration, state, filters and worker. */
json_t *control_ports_list(const struct control_call *call, json_t *req);

/* control_ports_add() - "port-add": a port from a --port SPEC, through call->port_ops. */
json_t *control_ports_add(const struct control_call *call, json_t *req);

/* control_ports_del() - "port-del": remove a port, through call->port_ops. */
json_t *control_ports_del(const struct control_call *call, json_t *req);

#endif
