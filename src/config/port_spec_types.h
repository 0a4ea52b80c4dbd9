/* SPDX-License-Identifier: MIT */
/* port_spec_types.h - a port spec's keys and the parse state of one spec (types only). */
#ifndef VNETD_PORT_SPEC_TYPES_H
#define VNETD_PORT_SPEC_TYPES_H

/*
 * Shared by port_spec.c (a spec: its items, required keys and conflicts) and port_spec_keys.c
 * (each key=value). To the rest of vnetd a spec is a string and a struct port_config (port_spec.h).
 */

#include <stdbool.h>
#include <stddef.h>

enum port_key {
	K_SOCKET,
	K_TAP,
	K_SWITCH,
	K_MAC,
	K_QUEUES,
	K_MTU,
	K_NOTF_COAL,
	K_VQ_NOTF_COAL,
	K_TX_MODE,
	K_TX_TIMER_USECS,
	K_RX_USECS,
	K_RX_FRAMES,
	K_TX_USECS,
	K_TX_FRAMES,
	K_OFFLOADS,
	K_EVENT_IDX,
	K_INDIRECT,
	K_MRG_RXBUF,
	K_PACKED,
	K_IN_ORDER,
	K_COAL_PERSIST,
	K_CLIENT,
	K_STALL_GUARD,
	K_STALL_BYTES,
	K_STALL_IDLE_USECS,
	K_RX_ADAPTIVE,
	K_TX_ADAPTIVE,
	K_RSS,
	K_WORKER,
	K_MAX_MEM,
	K_MAX_MEM_SLOTS,
	K_MIGRATE_STATE,
	K_MAX_MACS,
	K_LEARN_RATE,
	K_PORT_SECURITY,
	K_MAC_CHANGE,
	K_ALLOWED_MACS,
	/* Rate limits (net_rate.h). */
	K_TX_RATE,
	K_TX_BURST,
	K_RX_RATE,
	K_RX_BURST,
	K_FLOOD_RATE,
	K_GROUP,
	K_MODE,
	K_IPS,
	K_VLAN,
	K_UPLINK,
	K_TRUNK,
	K_XDP,
	K_XDP_QUEUE,
	K_QUEUE_WORKERS,
	K_COUNT,
};

/* Per-port parse state that does not end up in struct port_config as is. */
struct port_parse {
	bool seen[K_COUNT];
	bool mac_given;
	bool notf_coal, vq_notf_coal, offloads, event_idx, indirect, mrg_rxbuf, coal_persist;
	bool packed, in_order;
	char *err; /* the one error line */
	size_t err_len;
};

#endif /* VNETD_PORT_SPEC_TYPES_H */
