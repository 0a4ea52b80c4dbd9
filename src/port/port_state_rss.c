/* SPDX-License-Identifier: MIT */
/* port_state_rss.c - the "rss" object of a --state-dir file: the driver's RSS settings. */
/*
 *   "rss": null  (RSS off)
 *   "rss": {"steering":true,"hash_types":7,"key":"6d5a...fa","table":[0,1,1,1],
 *           "unclassified":0,"max_tx_vq":2}
 * key: lowercase or uppercase hex, 0..40 bytes; table: 1..128 entries, a power of two; the
 * same checks as a migration stream's (rss_config_check()).
 */
#include "port/port_state_rss.h"

#include <stdio.h>
#include <string.h>

#include "lib/err_msg.h"
#include "lib/hex_text.h"

/* A JSON integer in [0, max], or false. */
static bool get_uint(json_t *v, json_int_t max, uint32_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
		return false;
	*out = (uint32_t)json_integer_value(v);
	return true;
}

/* The key: an even number of hex digits, at most RSS_KEY_MAX bytes. */
static bool get_key(json_t *v, struct rss_config *c)
{
	const char *s = json_string_value(v);
	size_t n = s ? json_string_length(v) : 0;

	if (!s || n % 2 || n > 2 * RSS_KEY_MAX)
		return false;
	for (size_t i = 0; i < n / 2; i++) {
		int b = hex_byte(s + 2 * i);

		if (b < 0)
			return false;
		c->key[i] = (uint8_t)b;
	}
	c->key_len = (uint8_t)(n / 2);
	return true;
}

/**
 * port_state_rss_parse() - a state file's "rss" value into what it keeps.
 * @v: the value (hostile: any JSON)
 * @pairs: the port's queue pairs: queue numbers must be below
 * @out: zeroed, then filled (present set)
 * @err: one line on failure
 * @err_len: its size
 *
 * Return: 0, or -1 (err set; @out zeroed).
 */
int port_state_rss_parse(json_t *v, unsigned pairs, struct port_state_rss *out, char *err,
			 size_t err_len)
{
	const struct rss_limits lim = {
	    .max_pairs = (uint16_t)pairs,
	    .max_table_len = RSS_TABLE_MAX,
	    .max_key_len = RSS_KEY_MAX,
	    .supported = RSS_HASH_TYPES_SUPPORTED,
	};
	struct rss_config *c = &out->cfg;
	json_t *steer = json_object_get(v, "steering"), *table = json_object_get(v, "table"), *e;
	uint32_t types, uncl, max_tx;
	const char *why;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (json_is_null(v)) {
		out->present = true;
		return 0;
	}
	if (!json_is_object(v) || json_object_size(v) != 6 || !json_is_boolean(steer) ||
	    !get_uint(json_object_get(v, "hash_types"), UINT32_MAX, &types) ||
	    !get_uint(json_object_get(v, "unclassified"), UINT16_MAX, &uncl) ||
	    !get_uint(json_object_get(v, "max_tx_vq"), UINT16_MAX, &max_tx) ||
	    !json_is_array(table) || json_array_size(table) > RSS_TABLE_MAX ||
	    !get_key(json_object_get(v, "key"), c)) {
		memset(out, 0, sizeof(*out));
		return err_msg(err, err_len, "\"rss\" must be null or {steering, hash_types, key, "
			       "table, unclassified, max_tx_vq} (key: at most %d bytes in hex, "
			       "table: at most %d queue numbers)", RSS_KEY_MAX, RSS_TABLE_MAX);
	}
	json_array_foreach(table, i, e) {
		uint32_t q;

		if (!get_uint(e, UINT16_MAX, &q)) {
			memset(out, 0, sizeof(*out));
			return err_msg(err, err_len, "rss table entry %zu: not a queue number", i);
		}
		c->table[i] = (uint16_t)q;
	}
	c->table_len = (uint16_t)json_array_size(table);
	c->hash_types = types;
	c->unclassified = (uint16_t)uncl;
	c->max_tx_vq = (uint16_t)max_tx;
	out->steer = json_is_true(steer);
	why = "an empty table";
	if (!c->table_len || rss_config_check(c, out->steer, &lim, &why) < 0) {
		memset(out, 0, sizeof(*out));
		return err_msg(err, err_len, "rss: %s", why);
	}
	out->present = true;
	return 0;
}

/**
 * port_state_rss_format() - what port_state_rss_parse() reads.
 * @rss: the settings (null in the file when cfg.table_len is 0)
 *
 * Return: a new reference, or NULL if out of memory.
 */
json_t *port_state_rss_format(const struct port_state_rss *rss)
{
	const struct rss_config *c = &rss->cfg;
	char key[2 * RSS_KEY_MAX + 1];
	json_t *table;
	unsigned nk = c->key_len <= RSS_KEY_MAX ? c->key_len : RSS_KEY_MAX;

	if (!c->table_len)
		return json_null();
	table = json_array();
	for (unsigned i = 0; i < c->table_len && i < RSS_TABLE_MAX && table; i++)
		json_array_append_new(table, json_integer(c->table[i]));
	for (unsigned i = 0; i < nk; i++)
		snprintf(key + 2 * i, 3, "%02x", c->key[i]);
	key[2 * nk] = '\0';
	return json_pack("{s:b,s:I,s:s,s:o,s:i,s:i}", "steering", rss->steer, "hash_types",
			 (json_int_t)c->hash_types, "key", key, "table", table, "unclassified",
			 (int)c->unclassified, "max_tx_vq", (int)c->max_tx_vq);
}

/**
 * port_state_rss_from() - what a state file keeps of a device's RSS settings.
 * @out: zeroed, then filled (present set)
 * @c: the device's settings (vnet_dev_rss())
 * @steer: whether they steer
 */
void port_state_rss_from(struct port_state_rss *out, const struct rss_config *c, bool steer)
{
	memset(out, 0, sizeof(*out));
	out->present = true;
	if (!c->table_len)
		return;
	memcpy(&out->cfg, c, sizeof(*c));
	out->steer = steer;
}
