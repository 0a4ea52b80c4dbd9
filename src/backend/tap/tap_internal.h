/* SPDX-License-Identifier: MIT */
/* tap_internal.h - the tap backend's private types and calls between its files (tap*.c). */
#ifndef VNETD_TAP_INTERNAL_H
#define VNETD_TAP_INTERNAL_H

#include <assert.h>
#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
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
	/*
	 * The guest's receive offloads (set_offloads()). A trunk's tap takes every offload for
	 * its VLANs (the switch does what a receiver cannot); its untagged frames for the guest
	 * that ask for one the guest lacks are made in software (tap_trunk.c), in `soft`,
	 * allocated at first use.
	 */
	uint64_t guest_offloads;
	struct pkt_soft_buf *soft;
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

/* What a tap offers the guest: checksum and segmentation offloads both ways (tap_offload.c). */
#define TAP_OFFLOADS                                                                              \
	(BIT_ULL(VIRTIO_NET_F_CSUM) | BIT_ULL(VIRTIO_NET_F_GUEST_CSUM) |                           \
	 BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) |                     \
	 BIT_ULL(VIRTIO_NET_F_GUEST_ECN) | BIT_ULL(VIRTIO_NET_F_HOST_TSO4) |                       \
	 BIT_ULL(VIRTIO_NET_F_HOST_TSO6) | BIT_ULL(VIRTIO_NET_F_HOST_ECN))

/*
 * tx_iov = the header, then the frame's pieces (frame_len bytes at byte off of iov); 0 if they
 * do not fit. Always inlined: a guest's transmit (tap_tx.c) pays no call for it;
 * tap_backend_send_tagged() (tap_trunk.c) uses it too.
 */
static inline __attribute__((always_inline)) unsigned
tap_tx_iov(struct tap_queue *tq, const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
	   unsigned iovcnt, size_t off, size_t frame_len)
{
	unsigned n = 0;

	tq->tx_iov[n].iov_base = (void *)(uintptr_t)hdr;
	tq->tx_iov[n++].iov_len = sizeof(*hdr);
	for (unsigned i = 0; i < iovcnt && frame_len; i++) {
		size_t take;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		if (n == TAP_TX_IOV)
			return 0;
		take = iov[i].iov_len - off < frame_len ? iov[i].iov_len - off : frame_len;
		tq->tx_iov[n].iov_base = (uint8_t *)iov[i].iov_base + off;
		tq->tx_iov[n++].iov_len = take;
		frame_len -= take;
		off = 0;
	}
	return n;
}

/* tap_events.c: the queue's epoll interest; the interface is gone (every queue stops). */
void tap_update_events(struct tap_queue *tq);
void tap_fail(struct tap_queue *tq, const char *why);

/* tap_rx.c: reading the tap into the guest; the device's rx_resume and reset. */
ssize_t tap_read(struct tap_queue *tq, const struct iovec *iov, int iovcnt);
int tap_deliver(struct tap_queue *tq, size_t len);
void tap_rx(struct tap_queue *tq);
bool tap_rx_resume(struct vnet_backend *be);
void tap_reset(struct vnet_backend *be);

/* tap_offload.c: the tap's TUNSETOFFLOAD from the guest's offloads (all of them on a trunk). */
void tap_apply_offloads(struct tap_queue *tq);

/* tap_trunk.c: free a trunk's buffer of frames made in software. */
void tap_soft_free(struct tap_backend *t);

/* tap_trunk.c: a trunk's reads (tagged frames to the trunk's owner). */
void tap_rx_trunk(struct tap_queue *tq);

/* tap_tx.c: the ops tables' transmits, single- and multi-queue. */
int tap_transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
		 const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len);
int tap_transmit_mq(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
		    const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len);
unsigned tap_transmit_burst(struct vnet_backend *be, const struct vnet_frame *f,
			    const struct virtio_net_hdr_v1 *hdr, unsigned n, uint32_t room,
			    uint32_t *extra, bool *full);
unsigned tap_transmit_burst_mq(struct vnet_backend *be, const struct vnet_frame *f,
			       const struct virtio_net_hdr_v1 *hdr, unsigned n, uint32_t room,
			       uint32_t *extra, bool *full);

/* tap_offload.c: the guest's receive offloads to the interface. */
void tap_set_offloads(struct vnet_backend *be, uint64_t guest_features);

/* tap_queues.c: queues detached from the interface or attached again as the driver's pairs. */
void tap_set_pairs(struct vnet_backend *be, unsigned pairs);

/* The ops tables (tap.c); a multi-queue tap's counts transmits per queue. */
extern const struct vnet_backend_ops tap_mq_backend_ops;

#endif
