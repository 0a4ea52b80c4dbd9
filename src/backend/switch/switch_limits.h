/* SPDX-License-Identifier: MIT */
/* switch_limits.h - the switch's sizes and default limits, shared by switch.c and switch_fdb.c. */
#ifndef VNETD_SWITCH_LIMITS_H
#define VNETD_SWITCH_LIMITS_H

#define SWITCH_MAX_PORTS 1024
#define SWITCH_FDB_SIZE 4096	      /* learned MAC addresses, all ports together */
#define SWITCH_FDB_PORT_MAX 256	      /* MACs one port may hold in the FDB (max-macs=) */
#define SWITCH_LEARN_RATE 100	      /* new MACs one port may teach a second (learn-rate=) */
#define SWITCH_LEARN_RATE_MAX 1000000 /* learn-rate= at most (0: no limit) */
#define SWITCH_FDB_AGE_SEC 300	      /* a MAC not seen as a source for this long is forgotten */
#define SWITCH_QUEUE_PACKETS 256      /* packets waiting for one port's guest RX buffers */
#define SWITCH_QUEUE_BYTES (4u << 20) /* ... and their bytes */
#define SWITCH_MAX_FRAME (65536 + 18) /* the largest frame a port takes: the device's (a 64 KB
				       * GSO frame: Ethernet header, a VLAN tag) */
#define SWITCH_MAX_PAIRS 16	      /* queue pairs of one port (VNET_MAX_QUEUE_PAIRS) */
#define SWITCH_MAX_WORKERS 16	      /* threads the switch's ports may be spread over */
#define SWITCH_ALLOWED_MACS 8	      /* allowed-macs= beside the port's own MAC */
#define SWITCH_IPS 16		      /* ips= entries of one port */
#define SWITCH_FLOOD_RATE_MAX 10000000 /* flood-rate= at most, frames a second (0: no limit) */

#endif
