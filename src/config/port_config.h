/* SPDX-License-Identifier: MIT */
/* port_config.h - a port as the command line describes it (struct port_config; types only). */
#ifndef VNETD_PORT_CONFIG_H
#define VNETD_PORT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/un.h>

#include "backend/switch/switch.h"
#include "dev/dev.h"

#define VNETD_MAX_PORTS 1024 /* fits ev_ref.port (16 bits) */
#define PORT_ALLOWED_MACS 8 /* allowed-macs= entries */
#define PORT_IPS 16 /* ips= entries */
#define PORT_SEGMENT_LEN 16 /* switch=NAME: 1..15 bytes */
#define PORT_MAX_TRUNK 8    /* trunk= VLANs of one tap port */

enum port_backend_kind { PORT_BACKEND_TAP, PORT_BACKEND_SWITCH, PORT_BACKEND_XDP };

/* A port as the command line describes it. */
struct port_config {
	char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	enum port_backend_kind backend;
	char tap_name[16];
	bool client;    /* vhost-user client: connect to socket_path (and reconnect) */
	bool mac_given; /* mac= was in the spec (else derived from index and socket) */
	int worker;     /* worker= (0..), or -1: the worker with the fewest ports */
	/* switch: queue-workers=A+B+...: queue pair i on worker queue_workers[i] (its home, the
	 * vhost-user connection and control queue, is worker 0); 0: the port on one worker */
	unsigned n_queue_workers;
	uint8_t queue_workers[VNET_MAX_QUEUE_PAIRS];
	uint64_t max_mem; /* max-mem=: guest memory the frontend may map (mem_cap.h); 0 default */
	unsigned max_mem_slots; /* max-mem-slots=: memory regions it may map (mem_cap.h); 0 default */
	bool no_device_state; /* migrate-state=off: DEVICE_STATE not offered (port state stays) */
	struct vnet_dev_params dev;
	unsigned max_macs;   /* switch: max-macs=, MACs the port may hold in the FDB (0: default) */
	unsigned learn_rate; /* switch: learn-rate=, new MACs a second (0: no limit) */
	/* switch: port security (zero: on, the port's MAC only; see docs/security.md) */
	bool psec_off;		 /* port-security=off */
	bool mac_change;	 /* mac-change=on: the MAC the driver sets instead of mac= */
	unsigned n_allowed_macs; /* allowed-macs=MAC+MAC... */
	uint8_t allowed_macs[PORT_ALLOWED_MACS][6];
	unsigned flood_rate; /* switch: flood-rate=, floods a second (0: no limit, the default) */
	unsigned n_ips; /* switch: ips=ADDR[/LEN]+...: IP anti-spoofing (0: none, the default) */
	struct switch_ip_net ips[PORT_IPS];
	char segment[PORT_SEGMENT_LEN]; /* switch=NAME: its L2 segment ("": plain switch, default) */
	/* the listener's ownership (port_sock.c); unset: --socket-group / --socket-mode */
	long sock_gid;	    /* group=: the socket's group, -1: the daemon's default */
	unsigned sock_mode; /* mode=: its permission bits (0..0777), 0: the daemon's default */
	uint16_t vlan; /* switch: vlan=N (1..4094), an access port of the segment's VLAN N; 0: none */
	/* tap: uplink=NAME,trunk=N+M: the tap carries segment NAME's VLANs N, M tagged */
	char uplink[PORT_SEGMENT_LEN]; /* "": the default segment */
	unsigned n_trunk;	       /* 0: not a trunk */
	uint16_t trunk[PORT_MAX_TRUNK];
	/* xdp=IFNAME,queue=N: AF_XDP sockets on NIC queues N.. (one per queue pair; xdp.h) */
	char xdp_name[16];
	unsigned xdp_queue;
};

#endif
