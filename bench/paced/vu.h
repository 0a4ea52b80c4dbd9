/* SPDX-License-Identifier: MIT */
/* vu.h - a minimal vhost-user frontend for the paced driver: one device, RX and TX split rings. */
#ifndef PACED_VU_H
#define PACED_VU_H

#include <stdbool.h>
#include <stdint.h>

#include "vring.h"

/* Virtio and vhost-user feature bits the driver may take. */
#define VIRTIO_RING_F_EVENT_IDX 29
#define VHOST_USER_F_PROTOCOL_FEATURES 30
#define VIRTIO_F_VERSION_1 32
#define VU_PROTOCOL_F_REPLY_ACK 3

#define VNET_HDR_LEN 12		/* virtio_net_hdr_v1: VERSION_1 always has num_buffers */

/**
 * struct vu_dev - one frontend: its socket, its guest memory (a memfd it shares), its two queues.
 * @sock:	the connected vhost-user socket
 * @features:	what was acked by SET_FEATURES (PROTOCOL_FEATURES included when offered)
 * @reply_ack:	REPLY_ACK negotiated: every request without a reply of its own is acked
 * @mem:	guest memory (mapped here); @mem_size its length, @memfd its fd
 * @gpa:	guest-physical address of mem[0] (descriptor addresses)
 * @uva:	frontend user address of mem[0] (ring addresses: differ from @gpa on purpose)
 * @rx, @tx:	queue 0 (the device writes frames into it) and queue 1 (it reads them)
 * @name:	the socket path, for messages
 */
struct vu_dev {
	int sock;
	uint64_t features;
	bool reply_ack;
	uint8_t *mem;
	uint64_t mem_size;
	int memfd;
	uint64_t gpa, uva;
	struct vq rx, tx;
	const char *name;
};

/**
 * struct vu_opts - how to set a device up.
 * @server:	listen on the path and accept one connection (OVS dpdkvhostuserclient ports),
 *		instead of connecting to it (vnetd, DPDK's vhost PMD)
 * @event_idx:	take VIRTIO_RING_F_EVENT_IDX when offered
 * @num:	ring size (a power of two, up to 32768)
 * @buf_size:	bytes of each descriptor's buffer (virtio-net header + frame)
 * @timeout_ms:	for the connection and every reply
 */
struct vu_opts {
	bool server;
	bool event_idx;
	uint16_t num;
	uint32_t buf_size;
	int timeout_ms;
};

int vu_listen(const char *path);
int vu_open(struct vu_dev *d, const char *path, int listen_fd, const struct vu_opts *o);
void vu_close(struct vu_dev *d);

#endif
