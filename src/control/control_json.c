/* SPDX-License-Identifier: MIT */
/* control_json.c - the control socket's JSON helpers: replies, key checks, port lookup, values. */
#include "control/control_json.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/**
 * control_json_u64() - a counter as a JSON integer.
 * @v: the counter.
 *
 * Counters are uint64_t; JSON integers here are signed 64-bit, so v is clamped at LLONG_MAX.
 *
 * Return: a new reference, NULL if out of memory.
 */
json_t *control_json_u64(uint64_t v)
{
	return json_integer(v > (uint64_t)LLONG_MAX ? LLONG_MAX : (json_int_t)v);
}

/**
 * control_json_string() - a JSON string even for invalid UTF-8 (paths, truncated messages).
 * @text: NUL-terminated bytes.
 *
 * Return: a new reference: text itself when it is valid UTF-8, else a copy whose bytes >= 0x80
 * are '?'; NULL if out of memory.
 */
json_t *control_json_string(const char *text)
{
	json_t *s = json_string(text);
	char *copy, *p;

	if (s || !(copy = strdup(text)))
		return s;
	for (p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	s = json_string(copy);
	free(copy);
	return s;
}

/**
 * control_json_mac() - a MAC address as "xx:xx:xx:xx:xx:xx".
 * @m: 6 bytes.
 *
 * Return: a new reference, NULL if out of memory.
 */
json_t *control_json_mac(const uint8_t *m)
{
	char mac[18];

	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
		 m[5]);
	return json_string(mac);
}

/**
 * control_json_error() - an error reply.
 * @fmt: printf format of the message (cut at 511 bytes; invalid UTF-8 becomes '?').
 *
 * Return: a new {"ok": false, "error": message} object, NULL if out of memory.
 */
json_t *control_json_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:b,s:o}", "ok", 0, "error", control_json_string(msg));
}

/**
 * control_json_ok() - the reply of a command that only succeeded.
 *
 * Return: a new {"ok": true} object, NULL if out of memory.
 */
json_t *control_json_ok(void)
{
	return json_pack("{s:b}", "ok", 1);
}

/**
 * control_json_check_keys() - reject a request key the command does not know.
 * @req: the request object.
 * @cmd: the command's name, for the message.
 * @allowed: the keys besides "cmd", NULL-ended.
 *
 * Return: NULL when every key is known, else an error reply naming the first unknown one.
 */
json_t *control_json_check_keys(json_t *req, const char *cmd, const char *const *allowed)
{
	const char *key;
	const char *const *a;
	json_t *v;

	json_object_foreach(req, key, v) {
		if (strcmp(key, "cmd") == 0)
			continue;
		for (a = allowed; *a && strcmp(*a, key) != 0; a++)
			;
		if (!*a)
			return control_json_error("unknown key '%.64s' for cmd '%s'", key, cmd);
	}
	return NULL;
}

/**
 * control_json_find_port() - the port a request's "port" value names.
 * @ports: the live ports, @nports of them.
 * @nports: how many.
 * @v: the value: a port name ("p0") or a port index (NULL: neither).
 * @err: set to an error reply when there is no such port.
 *
 * Return: the port, or NULL (*err set).
 */
struct port *control_json_find_port(struct port *const *ports, unsigned nports, json_t *v,
				    json_t **err)
{
	unsigned i;

	if (json_is_string(v)) {
		for (i = 0; i < nports; i++)
			if (strcmp(port_name(ports[i]), json_string_value(v)) == 0)
				return ports[i];
		*err = control_json_error("no port named '%.64s'", json_string_value(v));
		return NULL;
	}
	if (json_is_integer(v)) {
		for (i = 0; i < nports; i++)
			if ((json_int_t)port_index(ports[i]) == json_integer_value(v))
				return ports[i];
		*err = control_json_error("no port with index %" JSON_INTEGER_FORMAT,
					  json_integer_value(v));
		return NULL;
	}
	*err = control_json_error("\"port\" must be a port name or index");
	return NULL;
}

/**
 * control_json_coal_modes() - a port's coalescing modes, as "ports" and "stats" show them.
 * @o: the port's object (NULL: nothing is done).
 * @dev: the port's device.
 *
 * Adds stall_guard, stall_bytes, stall_idle_usecs, rx_adaptive and tx_adaptive to o.
 */
void control_json_coal_modes(json_t *o, const struct vnet_dev *dev)
{
	const struct vnet_stall_guard *g = vnet_dev_stall_guard(dev);

	if (!o)
		return;
	json_object_set_new(o, "stall_guard", json_boolean(g->on));
	json_object_set_new(o, "stall_bytes", control_json_u64(g->bytes));
	json_object_set_new(o, "stall_idle_usecs", control_json_u64(g->idle_usecs));
	json_object_set_new(o, "rx_adaptive",
			    json_boolean(vnet_dev_adaptive_mode(dev, VNET_QUEUE_RX)));
	json_object_set_new(o, "tx_adaptive",
			    json_boolean(vnet_dev_adaptive_mode(dev, VNET_QUEUE_TX)));
}

/**
 * control_json_rss() - a port's RSS and hash reporting state, as "ports" and "stats" show it.
 * @dev: the port's device (read lock-free: vnet_dev_rss_read(), safe while its worker runs)
 *
 * Return: null unless VIRTIO_NET_F_RSS or HASH_REPORT was negotiated; else {rss, hash_report,
 * steering, reporting, hash_types, key (hex), indirection_table, unclassified_queue}.
 */
json_t *control_json_rss(const struct vnet_dev *dev)
{
	static const char *const type_names[] = {"ipv4", "tcpv4", "udpv4", "ipv6", "tcpv6",
						 "udpv6", "ip_ex", "tcp_ex", "udp_ex"};
	struct rss_view v;
	const struct rss_config *c = &v.cfg;
	json_t *types, *table;
	char key[2 * RSS_KEY_MAX + 1];
	unsigned klen;

	vnet_dev_rss_read(dev, &v);
	if (!v.rss && !v.hash_report)
		return json_null();
	types = json_array();
	table = json_array();
	for (unsigned i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (c->hash_types & (1u << i))
			json_array_append_new(types, json_string(type_names[i]));
	for (unsigned i = 0; i < c->table_len && i < RSS_TABLE_MAX; i++)
		json_array_append_new(table, json_integer(c->table[i]));
	klen = c->key_len < RSS_KEY_MAX ? c->key_len : RSS_KEY_MAX;
	for (unsigned i = 0; i < klen; i++)
		snprintf(key + 2 * i, 3, "%02x", c->key[i]);
	key[2 * klen] = '\0';
	return json_pack("{s:b,s:b,s:b,s:b,s:o,s:s,s:o,s:i}", "rss", v.rss, "hash_report",
			 v.hash_report, "steering", v.steering, "reporting", v.reporting,
			 "hash_types", types, "key", key, "indirection_table", table,
			 "unclassified_queue", (int)c->unclassified);
}
