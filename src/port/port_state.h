/* SPDX-License-Identifier: MIT */
/* port_state.h - what a port keeps across vnetd restarts (--state-dir): coalescing, RX filter, MAC. */
#ifndef VNETD_PORT_STATE_H
#define VNETD_PORT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev/dev.h"
#include "port/port_state_ring.h"
#include "port/port_state_rss.h"

#define PORT_STATE_MAX (64 * 1024) /* larger state files are refused */

/* A guest's changes are written at most once per interval, the first of a burst after the
 * batch delay: a SIGKILL loses at most the last interval's changes. */
#define PORT_STATE_WRITE_INTERVAL_NS 1000000000ull
#define PORT_STATE_WRITE_BATCH_NS 100000000ull

/* The newest version written (4: with packed ring positions); versions 1 (coalescing only),
 * 2 (and the RX filter) and 3 (and RSS) are still read, and written when there is nothing
 * newer to keep. */
#define PORT_STATE_VERSION 4

/* RX mode bits of port_state_rx.mode: the VIRTIO_NET_CTRL_RX commands. */
enum {
	PORT_RX_PROMISC = 1,
	PORT_RX_ALLMULTI = 2,
	PORT_RX_ALLUNI = 4,
	PORT_RX_NOMULTI = 8,
	PORT_RX_NOUNI = 16,
	PORT_RX_NOBCAST = 32,
};

/* What the driver set over the control queue besides coalescing. Bytes only: no padding. */
struct port_state_rx {
	bool present;  /* the file had it (version 2) */
	uint8_t mode;  /* PORT_RX_* */
	bool mac_set;  /* the driver gave the port another MAC (CTRL_MAC_ADDR_SET): mac */
	uint8_t mac[6];
	bool uc_overflow, mc_overflow; /* its table was longer than VNET_MAC_TABLE_SIZE (n 0) */
	uint8_t n_uc, n_mc;            /* at most VNET_MAC_TABLE_SIZE; unused entries zero */
	uint8_t uc[VNET_MAC_TABLE_SIZE][6];
	uint8_t mc[VNET_MAC_TABLE_SIZE][6];
};

/*
 * Settings a frontend cannot resend after a restart: the coalescing parameters each queue used
 * and who set them (the host with vnetctl coalesce, or the guest's driver, which believes its
 * ethtool -C values still hold), the driver's receive filter, RX mode and MAC, and where
 * each packed queue stopped cleanly (the frontend may not know: port_state_ring.h).
 * Zero-initialise before filling: structs are compared whole.
 */
struct port_state {
	unsigned nqueues;
	struct {
		struct coal_params params;
		uint8_t setter; /* enum coal_setter */
	} q[VNET_MAX_QUEUES];
	struct port_state_rx rx;
	struct port_state_rss rss; /* version 3 */
	struct port_state_ring ring[VNET_MAX_QUEUES]; /* version 4; by queue index */
};

/*
 * port_state_rx_from() - *out from the device's filter f and its MAC mac; mac_set when that
 * differs from cfg_mac, the port's configured one. (out zeroed first.)
 */
void port_state_rx_from(struct port_state_rx *out, const struct vnet_rx_filter *f,
			const uint8_t mac[6], const uint8_t cfg_mac[6]);

/* port_state_rx_filter() - the device filter *in describes. */
void port_state_rx_filter(const struct port_state_rx *in, struct vnet_rx_filter *f);

/*
 * port_state_parse() - text[0..len) (hostile: any bytes) into *out, for a port on `socket`
 * (the file must name the same socket) with nqueues queues (more in the file: refused).
 * 0, or -1 with one line in err.
 */
int port_state_parse(const char *text, size_t len, const char *socket, unsigned nqueues,
		     struct port_state *out, char *err, size_t err_len);

/*
 * port_state_format() - *st as the JSON port_state_parse() reads (version 4 with a packed
 * position, 3 with st->rss.present, 2 with st->rx.present, else 1); malloc'd, NULL if no memory.
 */
char *port_state_format(const struct port_state *st, const char *socket);

/* port_state_file_name() - the file's name in the state directory: from a hash of socket. */
void port_state_file_name(const char *socket, char *name, size_t len);

/* port_state_load() - read and parse the port's file in dirfd; 0, 1 none there, -1 (err). */
int port_state_load(int dirfd, const char *socket, unsigned nqueues, struct port_state *out,
		    char *err, size_t err_len);

/*
 * port_state_save() - write the file: a new one (fsync'd) renamed over the old, then the
 * directory fsync'd; 0 or -1 (logged).
 */
int port_state_save(int dirfd, const char *socket, const struct port_state *st);

/*
 * port_state_write_at() - when (CLOCK_MONOTONIC ns) to write changes made at now_ns when the
 * last write attempt was at last_ns (0: none yet): at most one write per
 * PORT_STATE_WRITE_INTERVAL_NS, and never sooner than PORT_STATE_WRITE_BATCH_NS from now.
 */
uint64_t port_state_write_at(uint64_t now_ns, uint64_t last_ns);

#endif
