/* SPDX-License-Identifier: MIT */
/* xdp_internal.h - what xdp.c and xdp_open.c share: an AF_XDP port's state and its sizes. */
#ifndef VNETD_XDP_INTERNAL_H
#define VNETD_XDP_INTERNAL_H

/*
 * Only the AF_XDP backend's own files include this: xdp.c (the I/O on the port's worker) and
 * xdp_open.c (set-up and teardown on the main thread). To the rest of vnetd a port is the
 * opaque handle of xdp.h.
 */

#include <assert.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <xdp/xsk.h>

#include "dev/dev.h"
#include "backend/xdp/xdp.h"
#include "backend/xdp/xdp_frames.h"

#define XDP_FRAME 4096u	     /* UMEM frame: a page, the largest copy mode takes everywhere */
#define XDP_RX_PER_Q 512u    /* RX frames (and FILL / RX ring entries) of each socket */
#define XDP_TX_FRAMES 512u   /* TX frames of the port (TX and COMPLETION ring entries) */
#define XDP_RX_BATCH 64u     /* descriptors per EPOLLIN event, like the tap's reads */
#define XDP_TX_KICK 32u	     /* copy mode sends 32 descriptors per sendto() by default */
#define XDP_TX_KICK_MAX 256u /* with XDP_MAX_TX_SKB_BUDGET (Linux >= 6.17): one guest budget */
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9 /* uapi linux/if_xdp.h of Linux 6.17 */
#endif
#define XDP_KICK_TRIES 16u   /* sendto()s one flush makes while the kernel says EAGAIN */
#define XDP_BIND_TRIES 10u   /* a queue closed < 1 s ago is EBUSY: 10 tries, 200 ms apart */
#define XDP_ETH_HLEN 14u
#define XDP_MAGIC 0x78647031u /* "xdp1" */

/* One AF_XDP socket: NIC queue (queue + index), its RX ring and its own FILL/COMPLETION pair. */
struct xdp_sock_q {
	struct xsk_socket *xsk;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	int fd;
	uint32_t events;    /* what the owner has the fd registered for now */
	uint64_t rx_frames; /* frames taken from the RX ring (logged at close) */
};

/* The private side of a struct vnet_backend handed out by xdp_backend_open(). */
struct xdp_backend {
	uint32_t magic;
	char name[IFNAMSIZ];
	int ifindex;
	unsigned queue; /* the first NIC queue */
	unsigned nq;	/* sockets: NIC queues queue .. queue + nq - 1 */
	struct vnet_dev *dev;
	const struct xdp_owner_ops *owner;
	void *owner_ctx;
	int map_fd, prog_fd, link_fd; /* the XSKMAP, the program, its link (closing detaches) */
	uint8_t *area;		      /* the UMEM */
	struct xdp_umem_layout lay;
	struct xdp_frames frames; /* free TX frames */
	struct xsk_umem *umem;
	struct xsk_ring_prod tx; /* on socket 0: guest TX goes out on the first queue */
	uint32_t tx_pending;	 /* descriptors reserved and filled, not yet submitted */
	uint32_t tx_kick;	 /* kick at this many pending: what one sendto() sends */
	bool zero_copy;
	bool tx_blocked; /* a transmit got EAGAIN: EPOLLOUT is on for socket 0 */
	bool rx_nobufs;	 /* the guest has no RX buffers: EPOLLIN off, descriptors wait */
	bool flush_asked;
	bool down; /* the last kick found the interface down (logged once) */
	bool failed;
	uint64_t bad_descs; /* descriptors the kernel handed back that are not ours (ignored) */
	uint64_t tx_frames; /* guest frames put on the TX ring (logged at close) */
	/* Guest frames that ask for offloads (xdp_offload.c): the scratch they are made in
	 * (allocated at first use), and counters (stat_atomic.h: stats read them). */
	struct pkt_soft_buf *soft;
	uint64_t bad_hdr;    /* dropped: an offload header the frame contradicts, or too big */
	uint64_t soft_segs;  /* segments made in software and sent */
	uint64_t soft_csums; /* frames whose checksum was completed in software and sent */
	struct xdp_sock_q q[XDP_PORT_MAX_QUEUES];
	uint64_t recycle[XDP_RX_BATCH];
};

struct pkt_seg;
struct virtio_net_hdr_v1;

/* xdp_soft_make() - a guest frame that asks for an offload, made in software: count, *segs. */
unsigned xdp_soft_make(struct xdp_backend *x, const struct virtio_net_hdr_v1 *hdr,
		       const struct iovec *iov, unsigned iovcnt, size_t off, size_t len,
		       const struct pkt_seg **segs);

/* xdp_soft_free() - free the port's scratch of frames made in software. */
void xdp_soft_free(struct xdp_backend *x);

static inline struct xdp_backend *xdp_of(struct vnet_backend *be)
{
	struct xdp_backend *x = (struct xdp_backend *)be;

	assert(x && x->magic == XDP_MAGIC);
	return x;
}

static inline const struct xdp_backend *xdp_of_const(const struct vnet_backend *be)
{
	const struct xdp_backend *x = (const struct xdp_backend *)be;

	assert(x && x->magic == XDP_MAGIC);
	return x;
}

#endif /* VNETD_XDP_INTERNAL_H */
