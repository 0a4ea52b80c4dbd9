/* SPDX-License-Identifier: MIT */
/* net_rx_internal.h - the receive path's per-packet steps, inline for net_rx*.c (private to dev/). */
#ifndef VNETD_NET_RX_INTERNAL_H
#define VNETD_NET_RX_INTERNAL_H

/*
 * What the copy path (net_rx.c), the burst path (net_rx_burst.c) and the direct path
 * (net_rx_direct.c) share per packet. Static inline here, not calls between those files: each
 * is inlined into its hot callers as it was when they were one file. The out-of-line steps
 * are defined in net_rx.c (several buffers), net_rx_ring.c (publishing, waiting for buffers),
 * net_rx_direct.c (giving reserved buffers back) and net_rx_rss.c (the RSS pick).
 */

#include <endian.h>
#include <string.h>

#include "dev/net_rate.h"
#include "dev/net_rx.h"
#include "dev/vnet_dev_core.h"
#include "dev/net_rate_internal.h"

/* From net_rx.c and net_rx_direct.c, for the device model's own files. */
/* net_rx_cache_release() - give reserved RX buffers back to the ring (queue stop, fallback). */
void net_rx_cache_release(struct vnet_dev *dev, struct vnet_queue *q);

/* net_rx_flush_queue() - publish one RX queue's pushed packets and decide its notification. */
void net_rx_flush_queue(struct vnet_dev *dev, struct vnet_queue *q);

/*
 * net_rx_place() - copy one packet (our header, then the frame at byte off of iov) into as
 * many chains as it needs: 1 placed, 0 no buffers (nothing consumed), -1 dropped (net_rx.c).
 */
int net_rx_place(struct vnet_dev *dev, struct vnet_queue *q, struct virtio_net_hdr_v1_hash *hdr,
		 const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len);

/*
 * net_rx_wait() - no buffers: ask for a kick; true if the driver added some since avail index
 * `seen` (try again), false to wait (net_rx_ring.c).
 */
bool net_rx_wait(struct vnet_queue *q, uint16_t seen);

/*
 * net_rx_rss() - RSS or hash reporting is on: hash the frame, fill the header's hash fields,
 * return the pair RSS (or, not steering, the flow hash) picks (net_rx_rss.c).
 */
unsigned net_rx_rss(struct vnet_dev *dev, const struct iovec *iov, unsigned iovcnt, size_t off,
		    size_t frame_len);

static inline bool rx_mac_in(const uint8_t (*table)[6], unsigned n, const uint8_t *mac)
{
	for (unsigned i = 0; i < n; i++)
		if (!memcmp(table[i], mac, 6))
			return true;
	return false;
}

/* The CTRL_RX / CTRL_MAC receive filter (as QEMU's virtio-net applies it). */
static inline bool rx_filter_accepts(const struct vnet_dev *dev, const uint8_t *dst)
{
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	const struct vnet_rx_filter *f = &dev->filter;

	if (f->promisc)
		return true;
	if (!memcmp(dst, bcast, 6))
		return !f->nobcast;
	if (dst[0] & 1) {
		if (f->nomulti)
			return false;
		return f->allmulti || f->mc_overflow || rx_mac_in(f->mc, f->n_mc, dst);
	}
	if (f->nouni)
		return false;
	return f->alluni || f->uc_overflow || !memcmp(dst, dev->mac, 6) ||
	       rx_mac_in(f->uc, f->n_uc, dst);
}

/*
 * The backend's header as the guest may see it: without GUEST_CSUM the spec wants flags 0 (tun
 * sets DATA_VALID whenever the host stack verified a checksum). num_buffers is set on placing.
 */
static inline void rx_hdr_flags(const struct vnet_dev *dev, struct virtio_net_hdr_v1 *hdr)
{
	if (!(dev->guest_offloads & BIT_ULL(VIRTIO_NET_F_GUEST_CSUM)))
		hdr->flags = 0;
}

/* A packet of `bytes` frame bytes was pushed on q: count it, have the owner publish it. */
static inline void rx_delivered(struct vnet_dev *dev, struct vnet_queue *q, size_t bytes)
{
	stat_inc(&q->stats.packets);
	stat_add(&q->stats.bytes, bytes);
	if (!q->rx_unflushed++ && !dev->rx_dirty && dev->env->rx_dirty) {
		dev->rx_dirty = true;
		dev->env->rx_dirty(dev->env_ctx);
	}
	/* A sender's whole budget may land here: publish every batch, so the guest can recycle
	 * its buffers while the run goes on instead of running dry (then packets queue or drop). */
	if (q->rx_unflushed >= VNET_RX_PUBLISH_BATCH)
		net_rx_flush_queue(dev, q);
}

/*
 * net_rx_place() for the common case, inline: the next chain is one buffer holding the packet.
 * `head` (NULL: none; else the frame is iov[0] alone, at off 0): VNET_FRAME_HEAD bytes the guest
 * gets in place of the frame's first ones, a copy the sender's checks were made on.
 */
