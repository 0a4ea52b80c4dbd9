/* control_internal.h - what the control socket's command files share (control.c, control_coal.c). */
#ifndef VNETD_CONTROL_INTERNAL_H
#define VNETD_CONTROL_INTERNAL_H

#include <jansson.h>

#include "control.h"

/* ctl_error_reply() - {"ok": false, "error": <formatted message>}. */
json_t *ctl_error_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ctl_ok_reply() - {"ok": true}. */
json_t *ctl_ok_reply(void);

/* ctl_check_keys() - every key of req is "cmd" or one of allowed (NULL-ended); else an error reply. */
json_t *ctl_check_keys(json_t *req, const char *cmd, const char *const *allowed);

/* ctl_find_port() - "port" as a name ("p0") or an index; NULL with *err set if there is none. */
struct port *ctl_find_port(struct port *const *ports, unsigned nports, json_t *v, json_t **err);

/* cmd_coalesce() - "coalesce": host values per queue or kind, adaptive on/off (control_coal.c). */
json_t *cmd_coalesce(struct port *const *ports, unsigned nports, json_t *req);

/* cmd_stall_guard() - "stall-guard": the port's early-notification guard (control_coal.c). */
json_t *cmd_stall_guard(struct port *const *ports, unsigned nports, json_t *req);

#endif
