/* SPDX-License-Identifier: MIT */
/* rss_cmd.c - RSS_CONFIG and HASH_CONFIG control commands: the pure, strict payload parser. */
#include "dev/rss/rss_cmd.h"

#include <string.h>

#include "lib/le_bytes.h"
#include "dev/rss/rss_cmd_internal.h"

/*
 * struct virtio_net_rss_config (VIRTIO 1.3 "Receive-side scaling"), N = mask + 1:
 *   le32 hash_types @0, le16 indirection_table_mask @4, le16 unclassified_queue @6,
 *   le16 indirection_table[N] @8, le16 max_tx_vq @8+2N, u8 hash_key_length @10+2N,
 *   u8 hash_key_data[] @11+2N.
 * struct virtio_net_hash_config: le32 hash_types @0, le16 reserved[4] @4, u8 hash_key_length
 *   @12, u8 hash_key_data[] @13.
 */

static int fail(const char **why, const char *msg)
{
	*why = msg;
	return -1;
}

/* The hash types and key at p (types) and p + key_at (length, then the key), checked. */
static int parse_key(const uint8_t *p, size_t len, size_t key_at, const struct rss_limits *lim,
		     struct rss_config *c, const char **why)
{
	c->hash_types = le_get32(p);
	if (c->hash_types & ~lim->supported)
		return fail(why, "unsupported hash types");
	if (len < key_at + 1)
		return fail(why, "truncated before the key length");
	c->key_len = p[key_at];
	if (c->key_len > lim->max_key_len || c->key_len > RSS_KEY_MAX)
		return fail(why, "key longer than rss_max_key_size");
	/* Bytes after the key are ignored, as QEMU does: Linux 7.2 sends one more. */
	if (len < key_at + 1 + c->key_len)
		return fail(why, "truncated in the key");
	if (!c->key_len && c->hash_types)
		return fail(why, "hash types without a key");
	memcpy(c->key, p + key_at + 1, c->key_len);
	return 0;
}

/**
 * rss_cmd_parse() - validate an RSS_CONFIG or HASH_CONFIG payload
 * @p: the payload (after class and command)
 * @len: its bytes
 * @hash_config: HASH_CONFIG (else RSS_CONFIG)
 * @lim: what the device allows
 * @out: the settings, written only on success
 * @why: on failure, what was wrong (a constant string)
 *
 * Hostile input: every length and value is checked before anything is stored. HASH_CONFIG
 * yields a one-entry table naming queue 0 and max_tx_vq 0. Pure; any thread.
 * Return: 0, or -1 (nothing written to @out).
 */
int rss_cmd_parse(const uint8_t *p, size_t len, bool hash_config, const struct rss_limits *lim,
		  struct rss_config *out, const char **why)
{
	struct rss_config c;
	size_t n, tail;

	memset(&c, 0, sizeof(c));
	if (hash_config) {
		if (len < 13)
			return fail(why, "HASH_CONFIG shorter than 13 bytes");
		for (size_t i = 4; i < 12; i++)
			if (p[i])
				return fail(why, "HASH_CONFIG reserved fields not zero");
		if (parse_key(p, len, 12, lim, &c, why) < 0)
			return -1;
		c.table_len = 1;
		*out = c;
		return 0;
	}
	if (len < 8)
		return fail(why, "RSS_CONFIG shorter than 8 bytes");
	n = (size_t)le_get16(p + 4) + 1;
	if (n & (n - 1))
		return fail(why, "indirection table length not a power of two");
	if (n > lim->max_table_len || n > RSS_TABLE_MAX)
		return fail(why, "indirection table longer than the maximum");
	c.table_len = (uint16_t)n;
	c.unclassified = le_get16(p + 6);
	if (c.unclassified >= lim->max_pairs)
		return fail(why, "unclassified queue out of range");
	tail = 8 + 2 * n;
	if (len < tail + 3)
		return fail(why, "truncated in the indirection table");
	for (size_t i = 0; i < n; i++) {
		c.table[i] = le_get16(p + 8 + 2 * i);
		if (c.table[i] >= lim->max_pairs)
			return fail(why, "indirection table names a queue out of range");
	}
	c.max_tx_vq = le_get16(p + tail);
	if (c.max_tx_vq < 1 || c.max_tx_vq > lim->max_pairs)
		return fail(why, "max_tx_vq out of range");
	if (parse_key(p, len, tail + 2, lim, &c, why) < 0)
		return -1;
	*out = c;
	return 0;
}

/**
 * rss_config_check() - validate settings saved elsewhere (a migration stream, a state file)
 * @c: the settings, as rss_cmd_parse() or net_rss_set(NULL) could have left them
 * @steer: whether they are said to steer (an RSS_CONFIG with hash types)
 * @lim: what the device allows
 * @why: on failure, what was wrong (a constant string)
 *
 * Hostile input. table_len 0 means no settings: every field zero. Otherwise what the parser
 * accepts: a power-of-two table of at most the maximum naming queues below max_pairs, the
 * unclassified queue too, supported hash types (none without a key), a key of at most
 * max_key_len; max_tx_vq 1..max_pairs after an RSS_CONFIG, or 0 with the one-entry table a
 * HASH_CONFIG leaves. Steering needs an RSS_CONFIG with hash types. Table entries past
 * table_len and key bytes past key_len must be zero (one encoding per state). Pure.
 * Return: 0, or -1 with @why set.
 */
int rss_config_check(const struct rss_config *c, bool steer, const struct rss_limits *lim,
		     const char **why)
{
	size_t n = c->table_len;

	if (!n) {
		if (c->hash_types || c->unclassified || c->max_tx_vq || c->key_len || steer)
			return fail(why, "RSS settings without an indirection table");
	} else {
		if (n & (n - 1))
			return fail(why, "indirection table length not a power of two");
		if (n > lim->max_table_len || n > RSS_TABLE_MAX)
			return fail(why, "indirection table longer than the maximum");
		if (c->hash_types & ~lim->supported)
			return fail(why, "unsupported hash types");
		if (c->key_len > lim->max_key_len || c->key_len > RSS_KEY_MAX)
			return fail(why, "key longer than rss_max_key_size");
		if (!c->key_len && c->hash_types)
			return fail(why, "hash types without a key");
		if (c->unclassified >= lim->max_pairs)
			return fail(why, "unclassified queue out of range");
		for (size_t i = 0; i < n; i++)
			if (c->table[i] >= lim->max_pairs)
				return fail(why, "indirection table names a queue out of range");
		if (c->max_tx_vq > lim->max_pairs)
			return fail(why, "max_tx_vq out of range");
		if (!c->max_tx_vq && (n != 1 || c->table[0] || c->unclassified || steer))
			return fail(why, "HASH_CONFIG settings with a table");
		if (steer && !c->hash_types)
			return fail(why, "steering without hash types");
	}
	for (size_t i = n; i < RSS_TABLE_MAX; i++)
		if (c->table[i])
			return fail(why, "indirection table entries past its length");
	for (size_t i = c->key_len; i < RSS_KEY_MAX; i++)
		if (c->key[i])
			return fail(why, "key bytes past its length");
	return 0;
}
