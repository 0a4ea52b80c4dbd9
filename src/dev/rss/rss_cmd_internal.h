/* SPDX-License-Identifier: MIT */
/* rss_cmd_internal.h - the RSS_CONFIG / HASH_CONFIG payload parser (rss_cmd.c), for the control queue. */
#ifndef VNETD_RSS_CMD_INTERNAL_H
#define VNETD_RSS_CMD_INTERNAL_H

#include "dev/rss/rss_cmd.h"

/*
 * rss_cmd_parse() - validate the payload p[0..len) of VIRTIO_NET_CTRL_MQ_RSS_CONFIG
 * (hash_config false) or VIRTIO_NET_CTRL_MQ_HASH_CONFIG (true) against lim, into *out. Strict:
 * no truncation, table length a power of two and at most max_table_len, queue numbers below
 * max_pairs, 1 <= max_tx_vq <= max_pairs, key at most max_key_len (none with hash types set;
 * bytes after it ignored, as QEMU),
 * no unsupported hash types, HASH_CONFIG's reserved fields zero. 0, or -1 with *why set and
 * *out untouched. Pure; any thread.
 */
int rss_cmd_parse(const uint8_t *p, size_t len, bool hash_config, const struct rss_limits *lim,
		  struct rss_config *out, const char **why);

#endif
