/* SPDX-License-Identifier: MIT */
/* control_cmd.h - what the control dispatcher (control.c) hands each command of a command file. */
#ifndef VNETD_CONTROL_CMD_H
#define VNETD_CONTROL_CMD_H

#include <stddef.h>

#include <jansson.h>

#include "port/port.h"

/* Run-time port changes the daemon makes for "port-add" / "port-del" requests. */
struct control_port_ops {
	/* Add a port from SPEC (as --port takes it); its name into name. 0, or -1 (err). */
	int (*add)(void *ctx, const char *spec, char *name, size_t name_len, char *err,
		   size_t err_len);
	/*
	 * Remove port p (it stays valid until the end of the event-loop round, so the ports
	 * array a request runs with never dangles). 0, or -1 (err).
	 */
	int (*del)(void *ctx, struct port *p, char *err, size_t err_len);
};

/* One request's context: the live ports, and the daemon's port ops (NULL: none). */
struct control_call {
	struct port *const *ports;
	unsigned nports;
	const struct control_port_ops *port_ops;
	void *port_ctx;
};

/*
 * A command: the reply to req (a JSON object with a string "cmd"), {"ok":false,...} on bad
 * input; NULL only when out of memory.
 */
typedef json_t *(*control_cmd_fn)(const struct control_call *call, json_t *req);

#endif
