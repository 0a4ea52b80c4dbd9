/* SPDX-License-Identifier: MIT */
/* rss_cmd.h - RSS_CONFIG and HASH_CONFIG control commands: the pure, strict payload parser. */
#ifndef VNETD_RSS_CMD_H
#define VNETD_RSS_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev/rss/toeplitz.h"

#define RSS_TABLE_MAX 128 /* rss_max_indirection_table_length we advertise */
#define RSS_KEY_MAX TOEPLITZ_KEY_MAX

/* The hash types vnetd supports: IPv4 and IPv6, alone or with TCP/UDP ports (no _EX). */
#define RSS_HASH_TYPES_SUPPORTED 0x3fu

/* What the device allows (from its configuration and negotiated features). */
struct rss_limits {
	uint16_t max_pairs;     /* max_virtqueue_pairs: queue numbers must be below */
	uint16_t max_table_len; /* rss_max_indirection_table_length (a power of two) */
	uint8_t max_key_len;    /* rss_max_key_size */
	uint32_t supported;     /* supported_hash_types */
};

/* One command's settings, as the driver sent them (after validation). */
struct rss_config {
	uint32_t hash_types;  /* 0: hashing (and RSS) off */
	uint16_t table_len;   /* entries of table: a power of two; 1 for HASH_CONFIG */
	uint16_t unclassified; /* RX queue of packets without a hash */
	uint16_t max_tx_vq;   /* RSS_CONFIG: queue pairs in use (1..max_pairs); HASH_CONFIG: 0 */
	uint8_t key_len;
	uint8_t key[RSS_KEY_MAX];
	uint16_t table[RSS_TABLE_MAX]; /* 0-based RX queue numbers */
};

/* The RSS state as readers on other threads see it (vnet_dev_rss_read(): one consistent copy). */
struct rss_view {
	bool rss;	  /* VIRTIO_NET_F_RSS negotiated */
	bool hash_report; /* VIRTIO_NET_F_HASH_REPORT negotiated */
	bool steering;	  /* the indirection table picks the RX queue */
	bool reporting;	  /* the header carries the hash */
	struct rss_config cfg;
};

/* 64-bit words struct rss_view is published in (a seqcount, net_ctrl.c). */
#define RSS_VIEW_WORDS ((sizeof(struct rss_view) + 7) / 8)

/*
 * rss_config_check() - settings saved in a migration stream or a state file (hostile), as the
 * parser or a switch-off (table_len 0, all zero) leaves them, checked against lim; steer: they
 * are said to steer. 0, or -1 with *why set. Pure.
 */
int rss_config_check(const struct rss_config *c, bool steer, const struct rss_limits *lim,
		     const char **why);

#endif