static inline __attribute__((always_inline)) int
rx_place_one(struct vnet_dev *dev, struct vnet_queue *q, struct virtio_net_hdr_v1_hash *hdr,
	     const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len,
	     const uint8_t *head, const unsigned kind)
{
	struct vq_chain *c = q->chain;
	size_t total = dev->hdr_len + frame_len;
	int r = vq_pop_as(&q->vq, c, kind, true);
	uint8_t *buf;

	if (r <= 0)
		return r;
	if (c->nwrite != 1 || c->iov[c->nread].iov_len < total) {
		vq_unpop(&q->vq, 1);
		if (head) {
			const struct vnet_frame f = {iov[0].iov_base, (uint32_t)frame_len};
			struct iovec two[2];

			return net_rx_place(dev, q, hdr, two, vnet_frame_iov(&f, head, two), 0,
					    frame_len);
		}
		return net_rx_place(dev, q, hdr, iov, iovcnt, off, frame_len);
	}
	buf = c->iov[c->nread].iov_base;
	hdr->hdr.num_buffers = htole16(1); /* 1 without MRG_RXBUF too (and then not sent) */
	if (dev->hdr_len == sizeof(hdr->hdr))
		memcpy(buf, hdr, sizeof(hdr->hdr)); /* a constant size: two stores */
	else
		memcpy(buf, hdr, dev->hdr_len);
	iov_copy_iov(&c->iov[c->nread], 1, dev->hdr_len, iov, iovcnt, off, frame_len);
	if (head) /* over what was copied: the sender may have rewritten it since its checks */
		memcpy(buf + dev->hdr_len, head, VNET_FRAME_HEAD);
	vq_push(&q->vq, c->head, (uint32_t)total);
	return 1;
}

/*
 * The receive path: into queue pair `forced` (>= 0: a constant of the one caller that picked it,
 * vnet_dev_receive_frame_on()), else the pair the flow hash or RSS picks. `head` (NULL: none;
 * else only with one active pair and no RSS, the frame iov[0] alone at off 0): the checked copy
 * of its first VNET_FRAME_HEAD bytes, which the filter reads and the guest gets in their place.
 */
static inline __attribute__((always_inline)) int
receive_frame(struct vnet_dev *dev, const struct virtio_net_hdr_v1 *hdr_in, const struct iovec *iov,
	      unsigned iovcnt, size_t off, size_t frame_len, const uint8_t *head, const int forced)
{
	const uint8_t *eth = dev->rx_eth;
	struct virtio_net_hdr_v1_hash *hdr = &dev->rx_hdr;
	struct vnet_queue *q;
	unsigned pair;
	size_t need = dev->active_pairs > 1 ? sizeof(dev->rx_eth) : 14, got = need;
	int r;

	/* Buffers reserved for the direct path come first: give them back (they are the suffix). */
	if (dev->rx_cache.n)
		net_rx_cache_release(dev, &dev->queues[0]);
	if (frame_len < 14 || frame_len > VNET_MAX_FRAME) {
		stat_inc(&dev->queues[0].stats.dropped);
		return 1;
	}
	if (hdr_in) {
		hdr->hdr = *hdr_in;
		rx_hdr_flags(dev, &hdr->hdr);
	} else {
		memset(&hdr->hdr, 0, sizeof(hdr->hdr));
	}
	if (head) {
		eth = head; /* one active pair: need is 14, the checked copy's length */
		got = VNET_FRAME_HEAD;
	} else {
		/* Look at the Ethernet header in place when one segment holds it (nearly always). */
		while (iovcnt && off >= iov[0].iov_len) {
			off -= iov[0].iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt && need <= iov[0].iov_len - off)
			eth = (const uint8_t *)iov[0].iov_base + off;
		else
			got = iov_copy_from(iov, iovcnt, off, dev->rx_eth, need);
	}
	if (head) {
		pair = 0;
	} else if (forced >= 0) {
		pair = (unsigned)forced;
		if (__builtin_expect(dev->rss.report, 0))
			(void)net_rx_rss(dev, iov, iovcnt, off, frame_len); /* the header's hash */
	} else if (__builtin_expect(dev->rss_on, 0)) {
		pair = net_rx_rss(dev, iov, iovcnt, off, frame_len);
	} else {
		pair = rx_pick_pair(dev, eth, got);
	}
	q = &dev->queues[2 * pair];
	if (!dev_queue_usable(q) || !dev->be) {
		stat_inc(&q->stats.dropped);
		return 1;
	}
	if (!rx_filter_accepts(dev, eth))
		return 1;
	if (__builtin_expect(dev->rx_rate.on, 0) && !net_rate_rx_admit(dev, q, frame_len))
		return 1; /* over the port's RX rate: dropped, counted */

	do {
		r = rx_place_one(dev, q, hdr, iov, iovcnt, off, frame_len, head, VQ_FAST_NONE);
		if (r == 0 && !net_rx_wait(q, vq_avail_seen(&q->vq)))
			break;
	} while (r == 0);
	if (r == 0) {
		if (dev->rx_rate.on)
			rate_bucket_give(&dev->rx_rate, frame_len); /* it comes again */
		return 0;
	}
	if (r < 0) {
		stat_inc(&q->stats.dropped);
		return 1;
	}
	rx_delivered(dev, q, frame_len);
	return 1;
}

#endif
