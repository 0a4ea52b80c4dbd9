/* SPDX-License-Identifier: MIT */
/* tap_internal.h - the tap backend's private types: the tap and its queues (tap.c, tap_queues.c). */
#ifndef VNETD_TAP_INTERNAL_H
#define VNETD_TAP_INTERNAL_H

#include <assert.h>
#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "backend/tap/tap.h"
#include "lib/virtio_net_defs.h"

#define TAP_HDR_LEN sizeof(struct virtio_net_hdr_v1)
#define TAP_ETH_HLEN 14
/* Largest GSO packet the kernel hands us, with our header, an Ethernet header and a VLAN tag. */
#define TAP_BUF_SIZE (65536 + TAP_HDR_LEN + TAP_ETH_HLEN + 4)
#define TAP_TX_IOV 1025 /* a header + a chain's iovecs (VQ_MAX_CHAIN) */
/* Packets read per EPOLLIN event: other fds get their turn, level-triggered epoll calls again. */
#define TAP_RX_BATCH 64
#define TAP_MAGIC 0x74617031u /* "tap1": catches a switch handle passed to the tap */

struct tap_backend;

/*
 * One queue of the tap: its fd and everything its I/O touches. A queue pair owns its queue (its
 * RX reads and TX writes use nothing another queue writes), so queue pairs may run on
 * different threads. The struct vnet_backend handles the tap hands out point at a queue (queue
 * 0's is the tap's own handle).
 */
struct tap_queue {
	uint32_t magic;
	unsigned index;
	int fd;
	struct tap_backend *tap;
	uint32_t events;	 /* what the owner has the fd registered for now */
	bool tx_blocked;	 /* a transmit got EAGAIN: EPOLLOUT is on */
	bool failed;		 /* the interface is gone: no more I/O (tap_fail() sets every queue's) */
	bool down;		 /* the last transmit found the interface down (logged once) */
	bool rx_nobufs;		 /* the guest has no RX buffers: leave packets in the kernel */
	bool detached;		 /* IFF_DETACH_QUEUE'd (its pair unused): not in the owner's epoll */
	size_t rx_pending;	 /* length of the packet waiting in rx_buf for guest buffers */
	struct tap_queue_stats stats; /* stat_add() by the queue's thread */
	struct iovec tx_iov[TAP_TX_IOV]; /* header, then the frame's pieces in guest memory */
	uint8_t rx_buf[TAP_BUF_SIZE];
};

/* The tap: its queues (q[0] first: the struct vnet_backend handed out is &q[0]) and owner. */
struct tap_backend {
	struct tap_queue q0;
	char name[IFNAMSIZ];
	unsigned nq;
	struct tap_queue *q[TAP_MAX_QUEUES]; /* q[0] == &q0; the others allocated */
	struct vnet_dev *dev;
	const struct tap_owner_ops *owner;
	void *owner_ctx;
	bool failed_told; /* the owner's failed() was called */
	/* A trunk (tap_backend_set_trunk()): tagged frames read go to trunk->rx(), not the guest. */
	const struct tap_trunk_ops *trunk;
	void *trunk_ctx;
	uint8_t tag_head[16]; /* tap_backend_send_tagged(): the MACs and the 802.1Q tag */
};

static inline struct tap_queue *tq_of(struct vnet_backend *be)
{
	struct tap_queue *tq = (struct tap_queue *)be;

	assert(tq && tq->magic == TAP_MAGIC);
	return tq;
}

static inline const struct tap_queue *tq_of_const(const struct vnet_backend *be)
{
	const struct tap_queue *tq = (const struct tap_queue *)be;

	assert(tq && tq->magic == TAP_MAGIC);
	return tq;
}

/* A multi-queue tap's ops table (tap.c): tap_backend_ops with per-queue TX counters. */
extern const struct vnet_backend_ops tap_mq_backend_ops;

#endif
