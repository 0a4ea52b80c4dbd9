/* SPDX-License-Identifier: MIT */
/* port_state_rss.h - the "rss" object of a --state-dir file: the driver's RSS settings. */
#ifndef VNETD_PORT_STATE_RSS_H
#define VNETD_PORT_STATE_RSS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "dev/dev.h"

/* What the driver set with RSS_CONFIG or HASH_CONFIG. Zero-initialise: compared whole. */
struct port_state_rss {
	bool present;  /* the file had "rss" (version 3); cfg.table_len 0: RSS was off */
	bool steer;    /* the table steered (an RSS_CONFIG with hash types) */
	struct rss_config cfg;
};

/*
 * port_state_rss_parse() - the "rss" value v (hostile: null, or exactly {steering, hash_types,
 * key, table, unclassified, max_tx_vq}) into *out, checked with rss_config_check() for a port
 * of `pairs` queue pairs. 0, or -1 with one line in err.
 */
int port_state_rss_parse(json_t *v, unsigned pairs, struct port_state_rss *out, char *err,
			 size_t err_len);

/* port_state_rss_format() - *rss as port_state_rss_parse() reads it (null when off); NULL: no memory. */
json_t *port_state_rss_format(const struct port_state_rss *rss);

/* port_state_rss_from() - *out (zeroed first) from the device's settings c and steering. */
void port_state_rss_from(struct port_state_rss *out, const struct rss_config *c, bool steer);

#endif
