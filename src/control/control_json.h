/* SPDX-License-Identifier: MIT */
/* control_json.h - the control socket's JSON helpers: replies, key checks, port lookup, values. */
#ifndef VNETD_CONTROL_JSON_H
#define VNETD_CONTROL_JSON_H

#include <stdint.h>

#include <jansson.h>

#include "port/port.h"
#include "dev/dev.h"

/* control_json_error() - {"ok": false, "error": <formatted message>}. */
json_t *control_json_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* control_json_ok() - {"ok": true}. */
json_t *control_json_ok(void);

/* control_json_check_keys() - NULL if every key of req is "cmd" or in allowed, else an error. */
json_t *control_json_check_keys(json_t *req, const char *cmd, const char *const *allowed);

/* control_json_find_port() - "port" as a name ("p0") or an index; NULL with *err set if none. */
struct port *control_json_find_port(struct port *const *ports, unsigned nports, json_t *v,
				    json_t **err);

/*
 * control_json_rss() - a port's RSS state (on/off, key in hex, indirection table, hash types),
 * read lock-free; JSON null unless RSS or HASH_REPORT was negotiated.
 */
json_t *control_json_rss(const struct vnet_dev *dev);

/* control_json_u64() - a counter as a JSON integer (signed 64-bit: clamped at LLONG_MAX). */
json_t *control_json_u64(uint64_t v);

/* control_json_string() - a JSON string even for invalid UTF-8 (bytes >= 0x80 become '?'). */
json_t *control_json_string(const char *text);

/* control_json_mac() - "xx:xx:xx:xx:xx:xx". */
json_t *control_json_mac(const uint8_t *m);

/* control_json_coal_modes() - the device's stall guard and adaptive modes into o (NULL: none). */
void control_json_coal_modes(json_t *o, const struct vnet_dev *dev);

#endif
